// Runs independent jobs of a test on every CPU it may use: on a machine of
// few cores the differential and batch tests are otherwise the longest of
// `make check` by far, alone on one core while the rest is done.
#ifndef UBERMATCH_TEST_PARALLEL_H
#define UBERMATCH_TEST_PARALLEL_H

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include "test/engine/test_options.h"

namespace ubermatch::test {

// job(0 .. n-1) on --jobs threads (default: one per CPU this process may
// use), results in order. Each job must own what it touches (its engines,
// model and workload). Catch2's assertions are not thread-safe: the caller
// checks the results; a job's exception is rethrown here, the first by index.
template <class Result, class Job> std::vector<Result> run_all(size_t n, Job job) {
    std::vector<Result> out(n);
    std::vector<std::exception_ptr> failed(n);
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t i; (i = next.fetch_add(1)) < n;) {
            try {
                out[i] = job(i);
            } catch (...) {
                failed[i] = std::current_exception();
            }
        }
    };
    unsigned threads = options().jobs;
    if (threads == 0) {
        cpu_set_t cpus;
        threads = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? static_cast<unsigned>(CPU_COUNT(&cpus)) : 1;
    }
    std::vector<std::thread> pool;
    for (size_t t = 1; t < std::min<size_t>(threads, n); ++t) {
        pool.emplace_back(worker);
    }
    worker();
    for (std::thread &t : pool) {
        t.join();
    }
    for (const std::exception_ptr &e : failed) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
    return out;
}

} // namespace ubermatch::test

#endif

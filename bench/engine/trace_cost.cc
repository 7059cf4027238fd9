// What recording a matching trace costs per message, the engine alone (issue
// 17's goal at depth 0: <= 5% of the MPI message rate, ~170-200 ns a message
// here, so <= ~10 ns a message). A message is two engine calls at depth 0,
// as queue_bench's shapes make them:
//
//   posted      the receive is posted, then its message arrives (matches it)
//   unexpected  the message arrives, then its receive is posted (takes it)
//
// with request and message addresses recycled from small pools, as the PML
// recycles its requests and descriptors. Runs the trace off and on in
// alternation (--rounds R, each --ms long) and prints per shape the median ns
// per message of each and their difference; --clock prints what one read of
// each clock costs; --devnull writes the trace to /dev/null (a symbolic link
// in its place), leaving out the kernel's copy into the file: the append alone;
// --buffered writes the file through the page cache (pml_ubermatch_trace_direct
// false), --auto as pml_ubermatch_trace_direct auto, instead of with direct I/O.
//
//   trace_cost [--backend B] [--rounds R] [--ms T] [--clock] [--devnull] [--buffered | --auto]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "matching/registry.h"
#include "matching/trace.h"

using namespace ubermatch;

namespace {

constexpr uintptr_t kPool = 64; // addresses of requests and of messages in use in turn

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

// This thread's CPU time (user and system: the trace's writes count): on a
// shared machine, time spent descheduled would otherwise count as ours.
double cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ns per message of one shape for `ms`, in a fresh engine (recorded when the
// trace is on: the engine's file is written when it goes, outside the timing).
double measure(const std::string &backend, bool unexpected, double ms) {
    std::unique_ptr<Engine> e = trace::record(make_engine(backend, 2, default_params()), 0, 0);
    const um_hint_t hint{};
    um_match_t m{};
    uint64_t n = 0;
    const double start = cpu_s();
    double elapsed = 0;
    while (elapsed < ms * 1e-3) {
        for (int i = 0; i < 4096; ++i, ++n) {
            void *const req = h(0x10000 + 64 * (n % kPool));
            void *const msg = h(0x90000 + 64 * (n % kPool));
            const int32_t tag = static_cast<int32_t>(n & 0xff);
            if (unexpected) {
                e->arrive(1, tag, hint, msg, &m);
                e->post_recv(1, tag, hint, req, &m);
            } else {
                e->post_recv(1, tag, hint, req, &m);
                e->arrive(1, tag, hint, msg, &m);
            }
            if (m.handle == nullptr) {
                throw std::runtime_error("trace_cost: a message did not match");
            }
        }
        elapsed = cpu_s() - start;
    }
    return elapsed * 1e9 / static_cast<double>(n);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t k = v.size();
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

template <class F> double ns_per_call(F &&f) {
    constexpr int kCalls = 1 << 22;
    uint64_t sink = 0;
    const double start = cpu_s();
    for (int i = 0; i < kCalls; ++i) {
        sink += f();
    }
    const double s = cpu_s() - start;
    asm volatile("" : : "r"(sink));
    return s * 1e9 / kCalls;
}

void clocks() {
    const double mono = ns_per_call([] {
        timespec ts{};
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<uint64_t>(ts.tv_nsec);
    });
    std::printf("clock_gettime(CLOCK_MONOTONIC) %.1f ns a read\n", mono);
#if defined(__x86_64__)
    std::printf("rdtsc %.1f ns a read\n", ns_per_call([] { return __rdtsc(); }));
#endif
}

[[noreturn]] void usage(const char *why) {
    std::fprintf(stderr, "trace_cost: %s\nusage: trace_cost [--backend B] [--rounds R] [--ms T] [--clock] [--devnull] [--buffered | --auto]\n", why);
    std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
    std::string backend = "auto";
    int rounds = 9;
    double ms = 200;
    bool clock = false, devnull = false;
    trace::WriteMode mode = trace::WriteMode::direct;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--clock") {
            clock = true;
        } else if (a == "--devnull") {
            devnull = true;
        } else if (a == "--buffered") {
            mode = trace::WriteMode::buffered;
        } else if (a == "--auto") {
            mode = trace::WriteMode::automatic;
        } else if (i + 1 < argc && a == "--backend") {
            backend = argv[++i];
        } else if (i + 1 < argc && a == "--rounds") {
            rounds = std::atoi(argv[++i]);
        } else if (i + 1 < argc && a == "--ms") {
            ms = std::atof(argv[++i]);
        } else {
            usage(("unknown argument '" + a + "' (valid: --backend B, --rounds R, --ms T, --clock, --devnull, --buffered, --auto)").c_str());
        }
    }
    if (rounds < 1 || !(ms > 0)) {
        usage("--rounds and --ms must be positive");
    }
    if (clock) {
        clocks();
    }
    char tmpl[] = "/tmp/um-trace-cost-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
        usage("cannot create a temporary directory");
    }
    if (devnull && ::symlink("/dev/null", (std::string(tmpl) + "/rank-0.umt").c_str()) != 0) {
        usage("cannot link the trace file to /dev/null");
    }
    try {
        for (bool unexpected : {false, true}) {
            std::vector<double> off, on;
            for (int r = 0; r < rounds; ++r) { // off, on, on, off, ...: a change of load hits both
                for (bool tracing : {r % 2 == 0, r % 2 != 0}) {
                    std::string err;
                    trace::start(tracing ? tmpl : "", false, err, mode);
                    (tracing ? on : off).push_back(measure(backend, unexpected, ms));
                }
            }
            std::string err;
            trace::start("", false, err);
            const double a = median(off), b = median(on);
            std::printf("%-10s %s: off %.1f ns/msg, on %.1f ns/msg, recording %+.1f ns/msg (median of %d)\n",
                        unexpected ? "unexpected" : "posted", backend.c_str(), a, b, b - a, rounds);
        }
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "trace_cost: %s\n", ex.what());
        return 1;
    }
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
    return 0;
}

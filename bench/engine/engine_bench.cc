// The cost of one matching operation at a given queue depth, for every backend.
//
// arrive/<backend>/<sources>/<depth>: the posted queue holds depth-1 receives
// that do not match and, last, the one that does; each iteration matches it
// and posts it again (into an empty unexpected queue: O(1) for every backend).
// post_recv/...: the same with the unexpected queue and a receive.
// sources: 1 = every element from source 0 (tags differ); 1024 = elements
// spread round-robin over 1024 sources.
#include <benchmark/benchmark.h>

#include <stdexcept>

#include "matching/registry.h"

using namespace ubermatch;

namespace {

constexpr int32_t kCommSize = 1024;

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

// The key of filler element i: tags from 1 up, tag 0 is the matching element's.
void filler_key(int64_t sources, int64_t i, int32_t &source, int32_t &tag) {
    source = static_cast<int32_t>(i % sources);
    tag = static_cast<int32_t>(1 + i / sources); // tag 0 is kept for the match
}

void check(int rc) {
    if (rc != UM_OK) {
        throw std::runtime_error(um_status_string(rc));
    }
}

void BM_arrive(benchmark::State &state, const char *backend) {
    const int64_t sources = state.range(0);
    const int64_t depth = state.range(1);
    auto e = make_engine(backend, kCommSize, default_params());
    const um_hint_t hint{};
    um_match_t m{};
    int32_t src = 0;
    int32_t tag = 0;
    for (int64_t i = 0; i < depth - 1; ++i) {
        filler_key(sources, i, src, tag);
        check(e->post_recv(src, tag, hint, h(uintptr_t(i) + 1), &m));
    }
    const int32_t match_src = static_cast<int32_t>((depth - 1) % sources);
    void *const req = h(1u << 30);
    check(e->post_recv(match_src, 0, hint, req, &m));
    for (auto _ : state) {
        e->arrive(match_src, 0, hint, h(2), &m);
        benchmark::DoNotOptimize(m.handle);
        e->post_recv(match_src, 0, hint, req, &m);
    }
    e->arrive(match_src, 0, hint, h(2), &m);
    if (m.handle != req) {
        state.SkipWithError("the last posted receive did not match");
    }
    state.counters["inspected"] = m.inspected;
    state.counters["bytes"] = static_cast<double>(e->stats().bytes);
}

void BM_post_recv(benchmark::State &state, const char *backend) {
    const int64_t sources = state.range(0);
    const int64_t depth = state.range(1);
    auto e = make_engine(backend, kCommSize, default_params());
    const um_hint_t hint{};
    um_match_t m{};
    int32_t src = 0;
    int32_t tag = 0;
    for (int64_t i = 0; i < depth - 1; ++i) {
        filler_key(sources, i, src, tag);
        check(e->arrive(src, tag, hint, h(uintptr_t(i) + 1), &m));
    }
    const int32_t match_src = static_cast<int32_t>((depth - 1) % sources);
    void *const msg = h(1u << 30);
    check(e->arrive(match_src, 0, hint, msg, &m));
    for (auto _ : state) {
        e->post_recv(match_src, 0, hint, h(2), &m);
        benchmark::DoNotOptimize(m.handle);
        e->arrive(match_src, 0, hint, msg, &m);
    }
    e->post_recv(match_src, 0, hint, h(2), &m);
    if (m.handle != msg) {
        state.SkipWithError("the last arrived message did not match");
    }
    state.counters["inspected"] = m.inspected;
    state.counters["bytes"] = static_cast<double>(e->stats().bytes);
}

void depths(benchmark::internal::Benchmark *b) {
    for (int64_t sources : {1, 1024}) {
        for (int64_t depth : {1, 16, 128, 1024, 8192}) {
            b->Args({sources, depth});
        }
    }
    b->ArgNames({"sources", "depth"});
}

} // namespace

int main(int argc, char **argv) {
    for (const Backend &b : backends()) {
        benchmark::RegisterBenchmark((std::string("arrive/") + b.name).c_str(), BM_arrive, b.name)
            ->Apply(depths);
        benchmark::RegisterBenchmark((std::string("post_recv/") + b.name).c_str(), BM_post_recv, b.name)
            ->Apply(depths);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

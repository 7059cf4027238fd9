// The cost of one matching operation at a given queue depth, for every backend.
//
// arrive/<backend>/<sources>/<depth>: the posted queue holds depth-1 receives
// that do not match and, last, the one that does; each iteration matches it
// and posts it again (into an empty unexpected queue: O(1) for every backend).
// post_recv/...: the same with the unexpected queue and a receive.
// sources: 1 = every element from source 0 (tags differ); 1024 = elements
// spread round-robin over 1024 sources.
// random/<backend>/shape/depth (issue 14): see BM_random; batch/...: BM_random_batch.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include <stdexcept>
#include <string>
#include <vector>

#include "matching/overtake.h"
#include "matching/registry.h"
#include "matching/simd/dispatch.h"

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

// A backend, a SIMD backend with one kernel ("vector@avx2"), or the
// overtaking engine with one of its tables ("overtake@two-level").
struct Variant {
    std::string name;
    std::string backend;
    um_params_t params;
    const char *table = nullptr;
};

// No matching at all: a receive is "queued", a message "takes" one. Its
// random/null/unexpected:0 is the floor that the engine interface (the
// checks, the statistics, a virtual call) and the benchmark's loop set.
class NullEngine final : public Engine {
public:
    NullEngine() : Engine(kCommSize) {}
    const char *name() const override { return "null"; }

protected:
    Found do_post_recv(int32_t, int32_t, const um_hint_t &, void *) override { return {nullptr, 1}; }
    Found do_arrive(int32_t, int32_t, const um_hint_t &, void *m) override { return {m, 1}; }
    Found do_probe(int32_t, int32_t, const um_hint_t &, bool) override { return {}; }
    bool do_cancel(int32_t, int32_t, void *) override { return false; }
    void visit(const Visitor &) const override {}
    uint64_t queues_allocated() const override { return 0; }
    uint64_t bytes_used() const override { return 0; }
};

std::unique_ptr<Engine> make(const Variant &v) {
    if (v.backend == "null") {
        return std::make_unique<NullEngine>();
    }
    return v.table != nullptr ? make_overtake_engine(v.table, kCommSize, false, v.backend.c_str())
                              : make_engine(v.backend, kCommSize, v.params);
}

// One side's call: a receive posted (kPost) or a message arrived.
template <bool kPost>
int put(Engine &e, int32_t source, int32_t tag, void *handle, um_match_t *m) {
    static const um_hint_t hint{};
    return kPost ? e.post_recv(source, tag, hint, handle, m) : e.arrive(source, tag, hint, handle, m);
}

// arrive/<backend> (kPostedQueue): a message matched behind depth - 1 posted
// receives of `sources` sources, the receive then posted again;
// post_recv/<backend>: the mirror, a receive behind unexpected messages.
template <bool kPostedQueue>
void BM_match(benchmark::State &state, const Variant &v) {
    const int64_t sources = state.range(0);
    const int64_t depth = state.range(1);
    auto e = make(v);
    um_match_t m{};
    int32_t src = 0;
    int32_t tag = 0;
    for (int64_t i = 0; i < depth - 1; ++i) {
        filler_key(sources, i, src, tag);
        check(put<kPostedQueue>(*e, src, tag, h(uintptr_t(i) + 1), &m));
    }
    const int32_t match_src = static_cast<int32_t>((depth - 1) % sources);
    void *const queued = h(1u << 30);
    check(put<kPostedQueue>(*e, match_src, 0, queued, &m));
    for (auto _ : state) {
        put<!kPostedQueue>(*e, match_src, 0, h(2), &m);
        benchmark::DoNotOptimize(m.handle);
        put<kPostedQueue>(*e, match_src, 0, queued, &m);
    }
    put<!kPostedQueue>(*e, match_src, 0, h(2), &m);
    if (m.handle != queued) {
        state.SkipWithError("the last queued element did not match");
    }
    state.counters["inspected"] = m.inspected;
    state.counters["bytes"] = static_cast<double>(e->stats().bytes);
}

// random/<backend>/shape:S/depth:D: seed 001's hash-table experiment on one
// core. The posted queue (shape 0; shape 1: the unexpected queue) holds D
// elements with random keys (source of 1024, tag of 65536); each iteration a
// message (a receive) for one of them, chosen at random, takes it and an
// element with a fresh random key takes its place: one match, so items/s is
// matches/s. The keys come from tables made before timing.
struct Key {
    int32_t source;
    int32_t tag;
};

struct RandomRun {
    static constexpr size_t kKeys = size_t{1} << 16;
    std::unique_ptr<Engine> e;
    bool unexpected;
    std::vector<Key> fresh, live;
    std::vector<uint32_t> pick; // indices into live; distinct within each block of `block`

    RandomRun(benchmark::State &state, const Variant &v, size_t block)
        : e(make(v)), unexpected(state.range(0) != 0), fresh(kKeys), pick(kKeys) {
        const auto depth = static_cast<uint32_t>(state.range(1));
        std::mt19937 rng(14);
        for (size_t i = 0; i < kKeys; ++i) {
            fresh[i] = {static_cast<int32_t>(rng() % kCommSize), static_cast<int32_t>(rng() % 65536)};
            do {
                pick[i] = static_cast<uint32_t>(rng() % depth);
            } while (std::find(pick.begin() + static_cast<std::ptrdiff_t>(i - i % block),
                               pick.begin() + static_cast<std::ptrdiff_t>(i), pick[i]) !=
                     pick.begin() + static_cast<std::ptrdiff_t>(i));
        }
        live.assign(fresh.begin(), fresh.begin() + depth);
        um_match_t m{};
        for (const Key &k : live) {
            if (queue(k, m) != UM_OK) { // the -nounexp backends queue no message
                state.SkipWithError("the backend refuses to queue this shape's elements");
                e.reset();
                return;
            }
        }
    }
    // queue(): the element that waits; take(): the one that matches it.
    int queue(const Key &k, um_match_t &m) {
        const um_hint_t hint{};
        return unexpected ? e->arrive(k.source, k.tag, hint, h(2), &m) : e->post_recv(k.source, k.tag, hint, h(1), &m);
    }
    int take(const Key &k, um_match_t &m) {
        const um_hint_t hint{};
        return unexpected ? e->post_recv(k.source, k.tag, hint, h(1), &m) : e->arrive(k.source, k.tag, hint, h(2), &m);
    }
    void finish(benchmark::State &state, uint64_t matched, uint64_t items) {
        if (matched != items) {
            state.SkipWithError("an element did not match");
        }
        state.SetItemsProcessed(static_cast<int64_t>(items));
        state.counters["bytes"] = static_cast<double>(e->stats().bytes);
    }
};

void BM_random(benchmark::State &state, const Variant &v) {
    RandomRun run(state, v, 1);
    if (!run.e) {
        return;
    }
    um_match_t m{};
    uint64_t matched = 0;
    size_t i = run.live.size();
    for (auto _ : state) {
        Key &k = run.live[run.pick[i % RandomRun::kKeys]];
        run.take(k, m);
        matched += m.handle != nullptr;
        k = run.fresh[i % RandomRun::kKeys];
        run.queue(k, m);
        ++i;
    }
    run.finish(state, matched, static_cast<uint64_t>(state.iterations()));
}

// batch/<backend>/unexpected:U/depth:D/batch:B: BM_random's workload through
// the batch calls (post_recv_batch, arrive_batch, issue 14): each iteration
// takes B distinct elements chosen at random with one batch and queues B
// fresh keys in their places with another. items/s is matches/s.
void BM_random_batch(benchmark::State &state, const Variant &v) {
    const auto b = static_cast<size_t>(state.range(2));
    if (b > static_cast<size_t>(state.range(1))) {
        state.SkipWithError("a batch takes distinct elements: at most the depth");
        return;
    }
    RandomRun run(state, v, b);
    if (!run.e) {
        return;
    }
    const um_hint_t hint{};
    std::vector<um_elem_t> take(b), queue(b);
    std::vector<um_match_t> out(b);
    void *const take_handle = run.unexpected ? h(1) : h(2);
    void *const queue_handle = run.unexpected ? h(2) : h(1);
    uint64_t matched = 0;
    size_t i = 0;
    for (auto _ : state) {
        for (size_t j = 0; j < b; ++j, ++i) {
            Key &k = run.live[run.pick[i % RandomRun::kKeys]];
            take[j] = {take_handle, k.source, k.tag};
            k = run.fresh[i % RandomRun::kKeys];
            queue[j] = {queue_handle, k.source, k.tag};
        }
        run.unexpected ? run.e->post_recv_batch(take.data(), b, hint, out.data(), nullptr)
                       : run.e->arrive_batch(take.data(), b, hint, out.data(), nullptr);
        for (const um_match_t &m : out) {
            matched += m.handle != nullptr;
        }
        run.unexpected ? run.e->arrive_batch(queue.data(), b, hint, out.data(), nullptr)
                       : run.e->post_recv_batch(queue.data(), b, hint, out.data(), nullptr);
    }
    run.finish(state, matched, static_cast<uint64_t>(state.iterations()) * b);
}

// holes/<backend>/compact:C/live:L: L long-lived receives, each the last of
// a block of 64 whose 63 others were matched (compact:0, compaction off: L
// blocks of 63 holes; compact:1, the default threshold: packed), then the
// arrive of benchmark arrive, matching a receive posted after them all.
void BM_holes(benchmark::State &state, const Variant &v) {
    const bool compact = state.range(0) != 0;
    const int64_t live = state.range(1);
    um_params_t p = v.params;
    p.compact_threshold = compact ? default_params().compact_threshold : 1.0;
    auto e = make_engine(v.backend, kCommSize, p);
    const um_hint_t hint{};
    um_match_t m{};
    for (int64_t i = 0; i < live * 64; ++i) {
        check(e->post_recv(0, static_cast<int32_t>(1 + i), hint, h(uintptr_t(i) + 1), &m));
    }
    for (int64_t i = 0; i < live * 64; ++i) {
        if (i % 64 != 63) {
            check(e->arrive(0, static_cast<int32_t>(1 + i), hint, h(2), &m));
        }
    }
    void *const req = h(1u << 30);
    check(e->post_recv(0, 0, hint, req, &m));
    for (auto _ : state) {
        e->arrive(0, 0, hint, h(2), &m);
        benchmark::DoNotOptimize(m.handle);
        e->post_recv(0, 0, hint, req, &m);
    }
    e->arrive(0, 0, hint, h(2), &m);
    if (m.handle != req) {
        state.SkipWithError("the last posted receive did not match");
    }
    const um_stats_t s = e->stats();
    state.counters["inspected"] = m.inspected;
    state.counters["blocks"] = static_cast<double>(s.blocks);
    state.counters["holes"] = static_cast<double>(s.holes);
    state.counters["bytes"] = static_cast<double>(s.bytes);
}

// memory/<backend>: bytes of an empty engine of 1024 processes, its growth
// per peer (from 1 to 1024 processes, empty), and per queued element (8192
// receives and 8192 messages, spread over 1024 sources, no match).
void BM_memory(benchmark::State &state, const Variant &v) {
    constexpr int64_t kElements = 8192;
    const um_hint_t hint{};
    um_match_t m{};
    auto one = make_engine(v.backend, 1, v.params);
    auto e = make(v);
    const auto empty = static_cast<double>(e->stats().bytes);
    const auto per_peer = (empty - static_cast<double>(one->stats().bytes)) / (kCommSize - 1);
    for (int64_t i = 0; i < kElements; ++i) {
        int32_t src = 0;
        int32_t tag = 0;
        filler_key(kCommSize, i, src, tag);
        check(e->post_recv(src, tag, hint, h(uintptr_t(i) + 1), &m));
        check(e->arrive(src, -tag - 1, hint, h(uintptr_t(i) + 1), &m)); // a collective tag: no match
    }
    const auto full = static_cast<double>(e->stats().bytes);
    for (auto _ : state) {
        benchmark::DoNotOptimize(full);
    }
    state.counters["bytes_empty"] = empty;
    state.counters["bytes_per_peer"] = per_peer;
    state.counters["bytes_per_element"] = (full - empty) / (2 * kElements);
}

void depths(benchmark::internal::Benchmark *b) {
    for (int64_t sources : {1, 1024}) {
        for (int64_t depth : {1, 16, 128, 1024, 8192}) {
            b->Args({sources, depth});
        }
    }
    b->ArgNames({"sources", "depth"});
}

void one_source_depths(benchmark::internal::Benchmark *b) {
    for (int64_t depth : {1, 16, 128, 1024, 8192}) {
        b->Args({1, depth});
    }
    b->ArgNames({"sources", "depth"});
}

void random_shapes(benchmark::internal::Benchmark *b, bool posted_only) {
    for (int64_t unexpected : {0, 1}) {
        if (unexpected != 0 && posted_only) {
            continue;
        }
        for (int64_t depth : {16, 1024, 8192}) {
            b->Args({unexpected, depth});
        }
    }
    b->ArgNames({"unexpected", "depth"});
}

void batch_shapes(benchmark::internal::Benchmark *b, bool posted_only) {
    for (int64_t unexpected : {0, 1}) {
        if (unexpected != 0 && posted_only) {
            continue;
        }
        for (int64_t depth : {16, 1024, 8192}) {
            for (int64_t batch : {8, 32, 128, 1024}) {
                if (batch <= depth) { // a batch takes distinct elements
                    b->Args({unexpected, depth, batch});
                }
            }
        }
    }
    b->ArgNames({"unexpected", "depth", "batch"});
}

void hole_shapes(benchmark::internal::Benchmark *b) {
    for (int64_t compact : {0, 1}) {
        for (int64_t live : {16, 128}) {
            b->Args({compact, live});
        }
    }
    b->ArgNames({"compact", "live"});
}

bool is_simd(const char *backend) {
    return make_engine(backend, 1, default_params())->stats().kernel != UM_KERNEL_NONE;
}

} // namespace

int main(int argc, char **argv) {
    // Every backend as configured by default (the SIMD ones with the kernel
    // "auto" picks), then the SIMD ones with each other kernel this CPU runs.
    static std::vector<Variant> variants; // the benchmarks keep references
    std::vector<Variant> other_kernels;
    const auto kernels = simd::supported(simd::cpu_features());
    for (const Backend &b : backends()) {
        variants.push_back({b.name, b.name, default_params()});
        if (!is_simd(b.name)) {
            continue;
        }
        for (size_t k = 1; k < kernels.size(); ++k) {
            um_params_t p = default_params();
            p.kernel = kernels[k]->name;
            other_kernels.push_back({std::string(b.name) + "@" + p.kernel, b.name, p});
        }
    }
    const size_t defaults = variants.size();
    variants.insert(variants.end(), other_kernels.begin(), other_kernels.end());
    for (const char *table : {overtake::OpenTable::kName, overtake::TwoLevelTable::kName}) {
        variants.push_back({std::string("overtake@") + table, "overtake", default_params(), table});
    }
    variants.push_back({"null", "null", default_params(), ""}); // random only

    for (size_t i = 0; i < variants.size(); ++i) {
        const Variant &v = variants[i];
        random_shapes(benchmark::RegisterBenchmark(("random/" + v.name).c_str(), BM_random, v),
                      v.backend == "null"); // null matches only arrivals
        if (v.table != nullptr || v.backend == "null" || v.backend == "overtake" || v.backend == "auto") {
            batch_shapes(benchmark::RegisterBenchmark(("batch/" + v.name).c_str(), BM_random_batch, v),
                         v.backend == "null");
        }
        if (v.table != nullptr) {
            continue;
        }
        if (i >= defaults) { // the kernels compared on one panel: arrive, one source
            benchmark::RegisterBenchmark(("arrive/" + v.name).c_str(), BM_match<true>, v)
                ->Apply(one_source_depths);
            continue;
        }
        benchmark::RegisterBenchmark(("arrive/" + v.name).c_str(), BM_match<true>, v)->Apply(depths);
        benchmark::RegisterBenchmark(("post_recv/" + v.name).c_str(), BM_match<false>, v)->Apply(depths);
    }
    for (size_t i = 0; i < defaults; ++i) {
        if (is_simd(variants[i].backend.c_str())) {
            benchmark::RegisterBenchmark(("holes/" + variants[i].name).c_str(), BM_holes, variants[i])
                ->Apply(hole_shapes);
        }
    }
    for (size_t i = 0; i < defaults; ++i) {
        benchmark::RegisterBenchmark(("memory/" + variants[i].name).c_str(), BM_memory, variants[i])
            ->Iterations(1);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

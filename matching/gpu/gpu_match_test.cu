// Standalone probe, differential test and benchmark for the GPU matcher (it
// needs no MPI, UCX or test framework: the GPU machine has none).
//   gpu_match_test --probe        is the engine built, is a device usable
//   gpu_match_test --check N      >= N matches per variant against the model
//   gpu_match_test --bench        Table II rows and the queue-length sweep
// Exit 77 with "skipped: no GPU" where no device is usable.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "matching/gpu/gpu_match.cuh"
#include "test/engine/oracle.h"

using namespace ubermatch::gpu;

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));    \
            std::exit(1);                                                                       \
        }                                                                                       \
    } while (0)

namespace {

// A workload: receives and messages, grouped in queues.
struct Load {
    std::vector<Queue> q;
    std::vector<int32_t> rs, rt, ms, mt;
};

enum class Kind { Wild, WildUnexpected, NoWild, Hash };
const char *kind_name(Kind k) {
    switch (k) {
    case Kind::Wild: return "compliant matrix, wildcards";
    case Kind::WildUnexpected: return "compliant matrix, 50% unexpected";
    case Kind::NoWild: return "no wildcards, rank-partitioned";
    default: return "unordered two-level hash";
    }
}

// nq queues of len receives and len messages over `ranks` sources and `tags` tags.
// Wild: 10% ANY_SOURCE, 10% ANY_TAG receives; messages are the receives'
// keys shuffled (so nearly all match, in random order); WildUnexpected makes
// every second message a random key. NoWild: one queue per source.
Load make(Kind k, int nq, int len, int ranks, uint64_t seed, int tags = 8) {
    std::mt19937_64 g(seed);
    Load L;
    for (int q = 0; q < nq; ++q) {
        Queue Q{static_cast<int32_t>(L.rs.size()), len, static_cast<int32_t>(L.ms.size()), len};
        const int fixed_src = static_cast<int>(g() % ranks);
        std::vector<std::pair<int32_t, int32_t>> keys;
        for (int i = 0; i < len; ++i) {
            int32_t s = k == Kind::NoWild ? fixed_src : static_cast<int32_t>(g() % ranks);
            int32_t t = static_cast<int32_t>(g() % tags);
            keys.push_back({s, t});
            const bool wild = k == Kind::Wild || k == Kind::WildUnexpected;
            L.rs.push_back(wild && g() % 10 == 0 ? -1 : s);
            L.rt.push_back(wild && g() % 10 == 0 ? -1 : t);
        }
        std::shuffle(keys.begin(), keys.end(), g);
        for (int i = 0; i < len; ++i) {
            if (k == Kind::WildUnexpected && i % 2) {
                keys[i] = {static_cast<int32_t>(g() % ranks), static_cast<int32_t>(8 + g() % 8)};
            }
            L.ms.push_back(keys[i].first);
            L.mt.push_back(keys[i].second);
        }
        while (L.rs.size() % 32) { // keep each queue's bitmap word-aligned
            L.rs.push_back(-2);
            L.rt.push_back(-2);
        }
        L.q.push_back(Q);
    }
    return L;
}

template <class T> T *up(const std::vector<T> &v) {
    T *d = nullptr;
    CK(cudaMalloc(&d, std::max<size_t>(1, v.size()) * sizeof(T)));
    CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

struct Run {
    std::vector<int32_t> out;
    double ms = 0; // best kernel time over reps
};

// Runs one variant; times only the matching kernels (the hash includes its
// insert), with the state reset between repetitions outside the timing.
Run run(Kind k, const Load &L, int warps_per_cta, int reps) {
    int32_t *rs = up(L.rs), *rt = up(L.rt), *ms = up(L.ms), *mt = up(L.mt);
    const int nm = static_cast<int>(L.ms.size()), nr = static_cast<int>(L.rs.size());
    int32_t *out = nullptr;
    CK(cudaMalloc(&out, nm * sizeof(int32_t)));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    Run R;
    R.ms = 1e30;
    auto timed = [&](auto launch) { // keeps the best of the repetitions
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        R.ms = std::min<double>(R.ms, t);
    };
    if (k == Kind::Hash) {
        uint32_t size = 1;
        while (size < 2u * nr) size <<= 1;
        unsigned long long *keys;
        int32_t *head, *next;
        CK(cudaMalloc(&keys, size * sizeof(*keys)));
        CK(cudaMalloc(&head, size * sizeof(*head)));
        CK(cudaMalloc(&next, nr * sizeof(*next)));
        for (int r = 0; r < reps; ++r) {
            CK(cudaMemset(keys, 0xff, size * sizeof(*keys)));
            CK(cudaMemset(head, 0xff, size * sizeof(*head)));
            timed([&] {
                hash_insert<<<(nr + 255) / 256, 256>>>(nr, rs, rt, keys, head, next, size - 1);
                hash_match<<<(nm + 255) / 256, 256>>>(nm, ms, mt, keys, head, next, size - 1, out);
            });
        }
        CK(cudaFree(keys));
        CK(cudaFree(head));
        CK(cudaFree(next));
    } else {
        Queue *q = up(L.q);
        uint32_t *taken;
        CK(cudaMalloc(&taken, (nr / 32 + 1) * sizeof(uint32_t)));
        const int nq = static_cast<int>(L.q.size());
        const int ctas = (nq + warps_per_cta - 1) / warps_per_cta;
        for (int r = 0; r < reps; ++r) {
            CK(cudaMemset(taken, 0, (nr / 32 + 1) * sizeof(uint32_t)));
            timed([&] { match_compliant<<<ctas, 32 * warps_per_cta>>>(q, nq, rs, rt, ms, mt, taken, out); });
        }
        CK(cudaFree(q));
        CK(cudaFree(taken));
    }
    CK(cudaGetLastError());
    R.out.resize(nm);
    CK(cudaMemcpy(R.out.data(), out, nm * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (int32_t *p : {rs, rt, ms, mt, out}) CK(cudaFree(p));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return R;
}

// The reference model, one Oracle per queue, messages one by one in order.
// Returns the matched receive per message (global index) or -1.
std::vector<int32_t> oracle(const Load &L, int ranks, double *ms) {
    std::vector<int32_t> want(L.ms.size(), -1);
    const auto t0 = std::chrono::steady_clock::now();
    for (const Queue &Q : L.q) {
        ubermatch::test::Oracle o(ranks);
        void *got;
        for (int i = 0; i < Q.r_len; ++i) {
            o.post_recv(L.rs[Q.r_off + i], L.rt[Q.r_off + i],
                        reinterpret_cast<void *>(static_cast<intptr_t>(Q.r_off + i + 1)), &got);
        }
        for (int i = 0; i < Q.m_len; ++i) {
            o.arrive(L.ms[Q.m_off + i], L.mt[Q.m_off + i], reinterpret_cast<void *>(1), &got);
            want[Q.m_off + i] = got ? static_cast<int32_t>(reinterpret_cast<intptr_t>(got)) - 1 : -1;
        }
    }
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return want;
}

// The hash's weaker rule (its check uses 16 x 8 keys, so pops contend): a receive is taken at most once and only by a
// message with its key, and each key gets min(#receives, #messages) matches.
long hash_differences(const Load &L, const std::vector<int32_t> &out) {
    long bad = 0;
    std::vector<char> used(L.rs.size(), 0);
    std::map<std::pair<int32_t, int32_t>, std::pair<long, long>> count; // key -> (recvs, msgs)
    std::map<std::pair<int32_t, int32_t>, long> got;
    for (size_t i = 0; i < L.rs.size(); ++i) if (L.rs[i] >= 0) ++count[{L.rs[i], L.rt[i]}].first;
    for (size_t i = 0; i < L.ms.size(); ++i) {
        ++count[{L.ms[i], L.mt[i]}].second;
        const int32_t r = out[i];
        if (r < 0) continue;
        if (r >= static_cast<int32_t>(L.rs.size()) || used[r]++ || L.rs[r] != L.ms[i] || L.rt[r] != L.mt[i]) ++bad;
        ++got[{L.ms[i], L.mt[i]}];
    }
    for (auto &[key, c] : count) bad += got[key] != std::min(c.first, c.second);
    return bad;
}

long matched(const std::vector<int32_t> &v) {
    return std::count_if(v.begin(), v.end(), [](int32_t x) { return x >= 0; });
}

int check(long target) {
    int fails = 0;
    for (Kind k : {Kind::Wild, Kind::WildUnexpected, Kind::NoWild, Kind::Hash}) {
        long total = 0, diffs = 0;
        for (uint64_t seed = 1; total < target; ++seed) {
            const int len = 32 << (seed % 6); // 32 .. 1024, plus odd tails below
            const Load L = make(k, 64, len - static_cast<int>(seed % 7), 16, seed);
            const Run R = run(k, L, 4, 1);
            if (k == Kind::Hash) {
                diffs += hash_differences(L, R.out);
            } else {
                double t;
                const auto want = oracle(L, 16, &t);
                for (size_t i = 0; i < want.size(); ++i) diffs += want[i] != R.out[i];
            }
            total += matched(R.out);
        }
        std::printf("check %-36s %ld matches, %ld differences\n", kind_name(k), total, diffs);
        fails += diffs != 0;
    }
    return fails ? 1 : 0;
}

void bench() {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    std::printf("device: %s, %d SMs\n", p.name, p.multiProcessorCount);
    std::printf("%-36s %7s %6s %6s %12s %12s %12s\n", "variant", "len", "queues", "warps", "GPU Mmatch/s",
                "oracle Mm/s", "matched");
    for (Kind k : {Kind::Wild, Kind::WildUnexpected, Kind::NoWild}) {
        for (int len = 32; len <= 65536; len *= 2) {
            for (int nq : {1, 0}) {
                // many queues: enough to fill the GPU, capped at 2^22 receives in all
                const int queues = nq ? 1 : std::max(1, std::min(8192, (1 << 22) / len));
                const Load L = make(k, queues, len, 16, 7);
                const Run R = run(k, L, nq ? 1 : 4, 3);
                double oms = 0;
                double orate = 0;
                if (static_cast<long>(len) * len * queues <= (1L << 31)) {
                    const auto want = oracle(L, 16, &oms);
                    orate = matched(want) / oms / 1e3;
                }
                std::printf("%-36s %7d %6d %6d %12.2f %12.2f %12ld\n", kind_name(k), len, queues,
                            nq ? 1 : 4, matched(R.out) / R.ms / 1e3, orate, matched(R.out));
                std::fflush(stdout);
            }
        }
    }
    for (int n = 1 << 10; n <= (1 << 24); n <<= 2) {
        const Load L = make(Kind::Hash, 1, n, 1 << 20, 7, 1 << 30); // unique keys
        const Run R = run(Kind::Hash, L, 0, 5);
        std::printf("%-36s %7d %6d %6s %12.2f %12s %12ld\n", kind_name(Kind::Hash), n, 1, "-",
                    matched(R.out) / R.ms / 1e3, "-", matched(R.out));
    }
}

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "--probe";
    int n = 0;
    const bool usable = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    if (mode == "--probe") {
        std::printf("gpu engine: built (sm_90)\ndevice: %s\n", usable ? "usable" : "none");
        return 0;
    }
    if (mode != "--check" && mode != "--bench") {
        std::fprintf(stderr, "unknown mode '%s'; valid: --probe, --check [N], --bench\n", mode.c_str());
        return 2;
    }
    if (!usable) {
        std::printf("skipped: no GPU\n");
        return 77;
    }
    if (mode == "--check") return check(argc > 2 ? std::atol(argv[2]) : 1000000);
    bench();
    return 0;
}

// The tail-queue paper's shared-memory test (seed 002, Figs. 3 and 7): queues
// pre-filled to a length, then thread pairs, one posting receives and one
// delivering the matching messages, as fast as they can; matches per second
// with one global lock around a backend vs TailQueues around the same backend,
// and tail queues in bins (matching/tailq_bins.h) with --bins.
// Each side of a pair runs at most --ahead operations (default 64) ahead of the
// other: unbounded, the side that wins the locks builds a queue of up to N/pairs
// entries that the other then walks, so the rate measured a drift, not the
// length asked for (0 lets it drift, as the first version did).
//
// usage: tailq_bench [--backends list,auto] [--threads 2,4] [--lengths 1,2,...,1024]
//                    [--matches N] [--reps R] [--ahead W] [--prq-only] [--bins 4,16]
// Prints CSV: backend,mode,threads,length,variant,rep,matches_per_s (mode: global,
// tailq, or bins-B for tail queues in B bins)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "matching/registry.h"
#include "matching/tailq.h"
#include "matching/tailq_bins.h"

namespace {

using namespace ubermatch;

// The baseline: the lock of today, one mutex around the whole engine.
class Global {
public:
    Global(const std::string &b, int32_t n) : e_(make_engine(b, n, default_params())) {}
    void post_recv(int32_t s, int32_t t, void *h, um_match_t *m) {
        std::lock_guard<std::mutex> l(mu_);
        e_->post_recv(s, t, um_hint_t{}, h, m);
    }
    void arrive(int32_t s, int32_t t, void *h, um_match_t *m) {
        std::lock_guard<std::mutex> l(mu_);
        e_->arrive(s, t, um_hint_t{}, h, m);
    }

private:
    std::unique_ptr<Engine> e_;
    std::mutex mu_;
};

class Tailq {
public:
    Tailq(const std::string &b, int32_t n) : q_(b, n, default_params()) {}
    void post_recv(int32_t s, int32_t t, void *h, um_match_t *m) { q_.post_recv(s, t, um_hint_t{}, h, m); }
    void arrive(int32_t s, int32_t t, void *h, um_match_t *m) { q_.arrive(s, t, um_hint_t{}, h, m); }

private:
    TailQueues q_;
};

class Binned {
public:
    Binned(const std::string &b, int32_t n, int bins) : q_(b, n, default_params(), bins) {}
    void post_recv(int32_t s, int32_t t, void *h, um_match_t *m) { q_.post_recv(s, t, um_hint_t{}, h, m); }
    void arrive(int32_t s, int32_t t, void *h, um_match_t *m) { q_.arrive(s, t, um_hint_t{}, h, m); }

private:
    TailBins q_;
};

constexpr int32_t kComm = 64;
constexpr int32_t kFillTag = 1 << 30; // never matched by the test's traffic

// Operations a side of a pair has done, each on its own cache line.
struct alignas(64) Progress {
    std::atomic<long> done{0};
};

// Waits until `mine` is fewer than `ahead` operations past `other`.
void pace(long mine, const Progress &other, long ahead) {
    for (unsigned spins = 0; mine - other.done.load(std::memory_order_acquire) >= ahead; ++spins) {
        if (spins < 1024) {
#if defined(__x86_64__)
            _mm_pause();
#endif
        } else {
            std::this_thread::yield(); // more threads than cores: let the partner run
        }
    }
}

template <class Q, class... Args>
double run(const std::string &backend, int threads, int length, bool prq_only, long matches, long ahead,
           Args... args) {
    Q q(backend, kComm, args...);
    static char dummy[1];
    um_match_t m{};
    const int pairs = threads / 2;
    // The fill shares the pairs' sources, so searches of list-like backends walk it.
    for (int i = 0; i < length; ++i) {
        q.post_recv(i % pairs, kFillTag, dummy, &m);
        if (!prq_only) {
            q.arrive(i % pairs, kFillTag + 1, dummy, &m);
        }
    }
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    const long per_pair = matches / pairs;
    std::vector<Progress> progress(static_cast<size_t>(2 * pairs));
    std::vector<std::thread> ts;
    for (int p = 0; p < pairs; ++p) {
        for (int side = 0; side < 2; ++side) {
            ts.emplace_back([&, p, side] {
                ready.fetch_add(1);
                while (!go.load(std::memory_order_acquire)) {
                }
                um_match_t out{};
                Progress &mine = progress[static_cast<size_t>(2 * p + side)];
                const Progress &other = progress[static_cast<size_t>(2 * p + 1 - side)];
                for (long i = 0; i < per_pair; ++i) {
                    if (ahead > 0) {
                        pace(i, other, ahead);
                    }
                    const int32_t tag = static_cast<int32_t>(i & 0xffff);
                    if (side == 0) {
                        q.post_recv(p, tag, dummy, &out);
                    } else {
                        q.arrive(p, tag, dummy, &out);
                    }
                    mine.done.store(i + 1, std::memory_order_release);
                }
            });
        }
    }
    while (ready.load() != threads) {
    }
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread &t : ts) {
        t.join();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(per_pair * pairs) / s;
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string x; std::getline(in, x, ',');) {
        out.push_back(x);
    }
    return out;
}

} // namespace

int main(int argc, char **argv) {
    std::string backends = "list,auto", threads = "2", lengths = "1,2,4,8,16,32,64,128,256,512,1024";
    std::string bins;
    long matches = 200000;
    int reps = 3;
    long ahead = 64;
    bool prq_only = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--prq-only") { prq_only = true; continue; }
        if (a == "--backends") backends = v;
        else if (a == "--threads") threads = v;
        else if (a == "--lengths") lengths = v;
        else if (a == "--matches") matches = std::atol(v);
        else if (a == "--reps") reps = std::atoi(v);
        else if (a == "--ahead") ahead = std::atol(v);
        else if (a == "--bins") bins = v;
        else {
            std::fprintf(stderr, "unknown option %s (valid: --backends --threads --lengths --matches --reps --ahead --prq-only --bins)\n", argv[i]);
            return 2;
        }
        ++i;
    }
    std::printf("backend,mode,threads,length,variant,rep,matches_per_s\n");
    try {
        for (const std::string &b : split(backends)) {
            for (const std::string &t : split(threads)) {
                const int n = std::atoi(t.c_str());
                if (n < 2 || n % 2 != 0) {
                    std::fprintf(stderr, "--threads: even counts >= 2\n");
                    return 2;
                }
                for (const std::string &l : split(lengths)) {
                    for (int r = 0; r < reps; ++r) {
                        const int len = std::atoi(l.c_str());
                        const char *var = prq_only ? "prq-only" : "both";
                        std::printf("%s,global,%d,%d,%s,%d,%.0f\n", b.c_str(), n, len, var, r,
                                    run<Global>(b, n, len, prq_only, matches, ahead));
                        std::printf("%s,tailq,%d,%d,%s,%d,%.0f\n", b.c_str(), n, len, var, r,
                                    run<Tailq>(b, n, len, prq_only, matches, ahead));
                        for (const std::string &nb : split(bins)) {
                            std::printf("%s,bins-%s,%d,%d,%s,%d,%.0f\n", b.c_str(), nb.c_str(), n, len, var, r,
                                        run<Binned>(b, n, len, prq_only, matches, ahead, std::atoi(nb.c_str())));
                        }
                        std::fflush(stdout);
                    }
                }
            }
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    return 0;
}

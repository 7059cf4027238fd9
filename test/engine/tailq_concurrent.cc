// Concurrent differential test of the tail queues (issue 13): receiver threads
// post receives, mprobe, probe and cancel while arrival threads deliver
// messages, all on one TailQueues around one backend (or tail queues in
// --bins bins: matching/tailq_bins.h); then a checker of MPI's guarantees over
// what each call returned.
//
// "Earlier" under concurrency: every call takes a ticket from one global
// clock before it starts and one after it returns. Messages of one source
// come from one arrival thread (program order = send order); receives of one
// receiver thread are ordered by that thread's program order. An element X
// was certainly still available while a match ran if the call that removed X
// started after that match's call returned (or nothing ever removed it).
//
// Checks: (1) every message is matched at most once, every receive matched or
// cancelled at most once; (2) a receive (or mprobe) that got message M of
// source s: no earlier message of s that it also matches was still available
// then (non-overtaking; covers wildcards); (3) a message that matched receive
// R: no earlier receive of R's thread that matches it was still posted then;
// (4) at the end, nothing lost: every element is matched, cancelled or queued,
// and no queued receive matches a queued message; (5) arrive's before_queue
// hook runs before its message is visible: a probe from inside the hook does
// not find it, and no receive, mprobe or probe sees the message before the
// hook's plain write (else a wrong value, or a race for TSan).
//
// usage: tailq_concurrent [--backend NAME|all] [--ops N] [--seed S]
//                         [--receivers R] [--arrivers A] [--bins B] [--wildcards F]
// --wildcards F: the share of receives with MPI_ANY_SOURCE, and apart of those
// with MPI_ANY_TAG (default 0.15; low: bins work apart, not in their ordered mode).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "matching/queue.h"
#include "matching/registry.h"
#include "matching/tailq_bins.h"

namespace {

using TailQueues = ubermatch::TailBins; // one bin: plain tail queues
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
constexpr int32_t kSources = 6;
constexpr int32_t kTags = 4;

std::atomic<uint64_t> g_clock{0};
uint64_t tick() { return g_clock.fetch_add(1, std::memory_order_acq_rel); }

struct Msg {
    int32_t source = 0, tag = 0;
    // Set by arrive's before_queue hook (the PML copies the payload there),
    // plainly: a receiver that could take the message before the hook ran
    // would race with it (TSan) or see 0.
    int payload = 0;
    std::atomic<int64_t> taken_by{-1}; // receive index
    uint64_t taken_start = kNever;     // written by the taker
};

struct Recv {
    int32_t source = 0, tag = 0;
    int thread = 0;
    bool posted = false;                // false: an mprobe, never queued
    std::atomic<int64_t> got{-1};       // message index; -2: cancelled
    uint64_t resolved_start = kNever;   // the call that matched or cancelled it
    uint64_t match_end = kNever;        // the end of the call that matched it
};

struct Run {
    std::vector<Msg> msgs;
    std::vector<Recv> recvs;
    std::atomic<int> errors{0};
    double wildcards = 0.15;
};

void fail(Run &run, const char *what, long a, long b) {
    if (run.errors.fetch_add(1) < 10) {
        std::fprintf(stderr, "FAIL: %s (%ld, %ld)\n", what, a, b);
    }
}

// A match found by a call running [start, end]: record it on both sides.
void record(Run &run, int64_t r, void *mh, uint64_t start, uint64_t end) {
    const int64_t m = static_cast<Msg *>(mh) - run.msgs.data();
    int64_t none = -1;
    if (!run.msgs[static_cast<size_t>(m)].taken_by.compare_exchange_strong(none, r)) {
        fail(run, "message matched twice", m, r);
        return;
    }
    none = -1;
    Recv &rv = run.recvs[static_cast<size_t>(r)];
    if (!rv.got.compare_exchange_strong(none, m)) {
        fail(run, "receive matched twice", r, m);
        return;
    }
    run.msgs[static_cast<size_t>(m)].taken_start = start;
    rv.resolved_start = start;
    rv.match_end = end;
}

void receiver(Run &run, TailQueues &tq, int id, size_t first, size_t count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    const um_hint_t hint{};
    std::vector<size_t> mine;
    for (size_t i = first; i < first + count; ++i) {
        Recv &r = run.recvs[i];
        r.thread = id;
        r.source = u(rng) < run.wildcards ? UM_ANY_SOURCE : static_cast<int32_t>(rng() % kSources);
        r.tag = u(rng) < run.wildcards ? UM_ANY_TAG : static_cast<int32_t>(rng() % kTags);
        const double what = u(rng);
        um_match_t m{};
        if (what < 0.05) { // probe: must see a message that is (or was) there
            const uint64_t s = tick();
            int unset = 0;
            tq.probe(r.source, r.tag, hint, &m,
                     [](void *h, void *c) { *static_cast<int *>(c) += static_cast<Msg *>(h)->payload != 1; },
                     &unset);
            tick();
            (void)s;
            if (unset != 0) {
                fail(run, "probe found a message before its before_queue hook ran", static_cast<long>(i), 0);
            }
            if (m.handle != nullptr) {
                const Msg *msg = static_cast<Msg *>(m.handle);
                if (!ubermatch::recv_matches(r.source, r.tag, msg->source, msg->tag)) {
                    fail(run, "probe returned a message it does not match", static_cast<long>(i), 0);
                }
            }
        }
        if (what > 0.93 && !mine.empty()) { // cancel one of this thread's receives
            const size_t c = mine[rng() % mine.size()];
            Recv &cr = run.recvs[c];
            bool removed = false;
            const uint64_t s = tick();
            tq.cancel(cr.source, cr.tag, &cr, &removed);
            tick();
            if (removed) {
                int64_t none = -1;
                if (!cr.got.compare_exchange_strong(none, -2)) {
                    fail(run, "cancel removed a matched receive", static_cast<long>(c), none);
                } else {
                    cr.resolved_start = s;
                }
            }
        }
        r.posted = what >= 0.1;
        const uint64_t s = tick();
        if (r.posted) {
            tq.post_recv(r.source, r.tag, hint, &r, &m);
        } else {
            tq.mprobe(r.source, r.tag, hint, &m);
        }
        const uint64_t e = tick();
        if (m.handle != nullptr && static_cast<Msg *>(m.handle)->payload != 1) {
            fail(run, "receive took a message before its before_queue hook ran", static_cast<long>(i), 0);
        }
        if (m.handle != nullptr) {
            record(run, static_cast<int64_t>(i), m.handle, s, e);
        } else if (r.posted) {
            mine.push_back(i);
        }
    }
}

void arriver(Run &run, TailQueues &tq, int id, int arrivers, size_t first, size_t count,
             uint64_t seed) {
    std::mt19937_64 rng(seed);
    const um_hint_t hint{};
    for (size_t i = first; i < first + count; ++i) {
        Msg &msg = run.msgs[i];
        // This thread owns the sources congruent to id: their send order is ours.
        msg.source = id + arrivers * static_cast<int32_t>(rng() % (kSources / arrivers));
        msg.tag = static_cast<int32_t>(rng() % kTags);
        um_match_t m{};
        const uint64_t s = tick();
        // The hook also probes for its message: it must not be visible yet
        // (a probe finds the earliest match, so an older message of the same
        // source and tag can hide it; most arrivals have none).
        struct Ctx {
            Run &run;
            TailQueues &tq;
        } ctx{run, tq};
        tq.arrive(msg.source, msg.tag, hint, &msg, &m,
                  [](void *h, void *c) {
                      Ctx &x = *static_cast<Ctx *>(c);
                      Msg &mine = *static_cast<Msg *>(h);
                      um_match_t seen{};
                      x.tq.probe(mine.source, mine.tag, um_hint_t{}, &seen);
                      if (seen.handle == h) {
                          fail(x.run, "message visible before its before_queue hook ran",
                               static_cast<long>(&mine - x.run.msgs.data()), 0);
                      }
                      mine.payload = 1;
                  },
                  &ctx);
        const uint64_t e = tick();
        if (m.handle != nullptr) {
            const int64_t r = static_cast<Recv *>(m.handle) - run.recvs.data();
            record(run, r, &msg, s, e);
        }
    }
}

size_t key(int32_t source, int32_t tag) {
    return static_cast<size_t>(source + 1) * (kTags + 1) + static_cast<size_t>(tag + 1);
}

// (2): messages of one source in send order; prefix maxima of when they were taken.
void check_messages(Run &run, size_t per_arriver, int arrivers) {
    for (int a = 0; a < arrivers; ++a) {
        std::vector<uint64_t> by_tag(kSources * (kTags + 1), 0); // [source][tag+1]
        for (size_t i = per_arriver * a; i < per_arriver * (a + 1); ++i) {
            const Msg &m = run.msgs[i];
            const int64_t r = m.taken_by.load();
            if (r >= 0) {
                const Recv &rv = run.recvs[static_cast<size_t>(r)];
                uint64_t earlier = 0;
                const size_t row = static_cast<size_t>(m.source) * (kTags + 1);
                if (rv.tag == UM_ANY_TAG) {
                    for (int32_t t = 0; t < kTags; ++t) {
                        earlier = std::max(earlier, by_tag[row + 1 + static_cast<size_t>(t)]);
                    }
                } else {
                    earlier = by_tag[row + 1 + static_cast<size_t>(rv.tag)];
                }
                if (earlier > rv.match_end) {
                    fail(run, "receive overtook an earlier eligible message", r, static_cast<long>(i));
                }
            }
            uint64_t &slot = by_tag[static_cast<size_t>(m.source) * (kTags + 1) + 1 +
                                    static_cast<size_t>(m.tag)];
            slot = std::max(slot, m.taken_start);
        }
    }
}

// (3): each thread's posted receives in program order; prefix maxima by key.
void check_receives(Run &run, size_t per_receiver, int receivers) {
    for (int t = 0; t < receivers; ++t) {
        std::vector<uint64_t> by_key((kSources + 1) * (kTags + 1), 0);
        for (size_t i = per_receiver * t; i < per_receiver * (t + 1); ++i) {
            const Recv &r = run.recvs[i];
            const int64_t mi = r.got.load();
            if (mi >= 0) {
                const Msg &m = run.msgs[static_cast<size_t>(mi)];
                uint64_t earlier = 0;
                for (int32_t s : {m.source, static_cast<int32_t>(UM_ANY_SOURCE)}) {
                    for (int32_t g : {m.tag, static_cast<int32_t>(UM_ANY_TAG)}) {
                        earlier = std::max(earlier, by_key[key(s, g)]);
                    }
                }
                if (earlier > r.match_end) {
                    fail(run, "message passed over an earlier posted receive", static_cast<long>(i), mi);
                }
            }
            if (r.posted) {
                uint64_t &slot = by_key[key(r.source, r.tag)];
                slot = std::max(slot, r.resolved_start);
            }
        }
    }
}

// (4): the queues hold exactly the unresolved elements, and no pair of them matches.
void check_end(Run &run, TailQueues &tq) {
    const ubermatch::Snapshot snap = tq.snapshot();
    std::vector<char> queued_msg(run.msgs.size(), 0), queued_recv(run.recvs.size(), 0);
    for (const auto &e : snap.unexpected) {
        queued_msg[static_cast<size_t>(static_cast<Msg *>(e.handle) - run.msgs.data())] = 1;
    }
    for (const auto &e : snap.posted) {
        queued_recv[static_cast<size_t>(static_cast<Recv *>(e.handle) - run.recvs.data())] = 1;
        for (const auto &m : snap.unexpected) {
            if (ubermatch::recv_matches(e.source, e.tag, m.source, m.tag)) {
                fail(run, "a queued receive matches a queued message", 0, 0);
                return;
            }
        }
    }
    for (size_t i = 0; i < run.msgs.size(); ++i) {
        if ((run.msgs[i].taken_by.load() >= 0) == (queued_msg[i] != 0)) {
            fail(run, "message lost or both matched and queued", static_cast<long>(i), 0);
        }
    }
    for (size_t i = 0; i < run.recvs.size(); ++i) {
        const Recv &r = run.recvs[i];
        const bool resolved = r.got.load() != -1;
        if (r.posted && resolved == (queued_recv[i] != 0)) {
            fail(run, "receive lost or both resolved and queued", static_cast<long>(i), 0);
        }
    }
}

bool run_one(const std::string &backend, size_t ops, uint64_t seed, int receivers, int arrivers, int bins,
             double wildcards) {
    TailQueues tq(backend, kSources, ubermatch::default_params(), bins);
    Run run;
    run.wildcards = wildcards;
    const size_t per_r = ops / 2 / static_cast<size_t>(receivers);
    const size_t per_a = ops / 2 / static_cast<size_t>(arrivers);
    run.recvs = std::vector<Recv>(per_r * static_cast<size_t>(receivers));
    run.msgs = std::vector<Msg>(per_a * static_cast<size_t>(arrivers));
    std::vector<std::thread> threads;
    for (int t = 0; t < receivers; ++t) {
        threads.emplace_back(receiver, std::ref(run), std::ref(tq), t, per_r * t, per_r, seed * 31 + t);
    }
    for (int a = 0; a < arrivers; ++a) {
        threads.emplace_back(arriver, std::ref(run), std::ref(tq), a, arrivers, per_a * a, per_a,
                             seed * 37 + 1000 + a);
    }
    for (std::thread &t : threads) {
        t.join();
    }
    check_messages(run, per_a, arrivers);
    check_receives(run, per_r, receivers);
    check_end(run, tq);
    size_t matched = 0;
    for (const Msg &m : run.msgs) {
        matched += m.taken_by.load() >= 0;
    }
    std::printf("%-10s ops %zu, %d receivers + %d arrivers, %d bin(s), seed %llu: %zu matched, "
                "%llu calls in order across bins, %d errors\n",
                backend.c_str(), run.recvs.size() + run.msgs.size(), receivers, arrivers, bins,
                static_cast<unsigned long long>(seed), matched,
                static_cast<unsigned long long>(tq.ordered_calls()), run.errors.load());
    return run.errors.load() == 0;
}

} // namespace

int main(int argc, char **argv) {
    std::string backend = "all";
    size_t ops = 20000;
    uint64_t seed = 1;
    int receivers = 2, arrivers = 2, bins = 1;
    double wildcards = 0.15;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--backend") backend = argv[i + 1];
        else if (a == "--ops") ops = std::strtoull(argv[i + 1], nullptr, 10);
        else if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
        else if (a == "--receivers") receivers = std::atoi(argv[i + 1]);
        else if (a == "--arrivers") arrivers = std::atoi(argv[i + 1]);
        else if (a == "--bins") bins = std::atoi(argv[i + 1]);
        else if (a == "--wildcards") wildcards = std::atof(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s (valid: --backend --ops --seed --receivers --arrivers --bins --wildcards)\n", argv[i]);
            return 2;
        }
    }
    if (receivers < 1 || arrivers < 1 || kSources % arrivers != 0 || !(wildcards >= 0 && wildcards <= 1)) {
        std::fprintf(stderr, "--receivers >= 1, --arrivers one of 1, 2, 3, 6, --wildcards 0 .. 1\n");
        return 2;
    }
    bool ok = true;
    try {
        if (backend == "all") {
            for (const ubermatch::Backend &b : ubermatch::backends()) {
                if (b.assertion != nullptr) {
                    continue; // relaxed backends refuse the wildcards and unexpected messages this workload has
                }
                ok = run_one(b.name, ops, seed, receivers, arrivers, bins, wildcards) && ok;
            }
        } else {
            ok = run_one(backend, ops, seed, receivers, arrivers, bins, wildcards);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    return ok ? 0 : 1;
}

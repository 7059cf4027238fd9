// Seed 000 backends (pnp, col, colpnp, col+list, list+pnp): partner promotion
// at theta, levels, the k*sqrt(n) caps, col's profiling and levels, MPI order
// across their queues, explicit collective calls and parameter errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "matching/colpnp.h"
#include "matching/registry.h"
#include "matching/smallmap.h"
#include "test/engine/oracle.h"
#include "test/engine/workload.h"

using namespace ubermatch;
using namespace ubermatch::test;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

const std::vector<std::string> kSeed000 = {"pnp", "col", "colpnp", "col+list", "list+pnp"};
const std::vector<std::string> kWithPnp = {"pnp", "colpnp", "list+pnp"};
const std::vector<std::string> kWithCol = {"col", "colpnp", "col+list"};

um_hint_t coll_hint(um_coll_t coll, uint32_t msg_size, uint32_t comm_size = 0) {
    um_hint_t hint{};
    hint.coll = static_cast<uint16_t>(coll);
    hint.msg_size = msg_size;
    hint.comm_size = comm_size;
    return hint;
}

const um_hint_t kP2P{};

// The pnp part of an engine, nullptr when it has none.
const PnpPart *pnp_of(const Engine &e) {
    if (auto *x = dynamic_cast<const PnpEngine *>(&e)) {
        return &x->p2p();
    }
    if (auto *x = dynamic_cast<const ColPnpEngine *>(&e)) {
        return &x->p2p();
    }
    if (auto *x = dynamic_cast<const ListPnpEngine *>(&e)) {
        return &x->p2p();
    }
    return nullptr;
}

const ColPart *col_of(const Engine &e) {
    if (auto *x = dynamic_cast<const ColPnpEngine *>(&e)) {
        return &x->coll();
    }
    if (auto *x = dynamic_cast<const ColListEngine *>(&e)) {
        return &x->coll();
    }
    return nullptr;
}

struct Driver {
    std::unique_ptr<Engine> e;
    explicit Driver(const std::string &backend, int32_t n, const um_params_t &p = default_params())
        : e(make_engine(backend, n, p)) {}
    um_match_t post(int32_t s, int32_t t, uintptr_t handle, const um_hint_t &hint = kP2P) {
        um_match_t m{};
        REQUIRE(e->post_recv(s, t, hint, h(handle), &m) == UM_OK);
        return m;
    }
    um_match_t arrive(int32_t s, int32_t t, uintptr_t handle, const um_hint_t &hint = kP2P) {
        um_match_t m{};
        REQUIRE(e->arrive(s, t, hint, h(handle), &m) == UM_OK);
        return m;
    }
    const PnpPart &pnp() const {
        const PnpPart *p = pnp_of(*e);
        REQUIRE(p != nullptr);
        return *p;
    }
    const ColPart &col() const {
        const ColPart *c = col_of(*e);
        REQUIRE(c != nullptr);
        return *c;
    }
};

// Source 1 sends half of the first theta (100) messages, 50 other sources one
// each: at the 100th the initial queue reaches theta and source 1 becomes a partner.
void flood_initial_queue(Driver &d, uintptr_t &next) {
    for (int32_t i = 0; i < 50; ++i) {
        d.arrive(1, i, next++);
        d.arrive(2 + i, 0, next++);
    }
}

// floor(k * sqrt(n)) computed differently from the engine.
uint64_t cap(int64_t k, int32_t n) {
    return static_cast<uint64_t>(std::floor(static_cast<double>(k) * std::sqrt(static_cast<double>(n)) + 1e-9));
}

} // namespace

TEST_CASE("seed 000: a source that floods a queue past theta becomes a partner", "[seed000]") {
    for (const std::string &name : kWithPnp) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 64);
            const uint64_t fixed = d.e->stats().queues;
            uintptr_t next = 1000;
            for (int32_t i = 0; i < 49; ++i) {
                d.arrive(1, i, next++);
                d.arrive(2 + i, 0, next++);
            }
            d.arrive(1, 49, next++); // 99 elements: below theta, nothing yet
            CHECK(d.pnp().unexpected().partners() == 0);
            CHECK(d.e->stats().queues == fixed);
            d.arrive(51, 0, next++); // the 100th
            CHECK(d.pnp().unexpected().is_partner(1));
            CHECK_FALSE(d.pnp().unexpected().is_partner(2)); // one element: below the average
            CHECK(d.pnp().unexpected().partners() == 1);
            CHECK(d.pnp().unexpected().levels() == 1);
            CHECK(d.e->stats().queues == fixed + 2); // its queue and the level's non-partner queue
            CHECK(d.pnp().posted().partners() == 0); // the sides are separate

            // Drain the initial queue; then 100 non-partner messages and 10
            // from source 1 interleave.
            for (int32_t i = 0; i < 50; ++i) {
                CHECK(d.post(1, i, 1).handle != nullptr);
                CHECK(d.post(2 + i, 0, 1).handle != nullptr);
            }
            uintptr_t wanted = 0;
            for (int32_t i = 0; i < 100; ++i) {
                d.arrive(2 + i % 50, 7, next++);
                if (i % 10 == 0) {
                    if (i == 90) {
                        wanted = next;
                    }
                    d.arrive(1, 100 + i, next++);
                }
            }
            // Source 1's search stays in its own queue: 10 elements, the wanted one last.
            const um_match_t m = d.post(1, 190, 2);
            CHECK(m.handle == h(wanted));
            CHECK(m.inspected == 10);
            // A non-partner's search walks the shared non-partner queue: source
            // 51's first tag-7 message is the 50th there.
            CHECK(d.post(51, 7, 3).inspected == 50);
        }
    }
    SECTION("list, for comparison, walks everything") {
        Driver d("list", 64);
        uintptr_t next = 1000;
        flood_initial_queue(d, next);
        for (int32_t i = 0; i < 100; ++i) {
            d.arrive(1, 100 + i, next++);
        }
        CHECK(d.post(1, 199, 2).inspected == 200);
    }
}

TEST_CASE("seed 000: a non-partner queue reaching theta opens a level", "[seed000]") {
    for (const std::string &name : kWithPnp) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 64);
            const uint64_t fixed = d.e->stats().queues;
            uintptr_t next = 1000;
            flood_initial_queue(d, next); // level 0: source 1
            REQUIRE(d.pnp().unexpected().levels() == 1);
            // Level 0's non-partner queue: source 7 floods it.
            for (int32_t i = 0; i < 50; ++i) {
                d.arrive(7, 1000 + i, next++);
                d.arrive(8 + i % 40, 0, next++);
            }
            CHECK(d.pnp().unexpected().levels() == 2);
            CHECK(d.pnp().unexpected().is_partner(7));
            CHECK(d.pnp().unexpected().partners() == 2);
            CHECK(d.e->stats().queues == fixed + 4);
            // Source 7's elements lie in the initial and level-0 queues and its
            // own; the earliest is taken first.
            d.arrive(7, 1000, next++);
            CHECK(d.post(7, 1000, 1).handle == h(1000 + 100)); // level-0 non-partner queue
            CHECK(d.post(7, 1000, 1).handle == h(next - 1));   // its own queue
            // And on the posted side the same with receives.
            for (int32_t i = 0; i < 50; ++i) {
                d.post(9, 5000 + i, 1);
                d.post(10 + i, 5000, 1);
            }
            CHECK(d.pnp().posted().is_partner(9));
            CHECK(d.pnp().posted().levels() == 1);
        }
    }
}

TEST_CASE("seed 000: dedicated queues never exceed k*sqrt(n)", "[seed000]") {
    SECTION("pnp with k_p = 1, n = 4: one level of one partner") {
        um_params_t p = default_params();
        p.k_p = 1;
        p.theta = 4;
        Driver d("pnp", 4, p);
        const uint64_t fixed = d.e->stats().queues;
        REQUIRE(cap(1, 4) == 2);
        uintptr_t next = 1000;
        for (int32_t i = 0; i < 100; ++i) {
            d.arrive(i % 3 == 0 ? 1 : i % 4, i, next++);
        }
        CHECK(d.pnp().unexpected().levels() == 1);
        CHECK(d.e->stats().queues == fixed + 2);
        for (int32_t i = 0; i < 100; ++i) {
            d.post(i % 4, 1000 + i, next++);
        }
        CHECK(d.pnp().posted().levels() == 0); // the budget is spent
        CHECK(d.e->stats().queues == fixed + 2);
    }
    SECTION("col with k_c = 1, n = 16: a level gets what is left of 4 queues") {
        um_params_t p = default_params();
        p.k_c = 1;
        Driver d("col", 16, p);
        const uint64_t fixed = d.e->stats().queues;
        const um_hint_t g = coll_hint(UM_COLL_GATHER, 64);
        // First call: 15 receives, the messages arrive in reverse: 8 traversals on average.
        for (int32_t s = 1; s < 16; ++s) {
            d.post(s, -20, 1, g);
        }
        for (int32_t s = 15; s >= 1; --s) {
            d.arrive(s, -20, 100, g);
        }
        CHECK(d.col().phase(g) == ColPart::kProfiled);
        d.post(1, -20, 1, g); // second call: a level, capped at 4
        CHECK(d.col().posted().level_queues(UM_COLL_GATHER) == std::vector<uint32_t>{4});
        CHECK(d.e->stats().queues == fixed + 4);
        CHECK(d.col().budget().left() == 0);
    }
    SECTION("every backend on every mix, with small theta and k") {
        for (const std::string &name : kSeed000) {
            for (const int64_t k : {1, 2}) {
                um_params_t p = default_params();
                p.theta = 3;
                p.k_c = k;
                p.k_p = k;
                for (const Mix &mix : standard_mixes()) {
                    auto e = make_engine(name, mix.comm_size, p);
                    const bool has_col = col_of(*e) != nullptr;
                    const bool has_pnp = pnp_of(*e) != nullptr;
                    const uint64_t limit = e->stats().queues + (has_col ? cap(k, mix.comm_size) : 0) +
                                           (has_pnp ? cap(k, mix.comm_size) : 0);
                    Oracle model(mix.comm_size);
                    Workload work(mix, 7);
                    uint64_t most = 0;
                    for (int i = 0; i < 4000; ++i) {
                        const Op op = work.next(model);
                        if (op.kind != OpKind::arrive && op.kind != OpKind::post_recv) {
                            continue;
                        }
                        const Step step = apply(*e, model, op);
                        most = std::max(most, e->stats().queues);
                        REQUIRE(step.got.handle == step.want);
                    }
                    INFO(name << " k " << k << " mix " << mix.name);
                    CHECK(most <= limit);
                }
            }
        }
    }
}

TEST_CASE("seed 000: col profiles a bucket's first call and sizes its next level", "[seed000]") {
    for (const std::string &name : kWithCol) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 16);
            const uint64_t fixed = d.e->stats().queues;
            const um_hint_t g = coll_hint(UM_COLL_GATHER, 64);
            // First call (profiled, in pq): 10 receives, messages in reverse
            // order: they traverse 10, 9, .. 1: 5.5 on average.
            for (int32_t s = 1; s <= 10; ++s) {
                d.post(s, -20, 1, g);
            }
            CHECK(d.col().posted().profiling_queue_length() == 10);
            uint32_t deepest = 0;
            for (int32_t s = 10; s >= 1; --s) {
                const um_match_t m = d.arrive(s, -20, 100, g);
                CHECK(m.handle == h(1));
                deepest = std::max(deepest, m.inspected);
            }
            CHECK(deepest == 10);
            CHECK(d.col().phase(g) == ColPart::kProfiled); // none of its elements left
            CHECK(d.e->stats().queues == fixed);           // nothing allocated yet
            // Second call: ceil(5.5) = 6 posted-side queues; the receives'
            // searches met nothing, so no unexpected-side level.
            for (int32_t s = 1; s <= 10; ++s) {
                d.post(s, -20, 2, g);
            }
            CHECK(d.col().phase(g) == ColPart::kDecided);
            CHECK(d.col().posted().level_queues(UM_COLL_GATHER) == std::vector<uint32_t>{6});
            CHECK(d.col().unexpected().level_queues(UM_COLL_GATHER).empty());
            CHECK(d.e->stats().queues == fixed + 6);
            CHECK(d.col().posted().profiling_queue_length() == 0);
            deepest = 0;
            for (int32_t s = 10; s >= 1; --s) {
                const um_match_t m = d.arrive(s, -20, 100, g);
                CHECK(m.handle == h(2));
                deepest = std::max(deepest, m.inspected);
            }
            CHECK(deepest <= 2); // rank mod 6: at most two receives per queue

            // A bucket with a larger message size: profiled anew; 16 receives
            // traversed in reverse need ceil(8.5) = 9 queues: more than 6, so
            // a second level.
            const um_hint_t big = coll_hint(UM_COLL_GATHER, 1 << 20);
            for (int32_t s = 0; s < 16; ++s) {
                d.post(s, -20, 3, big);
            }
            for (int32_t s = 15; s >= 0; --s) {
                d.arrive(s, -20, 100, big);
            }
            d.post(0, -20, 4, big);
            CHECK(d.col().posted().level_queues(UM_COLL_GATHER) == std::vector<uint32_t>{6, 9});
            d.arrive(0, -20, 100, big);
            // A small bucket needs fewer queues than the last level: none added.
            const um_hint_t small = coll_hint(UM_COLL_GATHER, 1);
            d.post(3, -20, 5, small);
            d.post(2, -20, 5, small);
            d.arrive(2, -20, 100, small);
            d.arrive(3, -20, 100, small);
            d.post(3, -20, 6, small);
            CHECK(d.col().phase(small) == ColPart::kDecided);
            CHECK(d.col().posted().level_queues(UM_COLL_GATHER) == std::vector<uint32_t>{6, 9});
            // Other collectives are untouched.
            CHECK(d.col().posted().level_queues(UM_COLL_BCAST).empty());
        }
    }
}

TEST_CASE("seed 000: a first call that never drains ends after 4 searches per rank", "[seed000]") {
    for (const std::string &name : kWithCol) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 8); // window: max(16, 4 * 8) = 32 searches
            const um_hint_t r = coll_hint(UM_COLL_REDUCE, 512);
            for (int32_t i = 0; i < 31; ++i) {
                d.post(1 + i % 7, -23, 1, r); // never matched: the bucket's elements stay queued
            }
            CHECK(d.col().phase(r) == ColPart::kProfiling);
            d.arrive(0, -23, 100, r); // the 32nd search, past all 31 receives
            CHECK(d.col().phase(r) == ColPart::kProfiled);
            CHECK(d.e->stats().queues == make_engine(name, 8, default_params())->stats().queues);
            d.post(1, -23, 1, r); // its next call: a level for the arrival's 31, capped at 22
            CHECK(d.col().posted().level_queues(UM_COLL_REDUCE) == std::vector<uint32_t>{22});
        }
    }
}

TEST_CASE("seed 000: col keeps MPI order between pq and the levels", "[seed000]") {
    for (const std::string &name : kWithCol) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 8);
            const um_hint_t a = coll_hint(UM_COLL_ALLREDUCE, 8);
            // Bucket a: profiled (one deep search), then decided with a level.
            d.post(1, -12, 1, a);
            d.post(2, -12, 1, a);
            d.arrive(2, -12, 100, a);
            d.arrive(1, -12, 100, a);
            d.post(3, -12, 10, a); // second call: into the level
            REQUIRE_FALSE(d.col().posted().level_queues(UM_COLL_ALLREDUCE).empty());
            // A new bucket of the same collective is profiled: its receive goes
            // to pq, which is searched first, but came later.
            const um_hint_t b = coll_hint(UM_COLL_ALLREDUCE, 1 << 16);
            d.post(3, -12, 11, b);
            CHECK(d.col().posted().profiling_queue_length() == 1);
            CHECK(d.arrive(3, -12, 100, b).handle == h(10));
            CHECK(d.arrive(3, -12, 101, b).handle == h(11));
            // Messages (no unexpected-side level here: both in pq).
            d.arrive(5, -12, 200, a);
            d.arrive(5, -12, 201, b);
            CHECK(d.post(5, -12, 20, b).handle == h(200));
            CHECK(d.post(UM_ANY_SOURCE, -12, 21, a).handle == h(201));
        }
    }
}

TEST_CASE("seed 000: ANY_SOURCE keeps MPI order across partner and non-partner queues", "[seed000]") {
    for (const std::string &name : kWithPnp) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 64);
            uintptr_t next = 1000;
            flood_initial_queue(d, next); // source 1: partner on the unexpected side
            REQUIRE(d.pnp().unexpected().is_partner(1));
            // Tag 300: non-partner, partner, non-partner, partner.
            d.arrive(5, 300, 7001);
            d.arrive(1, 300, 7002);
            d.arrive(6, 300, 7003);
            d.arrive(1, 300, 7004);
            CHECK(d.post(UM_ANY_SOURCE, 300, 1).handle == h(7001));
            CHECK(d.post(UM_ANY_SOURCE, 300, 1).handle == h(7002));
            CHECK(d.post(UM_ANY_SOURCE, UM_ANY_TAG, 1).handle == h(1000)); // the initial queue's first
            CHECK(d.post(UM_ANY_SOURCE, 300, 1).handle == h(7003));
            CHECK(d.post(1, 300, 1).handle == h(7004));

            // Posted side: source 9 becomes a partner; ANY_SOURCE receives
            // interleave with its receives and take messages in posting order.
            for (int32_t i = 0; i < 50; ++i) {
                d.post(9, 5000 + i, static_cast<uintptr_t>(3000 + i));
                d.post(10 + i, 5000, 2);
            }
            REQUIRE(d.pnp().posted().is_partner(9));
            d.post(9, 77, 8001);
            d.post(UM_ANY_SOURCE, 77, 8002);
            d.post(9, 77, 8003);
            d.post(20, 77, 8004);
            d.post(UM_ANY_SOURCE, 77, 8005);
            CHECK(d.arrive(9, 77, 100).handle == h(8001));
            CHECK(d.arrive(9, 77, 101).handle == h(8002));
            CHECK(d.arrive(9, 77, 102).handle == h(8003));
            CHECK(d.arrive(9, 77, 103).handle == h(8005));
            CHECK(d.arrive(20, 77, 104).handle == h(8004));
            bool removed = false;
            CHECK(d.e->cancel(9, 5049, h(3049), &removed) == UM_OK);
            CHECK(removed);
        }
    }
}

TEST_CASE("seed 000: collective hints that disagree cannot hide a match", "[seed000]") {
    for (const std::string &name : kSeed000) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 8);
            // Gather gets a level (a profiled call, then a second one) ...
            const um_hint_t g = coll_hint(UM_COLL_GATHER, 8);
            d.post(1, -30, 10, g);
            d.post(2, -30, 11, g);
            d.arrive(2, -30, 100, g);
            d.arrive(1, -30, 100, g);
            // ... which holds this receive; the message names bcast.
            d.post(2, -30, 1, g);
            if (const ColPart *c = col_of(*d.e)) {
                REQUIRE(c->posted().level_queues(UM_COLL_GATHER).size() == 1);
                REQUIRE(c->posted().profiling_queue_length() == 0);
            }
            CHECK(d.arrive(2, -30, 100, coll_hint(UM_COLL_BCAST, 1 << 20)).handle == h(1));
            // A collective tag without a collective hint, and back.
            d.arrive(3, -31, 101, kP2P);
            CHECK(d.post(UM_ANY_SOURCE, -31, 2, coll_hint(UM_COLL_SCAN, 4)).handle == h(101));
            // A point-to-point tag with a collective hint.
            d.arrive(3, 4, 102, coll_hint(UM_COLL_BARRIER, 0));
            CHECK(d.post(3, UM_ANY_TAG, 3, kP2P).handle == h(102));
            CHECK(d.e->stats().posted_len == 0);
            CHECK(d.e->stats().unexpected_len == 0);
        }
    }
}

TEST_CASE("seed 000: explicit collective calls bound the profiled first call", "[seed000]") {
    for (const std::string &name : kWithCol) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 16);
            const um_hint_t call = coll_hint(UM_COLL_ALLGATHER, 4096);
            REQUIRE(d.e->collective_begin(call) == UM_OK);
            // Step 1 matches at once: nothing of the call is left queued, yet
            // the call goes on. Its elements carry their own sizes.
            d.post(1, -10, 1, coll_hint(UM_COLL_ALLGATHER, 256));
            d.arrive(1, -10, 100, coll_hint(UM_COLL_ALLGATHER, 256));
            CHECK(d.col().phase(call) == ColPart::kProfiling);
            for (int32_t s = 2; s <= 13; ++s) {
                d.post(s, -10, 2, coll_hint(UM_COLL_ALLGATHER, 256));
            }
            for (int32_t s = 13; s >= 2; --s) {
                d.arrive(s, -10, 100, coll_hint(UM_COLL_ALLGATHER, 256));
            }
            CHECK(d.col().phase(call) == ColPart::kProfiling);
            CHECK(d.col().buckets() == 1); // all of it counted for the call's bucket
            REQUIRE(d.e->collective_end(call) == UM_OK);
            CHECK(d.col().phase(call) == ColPart::kProfiled);
            // (1 + 12 + 11 + .. + 1) / 13 searches of the posted side = 6.07: 7 queues.
            REQUIRE(d.e->collective_begin(call) == UM_OK);
            CHECK(d.col().phase(call) == ColPart::kDecided);
            CHECK(d.col().posted().level_queues(UM_COLL_ALLGATHER) == std::vector<uint32_t>{7});
            REQUIRE(d.e->collective_end(call) == UM_OK);
            // Bad calls.
            CHECK(d.e->collective_begin(kP2P) == UM_ERR_ARG);
            CHECK(d.e->collective_end(coll_hint(static_cast<um_coll_t>(UM_COLL_COUNT), 1)) == UM_ERR_ARG);
            CHECK(d.e->collective_end(coll_hint(UM_COLL_SCAN, 1)) == UM_OK); // never begun: ignored
        }
    }
    SECTION("through the C interface; other backends ignore the calls") {
        char err[256];
        um_params_t p;
        um_params_init(&p);
        CHECK(p.theta == 100);
        CHECK(p.k_c == 8);
        CHECK(p.k_p == 8);
        for (const char *name : {"colpnp", "list"}) {
            um_engine_t *e = um_engine_create(name, 4, &p, err, sizeof err);
            REQUIRE(e != nullptr);
            const um_hint_t call = coll_hint(UM_COLL_BCAST, 8);
            CHECK(um_engine_collective_begin(e, &call) == UM_OK);
            CHECK(um_engine_collective_begin(e, nullptr) == UM_ERR_ARG);
            CHECK(um_engine_collective_end(e, &call) == UM_OK);
            um_engine_destroy(e);
        }
    }
}

TEST_CASE("seed 000: parameters out of range name the valid range", "[seed000]") {
    const auto with = [](int64_t theta, int64_t k_c, int64_t k_p) {
        um_params_t p = default_params();
        p.theta = theta;
        p.k_c = k_c;
        p.k_p = k_p;
        return p;
    };
    CHECK_THROWS_WITH(make_engine("pnp", 4, with(0, 8, 8)),
                      Catch::Contains("theta = 0") && Catch::Contains("1 .. 1048576"));
    CHECK_THROWS_WITH(make_engine("colpnp", 4, with(-3, 8, 8)), Catch::Contains("theta = -3"));
    CHECK_THROWS_WITH(make_engine("list+pnp", 4, with(1048577, 8, 8)), Catch::Contains("1 .. 1048576"));
    CHECK_THROWS_WITH(make_engine("col", 4, with(100, 0, 8)),
                      Catch::Contains("k_c = 0") && Catch::Contains("1 .. 1024"));
    CHECK_THROWS_WITH(make_engine("col+list", 4, with(100, -1, 8)), Catch::Contains("k_c = -1"));
    CHECK_THROWS_WITH(make_engine("colpnp", 4, with(100, 8, 0)),
                      Catch::Contains("k_p = 0") && Catch::Contains("1 .. 1024"));
    CHECK_THROWS_WITH(make_engine("pnp", 4, with(100, 8, 1025)), Catch::Contains("k_p = 1025"));
    // A backend checks only what it uses.
    CHECK_NOTHROW(make_engine("col", 4, with(0, 8, 0)));
    CHECK_NOTHROW(make_engine("pnp", 4, with(100, 0, 8)));
    CHECK_NOTHROW(make_engine("colpnp", 4, with(1, 1, 1)));
    char err[256];
    um_params_t p = with(100, 8, 0);
    CHECK(um_engine_create("list+pnp", 4, &p, err, sizeof err) == nullptr);
    CHECK(std::string(err).find("k_p = 0 is out of range; valid values are 1 .. 1024") != std::string::npos);
}

TEST_CASE("seed 000: the default differential run crosses theta and opens col levels", "[seed000]") {
    // The first operations of the differential test's own sequences (same
    // mixes, same seeds as its default run), checked against the model.
    const std::vector<Mix> mixes = standard_mixes();
    const auto find_mix = [&](const std::string &mix_name) -> size_t {
        for (size_t m = 0; m < mixes.size(); ++m) {
            if (mixes[m].name == mix_name) {
                return m;
            }
        }
        FAIL("no mix " << mix_name);
        return 0;
    };
    const uint64_t kDefaultSeed = 20191;
    const auto run = [&](const std::string &backend, size_t m, int ops) {
        auto e = make_engine(backend, mixes[m].comm_size, default_params());
        Oracle model(mixes[m].comm_size);
        Workload work(mixes[m], kDefaultSeed + m);
        for (int i = 0; i < ops; ++i) {
            const Step step = apply(*e, model, work.next(model));
            REQUIRE(step.got.handle == step.want);
        }
        return e;
    };
    const size_t hot = find_mix("hot-sources");
    for (const std::string &name : kWithPnp) {
        auto e = run(name, hot, 20000);
        const PnpPart &p = *pnp_of(*e);
        INFO(name);
        CHECK(p.posted().partners() > 0);
        CHECK(p.unexpected().partners() > 0);
        CHECK(p.posted().is_partner(0));
        CHECK(p.unexpected().is_partner(0));
        CHECK(p.unexpected().levels() >= 2);
    }
    const size_t calls = find_mix("collective-calls");
    for (const std::string &name : kWithCol) {
        auto e = run(name, calls, 20000);
        const ColPart &c = *col_of(*e);
        size_t levels = 0;
        for (uint16_t slot = 1; slot < UM_COLL_COUNT; ++slot) {
            levels += c.posted().level_queues(slot).size() + c.unexpected().level_queues(slot).size();
        }
        INFO(name);
        CHECK(levels > 0);
        CHECK(c.budget().used > 0);
    }
}

TEST_CASE("seed 000: random sequences with explicit calls, small theta and k match the model", "[seed000]") {
    for (const std::string &name : kSeed000) {
        for (const Mix &mix : standard_mixes()) {
            um_params_t p = default_params();
            p.theta = 5;
            p.k_c = 2;
            p.k_p = 2;
            auto e = make_engine(name, mix.comm_size, p);
            Oracle model(mix.comm_size);
            Workload work(mix, 99);
            std::mt19937 rng(5);
            std::vector<um_hint_t> open;
            for (int i = 0; i < 6000; ++i) {
                // Collective calls begin and end at random, sometimes overlapping.
                if (rng() % 50 == 0) {
                    if (!open.empty() && rng() % 2 == 0) {
                        REQUIRE(e->collective_end(open.back()) == UM_OK);
                        open.pop_back();
                    } else {
                        const um_hint_t c = coll_hint(static_cast<um_coll_t>(1 + rng() % (UM_COLL_COUNT - 1)),
                                                      1u << (rng() % 20));
                        REQUIRE(e->collective_begin(c) == UM_OK);
                        open.push_back(c);
                    }
                }
                const Step step = apply(*e, model, work.next(model));
                INFO(name << ", mix " << mix.name << ", op " << i);
                REQUIRE(step.got.handle == step.want);
            }
            const Snapshot snap = e->snapshot();
            REQUIRE(snap.posted.size() == model.posted().size());
            for (size_t i = 0; i < snap.posted.size(); ++i) {
                REQUIRE(snap.posted[i].handle == model.posted()[i].handle);
            }
            REQUIRE(snap.unexpected.size() == model.unexpected().size());
            for (size_t i = 0; i < snap.unexpected.size(); ++i) {
                REQUIRE(snap.unexpected[i].handle == model.unexpected()[i].handle);
            }
        }
    }
}

TEST_CASE("seed 000: the small hash map behind partners, buckets and tags", "[seed000]") {
    SmallMap<uint32_t> map;
    std::map<uint32_t, uint32_t> want;
    std::mt19937 rng(11);
    for (int i = 0; i < 200000; ++i) {
        // Keys from a small range collide and form long probe runs; erase
        // must keep every run reachable.
        const uint32_t key = static_cast<uint32_t>(-2 - static_cast<int32_t>(rng() % 300));
        if (rng() % 3 == 0) {
            map.erase(key);
            want.erase(key);
        } else {
            map.get(key, 0) += 1;
            want[key] += 1;
        }
        if (i % 997 == 0) {
            REQUIRE(map.size() == want.size());
            for (const auto &kv : want) {
                const uint32_t *v = map.find(kv.first);
                REQUIRE(v != nullptr);
                REQUIRE(*v == kv.second);
            }
        }
    }
    size_t seen = 0;
    map.for_each([&](uint32_t key, uint32_t value) {
        ++seen;
        CHECK(want.at(key) == value);
    });
    CHECK(seen == want.size());
    CHECK(map.find(12345) == nullptr);
}

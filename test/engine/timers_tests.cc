// The engine's timers (um_params_t.timers, timer_cutoff_ns; matching/engine.h,
// Timers): nothing counted when off, search and overhead time growing when
// on, the cutoff, parameter errors, and no change to what any backend matches.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "matching/registry.h"

using namespace ubermatch;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

um_params_t with_timers(int64_t on, int64_t cutoff_ns = 0) {
    um_params_t p = default_params();
    p.timers = on;
    p.timer_cutoff_ns = cutoff_ns;
    return p;
}

um_hint_t coll_hint(um_coll_t coll, uint32_t msg_size, uint32_t comm_size) {
    um_hint_t hint{};
    hint.coll = static_cast<uint16_t>(coll);
    hint.msg_size = msg_size;
    hint.comm_size = comm_size;
    return hint;
}

// A workload that makes colpnp restructure: point-to-point messages from a few
// hot sources past theta (partners), and two calls of a gather whose first
// call has deep searches (a level at the second call). Returns every handle
// the engine returned, in order.
std::vector<void *> run(Engine &e, int32_t n) {
    std::vector<void *> got;
    const um_hint_t p2p{};
    uintptr_t next = 1;
    um_match_t m{};
    for (int round = 0; round < 3; ++round) {
        // 400 unexpected messages, 60% from sources 1..3, then receives in reverse.
        for (int i = 0; i < 400; ++i) {
            const int32_t src = i % 5 < 3 ? 1 + i % 3 : 4 + i % (n - 4);
            REQUIRE(e.arrive(src, i, p2p, h(next++), &m) == UM_OK);
            got.push_back(m.handle);
        }
        for (int i = 399; i >= 0; --i) {
            const int32_t src = i % 5 < 3 ? 1 + i % 3 : 4 + i % (n - 4);
            REQUIRE(e.post_recv(src, i, p2p, h(next++), &m) == UM_OK);
            got.push_back(m.handle);
        }
        // A gather at rank 0: every rank's message arrives, then the receives in rank order.
        const um_hint_t g = coll_hint(UM_COLL_GATHER, 8, static_cast<uint32_t>(n));
        REQUIRE(e.collective_begin(g) == UM_OK);
        for (int32_t src = n - 1; src >= 1; --src) {
            REQUIRE(e.arrive(src, -15, g, h(next++), &m) == UM_OK);
            got.push_back(m.handle);
        }
        for (int32_t src = 1; src < n; ++src) {
            REQUIRE(e.post_recv(src, -15, g, h(next++), &m) == UM_OK);
            got.push_back(m.handle);
        }
        REQUIRE(e.probe(UM_ANY_SOURCE, UM_ANY_TAG, p2p, &m) == UM_OK);
        got.push_back(m.handle);
        REQUIRE(e.collective_end(g) == UM_OK);
    }
    return got;
}

const std::vector<std::string> kBackends = {"list", "perpeer", "colpnp", "col+list", "list+pnp", "pnp"};

} // namespace

TEST_CASE("timers: nothing counted when off", "[timers]") {
    CHECK(default_params().timers == 0);
    CHECK(default_params().timer_cutoff_ns == 0);
    for (const std::string &name : kBackends) {
        auto e = make_engine(name, 64, default_params());
        run(*e, 64);
        const um_stats_t s = e->stats();
        INFO(name);
        CHECK(s.p2p.searches > 0);
        CHECK(s.coll.searches > 0);
        CHECK(s.p2p.search_ns == 0);
        CHECK(s.p2p.posted_search_ns == 0);
        CHECK(s.coll.search_ns == 0);
        CHECK(s.coll.posted_search_ns == 0);
        CHECK(s.overhead_ns == 0);
        CHECK(s.timer_outliers == 0);
    }
}

TEST_CASE("timers: search and overhead time grow when on", "[timers]") {
    for (const std::string &name : kBackends) {
        INFO(name);
        auto e = make_engine(name, 64, with_timers(1));
        run(*e, 64);
        const um_stats_t a = e->stats();
        CHECK(a.p2p.search_ns > 0);
        CHECK(a.coll.search_ns > 0);
        CHECK(a.p2p.posted_search_ns <= a.p2p.search_ns);
        CHECK(a.coll.posted_search_ns <= a.coll.search_ns);
        CHECK(a.timer_outliers == 0);
        const bool adaptive = name != "list" && name != "perpeer";
        if (adaptive) {
            // Partners were extracted or a level opened: restructuring was timed.
            CHECK(a.dedicated_p2p + a.dedicated_coll > 0);
            CHECK(a.overhead_ns > 0);
        } else {
            CHECK(a.dedicated_p2p + a.dedicated_coll == 0);
            CHECK(a.overhead_ns == 0);
        }
        run(*e, 64);
        const um_stats_t b = e->stats();
        CHECK(b.p2p.search_ns > a.p2p.search_ns);
        CHECK(b.coll.search_ns > a.coll.search_ns);
        CHECK(b.overhead_ns >= a.overhead_ns);
    }
}

TEST_CASE("timers: dedicated queues by part stay within their caps", "[timers]") {
    auto e = make_engine("colpnp", 64, default_params());
    run(*e, 64);
    const um_stats_t s = e->stats();
    CHECK(s.dedicated_p2p > 0);
    CHECK(s.dedicated_coll > 0);
    CHECK(s.dedicated_p2p <= 64);  // floor(8 sqrt(64))
    CHECK(s.dedicated_coll <= 64);
    CHECK(s.queues == 6 + s.dedicated_p2p + s.dedicated_coll);
}

TEST_CASE("timers: the cutoff leaves long intervals out", "[timers]") {
    // 1 ns: every search over a deep list takes longer.
    auto e = make_engine("list", 8, with_timers(1, 1));
    um_match_t m{};
    for (uintptr_t i = 1; i <= 2000; ++i) {
        REQUIRE(e->arrive(1, static_cast<int32_t>(i), um_hint_t{}, h(i), &m) == UM_OK);
    }
    for (uintptr_t i = 0; i < 100; ++i) {
        REQUIRE(e->post_recv(1, 5000, um_hint_t{}, h(10000 + i), &m) == UM_OK); // misses: full scans
    }
    const um_stats_t s = e->stats();
    CHECK(s.timer_outliers >= 100);
    CHECK(s.p2p.search_ns < 100 * 2000); // the scans were left out
}

TEST_CASE("timers: the same matches whether on or off", "[timers]") {
    for (const Backend &b : backends()) {
        if (b.assertion != nullptr) {
            continue; // run() uses wildcards, which relaxed backends refuse
        }
        INFO(b.name);
        auto off = make_engine(b.name, 64, default_params());
        auto on = make_engine(b.name, 64, with_timers(1, 1000000));
        CHECK(run(*off, 64) == run(*on, 64));
        const Snapshot a = off->snapshot();
        const Snapshot c = on->snapshot();
        CHECK(a.posted.size() == c.posted.size());
        CHECK(a.unexpected.size() == c.unexpected.size());
    }
}

TEST_CASE("timers: parameters out of range name the valid range", "[timers]") {
    CHECK_THROWS_WITH(make_engine("list", 4, with_timers(2)),
                      Catch::Contains("timers = 2") && Catch::Contains("0 .. 1"));
    CHECK_THROWS_WITH(make_engine("colpnp", 4, with_timers(-1)), Catch::Contains("timers = -1"));
    CHECK_THROWS_WITH(make_engine("perpeer", 4, with_timers(1, -5)),
                      Catch::Contains("timer_cutoff_ns = -5") && Catch::Contains("0 .. 1000000000000"));
    char err[256];
    um_params_t p;
    um_params_init(&p);
    CHECK(p.timers == 0);
    p.timers = 7;
    CHECK(um_engine_create("bins", 4, &p, err, sizeof err) == nullptr);
    CHECK(std::string(err).find("timers = 7") != std::string::npos);
    p.timers = 1;
    um_engine_t *e = um_engine_create("colpnp", 4, &p, err, sizeof err);
    REQUIRE(e != nullptr);
    um_match_t m{};
    for (uintptr_t i = 1; i <= 200; ++i) {
        REQUIRE(um_engine_arrive(e, 1, 3, nullptr, h(2 * i), &m) == UM_OK);
    }
    for (uintptr_t i = 1; i <= 200; ++i) {
        REQUIRE(um_engine_post_recv(e, 1, 3, nullptr, h(2 * i + 1), &m) == UM_OK);
        CHECK(m.handle == h(2 * i));
    }
    um_stats_t s;
    um_engine_stats(e, &s);
    CHECK(s.p2p.search_ns > s.p2p.posted_search_ns);
    CHECK(s.p2p.posted_search_ns > 0);
    um_engine_destroy(e);
}

// Edge cases of the matching rules and of the interface, for every backend.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>

#include "matching/registry.h"
#include "matching/tailq_bins.h"
#include "matching/ubermatch_engine.h"

using namespace ubermatch;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

const um_hint_t kP2P{};

um_hint_t coll_hint() {
    um_hint_t hint{};
    hint.coll = UM_COLL_ALLREDUCE;
    return hint;
}

// Test helpers: each returns the handle matched, or nullptr.
struct Driver {
    std::unique_ptr<Engine> e;
    Driver(const std::string &backend, int32_t n) : e(make_engine(backend, n, default_params())) {}
    void *post(int32_t s, int32_t t, uintptr_t handle, const um_hint_t &hint = kP2P) {
        um_match_t m{};
        REQUIRE(e->post_recv(s, t, hint, h(handle), &m) == UM_OK);
        return m.handle;
    }
    void *arrive(int32_t s, int32_t t, uintptr_t handle, const um_hint_t &hint = kP2P) {
        um_match_t m{};
        REQUIRE(e->arrive(s, t, hint, h(handle), &m) == UM_OK);
        return m.handle;
    }
    void *probe(int32_t s, int32_t t, bool remove = false) {
        um_match_t m{};
        REQUIRE((remove ? e->mprobe(s, t, kP2P, &m) : e->probe(s, t, kP2P, &m)) == UM_OK);
        return m.handle;
    }
    bool cancel(int32_t s, int32_t t, uintptr_t handle) {
        bool removed = false;
        REQUIRE(e->cancel(s, t, h(handle), &removed) == UM_OK);
        return removed;
    }
};

std::vector<std::string> all_backends() {
    std::vector<std::string> names;
    for (const Backend &b : backends()) {
        if (b.assertion == nullptr) { // relaxed backends: relaxed_tests.cc
            names.emplace_back(b.name);
        }
    }
    return names;
}

} // namespace

TEST_CASE("empty queues", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            CHECK(d.probe(UM_ANY_SOURCE, UM_ANY_TAG) == nullptr);
            CHECK(d.probe(1, 3, true) == nullptr);
            CHECK_FALSE(d.cancel(0, 0, 7));
            CHECK(d.arrive(2, 5, 10) == nullptr);
            CHECK(d.e->stats().unexpected_len == 1);
            CHECK(d.post(2, 5, 11) == h(10));
            CHECK(d.e->stats().unexpected_len == 0);
            CHECK(d.e->stats().posted_len == 0);
        }
    }
}

TEST_CASE("a receive takes the earliest-arrived matching message", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            d.arrive(3, 1, 100);
            d.arrive(1, 1, 101);
            d.arrive(1, 2, 102);
            d.arrive(0, 1, 103);
            CHECK(d.probe(UM_ANY_SOURCE, 1) == h(100));
            CHECK(d.post(1, UM_ANY_TAG, 1) == h(101));
            CHECK(d.post(UM_ANY_SOURCE, UM_ANY_TAG, 2) == h(100));
            CHECK(d.post(UM_ANY_SOURCE, 1, 3) == h(103));
            CHECK(d.post(UM_ANY_SOURCE, UM_ANY_TAG, 4) == h(102));
        }
    }
}

TEST_CASE("a message goes to the earliest-posted matching receive", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            d.post(2, 7, 1);
            d.post(UM_ANY_SOURCE, 7, 2);
            d.post(2, UM_ANY_TAG, 3);
            d.post(2, 7, 4);
            CHECK(d.arrive(2, 7, 100) == h(1)); // exact, posted first
            CHECK(d.arrive(2, 7, 101) == h(2)); // the wildcard came before the later exact one
            CHECK(d.arrive(2, 9, 102) == h(3));
            CHECK(d.arrive(2, 7, 103) == h(4));
            CHECK(d.e->stats().posted_len == 0);
        }
    }
}

TEST_CASE("ANY_TAG never matches a negative (collective) tag", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            d.post(1, UM_ANY_TAG, 1);
            d.post(UM_ANY_SOURCE, UM_ANY_TAG, 2);
            CHECK(d.arrive(1, -12, 100, coll_hint()) == nullptr);
            CHECK(d.probe(UM_ANY_SOURCE, UM_ANY_TAG) == nullptr);
            CHECK(d.probe(1, -12) == h(100));
            CHECK(d.post(UM_ANY_SOURCE, -12, 3, coll_hint()) == h(100));
            CHECK(d.arrive(1, 0, 101) == h(1));
            const um_stats_t s = d.e->stats();
            CHECK(s.coll.searches == 2);
            CHECK(s.coll.matches == 1);
        }
    }
}

TEST_CASE("cancel removes a queued receive and nothing else", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            d.post(0, 1, 1);
            d.post(UM_ANY_SOURCE, 1, 2);
            CHECK(d.arrive(0, 1, 100) == h(1));
            CHECK_FALSE(d.cancel(0, 1, 1)); // already matched
            CHECK(d.cancel(UM_ANY_SOURCE, 1, 2));
            CHECK_FALSE(d.cancel(UM_ANY_SOURCE, 1, 2));
            CHECK(d.arrive(0, 1, 101) == nullptr);
            const um_stats_t s = d.e->stats();
            CHECK(s.cancels == 1);
            CHECK(s.posted_len == 0);
            CHECK(s.unexpected_len == 1);
        }
    }
}

TEST_CASE("probe leaves the message, mprobe takes it", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 2);
            d.arrive(1, 4, 100);
            CHECK(d.probe(1, 4) == h(100));
            CHECK(d.probe(1, 4) == h(100));
            CHECK(d.probe(UM_ANY_SOURCE, UM_ANY_TAG, true) == h(100));
            CHECK(d.probe(1, 4) == nullptr);
            CHECK(d.post(1, 4, 1) == nullptr);
        }
    }
}

TEST_CASE("bad arguments are refused and change nothing", "[unit]") {
    for (const std::string &name : all_backends()) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            d.post(1, 1, 1);
            um_match_t m{};
            CHECK(d.e->post_recv(4, 1, kP2P, h(2), &m) == UM_ERR_SOURCE);
            CHECK(d.e->post_recv(-2, 1, kP2P, h(2), &m) == UM_ERR_SOURCE);
            CHECK(d.e->arrive(UM_ANY_SOURCE, 1, kP2P, h(3), &m) == UM_ERR_SOURCE);
            CHECK(d.e->arrive(1, UM_ANY_TAG, kP2P, h(3), &m) == UM_ERR_TAG);
            CHECK(d.e->arrive(1, 1, kP2P, nullptr, &m) == UM_ERR_ARG);
            CHECK(d.e->probe(9, 1, kP2P, &m) == UM_ERR_SOURCE);
            bool removed = true;
            CHECK(d.e->cancel(9, 1, h(1), &removed) == UM_ERR_SOURCE);
            const um_stats_t s = d.e->stats();
            CHECK(s.posted_len == 1);
            CHECK(s.unexpected_len == 0);
            CHECK(d.arrive(1, 1, 100) == h(1));
        }
    }
}

TEST_CASE("search depth counts the elements compared", "[unit]") {
    for (const char *name : {"list", "perpeer"}) {
        DYNAMIC_SECTION(name) {
            Driver d(name, 4);
            for (uintptr_t i = 0; i < 5; ++i) {
                d.post(2, static_cast<int32_t>(10 + i), 1 + i);
            }
            um_match_t m{};
            REQUIRE(d.e->arrive(2, 14, kP2P, h(100), &m) == UM_OK);
            CHECK(m.handle == h(5));
            CHECK(m.inspected == 5);
            CHECK(d.e->stats().p2p.max_inspected == 5);
        }
    }
    SECTION("bins hashes an exact key past the others") {
        Driver d("bins", 4);
        for (uintptr_t i = 0; i < 64; ++i) {
            d.post(2, static_cast<int32_t>(i), 1 + i);
        }
        um_match_t m{};
        REQUIRE(d.e->arrive(2, 63, kP2P, h(100), &m) == UM_OK);
        CHECK(m.handle == h(64));
        CHECK(m.inspected < 8);
    }
}

TEST_CASE("queues and bytes are reported", "[unit]") {
    Driver list("list", 64);
    Driver perpeer("perpeer", 64);
    Driver bins("bins", 64);
    CHECK(list.e->stats().queues == 2);
    CHECK(perpeer.e->stats().queues == 2 * 64 + 1);
    CHECK(bins.e->stats().queues == 2 * 256 + 2);
    CHECK(perpeer.e->stats().bytes > list.e->stats().bytes);
    const uint64_t before = list.e->stats().bytes;
    for (uintptr_t i = 0; i < 1000; ++i) {
        list.post(1, 1, 1 + i);
    }
    CHECK(list.e->stats().bytes > before + 1000 * 32);
    CHECK(list.e->stats().posted_max == 1000);
}

TEST_CASE("unknown backends and bad parameters name the valid choices", "[unit]") {
    um_params_t p = default_params();
    CHECK_THROWS_WITH(make_engine("hash", 4, p),
                      Catch::Contains("unknown matching backend 'hash'") &&
                          Catch::Contains("list, perpeer, bins"));
    CHECK_THROWS_WITH(make_engine("list", 0, p), Catch::Contains("at least 1"));
    p.bins = 0;
    CHECK_THROWS_WITH(make_engine("bins", 4, p), Catch::Contains("bins = 0") &&
                                                     Catch::Contains("1 .. 1048576"));
    p.bins = -5;
    CHECK_THROWS_AS(make_engine("bins", 4, p), std::invalid_argument);
    p.bins = 3; // any count works, powers of two or not
    CHECK_NOTHROW(make_engine("bins", 4, p));
}

TEST_CASE("every parameter is checked whatever the backend when asked (um_params_check)", "[unit]") {
    char err[256] = {};
    um_params_t p = default_params();
    CHECK(um_params_check(&p, err, sizeof err) == UM_OK);
    CHECK(um_params_check(nullptr, err, sizeof err) == UM_OK); // the defaults
    const auto refused = [&](void (*set)(um_params_t &), const char *says) {
        um_params_t q = default_params();
        set(q);
        CHECK_NOTHROW(make_engine("list", 4, q)); // list uses none of them
        err[0] = '\0';
        CHECK(um_params_check(&q, err, sizeof err) == UM_ERR_ARG);
        CHECK_THAT(std::string(err), Catch::Contains(says));
    };
    refused([](um_params_t &q) { q.bins = -3; }, "bins = -3 is out of range; valid values are 1 .. 1048576");
    refused([](um_params_t &q) { q.theta = 0; }, "theta = 0 is out of range");
    refused([](um_params_t &q) { q.k_c = 1025; }, "k_c = 1025 is out of range; valid values are 1 .. 1024");
    refused([](um_params_t &q) { q.k_p = 0; }, "k_p = 0 is out of range");
    refused([](um_params_t &q) { q.index_at = 1; }, "index_at = 1 is out of range");
    refused([](um_params_t &q) { q.list_at = q.index_at; }, "list_at = 8 is out of range; valid values are 0 .. 7");
    refused([](um_params_t &q) { q.max_index_bytes = -1; }, "max_index_bytes = -1 is out of range");
    refused([](um_params_t &q) { q.compact_threshold = 1.5; }, "compact_threshold");
    refused([](um_params_t &q) { q.kernel = "sse9"; }, "valid kernels are: auto, avx512, avx2, scalar");
}

TEST_CASE("the C interface", "[unit]") {
    REQUIRE(um_backend_count() == backends().size());
    CHECK(std::string(um_backend_name(0)) == "list");
    CHECK(um_backend_name(um_backend_count()) == nullptr);
    CHECK(std::string(um_backend_names()) == backend_names());

    char err[256];
    um_params_t p;
    um_params_init(&p);
    CHECK(um_engine_create("nope", 4, &p, err, sizeof err) == nullptr);
    CHECK(std::string(err).find("valid backends are: list") != std::string::npos);

    um_engine_t *e = um_engine_create("perpeer", 4, &p, err, sizeof err);
    REQUIRE(e != nullptr);
    CHECK(std::string(um_engine_backend(e)) == "perpeer");
    um_match_t m{};
    CHECK(um_engine_post_recv(e, UM_ANY_SOURCE, 5, nullptr, h(1), &m) == UM_OK);
    CHECK(m.handle == nullptr);
    int removed = 0;
    CHECK(um_engine_cancel(e, UM_ANY_SOURCE, 5, h(1), &removed) == UM_OK);
    CHECK(removed == 1);
    CHECK(um_engine_arrive(e, 3, 5, nullptr, h(100), &m) == UM_OK);
    CHECK(um_engine_probe(e, 3, UM_ANY_TAG, nullptr, &m) == UM_OK);
    CHECK(m.handle == h(100));
    CHECK(um_engine_mprobe(e, 3, 5, nullptr, &m) == UM_OK);
    CHECK(m.handle == h(100));
    um_stats_t s;
    um_engine_stats(e, &s);
    CHECK(s.unexpected_len == 0);
    CHECK(s.cancels == 1);
    CHECK(std::string(um_status_string(UM_ERR_TAG)).find("ANY_TAG") != std::string::npos);
    CHECK(std::string(um_coll_name(UM_COLL_ALLREDUCE)) == "allreduce");
    um_engine_destroy(e);
}

TEST_CASE("dump prints statistics and both queues in order", "[unit]") {
    Driver d("bins", 4);
    d.post(1, 3, 1);
    d.arrive(2, 8, 100);
    d.arrive(0, 9, 101);
    std::ostringstream out;
    d.e->dump(out);
    const std::string s = out.str();
    CHECK(s.find("engine bins") != std::string::npos);
    CHECK(s.find("posted (1): [src 1 tag 3") != std::string::npos);
    CHECK(s.find("unexpected (2): [src 2 tag 8 seq 2] [src 0 tag 9 seq 3]") != std::string::npos);
}

TEST_CASE("two engines' statistics add up as one engine's", "[unit]") {
    Driver a("bins", 4), b("bins", 4);
    a.post(1, 5, 1);
    a.post(2, 5, 2);
    a.arrive(1, 5, 10); // matches receive 1 after inspecting 1
    b.arrive(3, 7, 20);
    b.arrive(3, 8, 21);
    b.post(3, 8, 3); // takes message 21
    b.post(0, -20, 4, coll_hint());
    const um_stats_t sa = a.e->stats(), sb = b.e->stats();
    um_stats_t s = sa;
    add_stats(s, sb);
    CHECK(s.posted_len == sa.posted_len + sb.posted_len);
    CHECK(s.posted_len == 2);
    CHECK(s.unexpected_len == 1);
    CHECK(s.posted_max == sa.posted_max + sb.posted_max);
    CHECK(s.queues == sa.queues + sb.queues);
    CHECK(s.bytes == sa.bytes + sb.bytes);
    CHECK(s.p2p.searches == sa.p2p.searches + sb.p2p.searches);
    CHECK(s.p2p.searches == 6);
    CHECK(s.p2p.matches == 2);
    CHECK(s.coll.searches == 1);
    CHECK(s.p2p.inspected == sa.p2p.inspected + sb.p2p.inspected);
    CHECK(s.p2p.max_inspected == std::max(sa.p2p.max_inspected, sb.p2p.max_inspected));
    CHECK(s.kernel == sa.kernel);
}

// Tail queues in bins, one thread: the order across bins that the concurrent
// checker (tailq_concurrent.cc) can only sample.
TEST_CASE("tail-queue bins: wildcards across bins, the ordered mode and back, bad input", "[tailq]") {
    using ubermatch::TailBins;
    const um_params_t params = ubermatch::default_params();
    CHECK_THROWS_WITH(TailBins("list", 4, params, 0), Catch::Contains("valid values are 1 .. 256"));
    CHECK_THROWS_WITH(TailBins("list", 4, params, 257), Catch::Contains("bins = 257"));
    TailBins q("auto", 4, params, 8);
    const um_hint_t h{};
    int r[6], m[6];
    um_match_t out{};
    // Messages of source 1 then 0, tags spread over bins: ANY_SOURCE takes the
    // oldest, ANY_TAG of source 0 its oldest.
    REQUIRE(q.arrive(1, 7, h, &m[0], &out) == UM_OK);
    REQUIRE(q.arrive(0, 9, h, &m[1], &out) == UM_OK);
    REQUIRE(q.arrive(0, 3, h, &m[2], &out) == UM_OK);
    REQUIRE(out.handle == nullptr);
    REQUIRE(q.post_recv(UM_ANY_SOURCE, UM_ANY_TAG, h, &r[0], &out) == UM_OK);
    CHECK(out.handle == &m[0]);
    REQUIRE(q.post_recv(0, UM_ANY_TAG, h, &r[1], &out) == UM_OK);
    CHECK(out.handle == &m[1]);
    REQUIRE(q.probe(UM_ANY_SOURCE, 3, h, &out) == UM_OK);
    CHECK(out.handle == &m[2]);
    REQUIRE(q.mprobe(0, 3, h, &out) == UM_OK);
    CHECK(out.handle == &m[2]);
    // An exact receive in its bin, then a wildcard that waits: a later exact
    // receive of the same key queues behind the wildcard, and arrivals take
    // the bin's receive first, then W's in order.
    REQUIRE(q.post_recv(2, 5, h, &r[2], &out) == UM_OK);
    const uint64_t before = q.ordered_calls();
    REQUIRE(q.post_recv(UM_ANY_SOURCE, 5, h, &r[3], &out) == UM_OK);
    REQUIRE(q.post_recv(2, 5, h, &r[4], &out) == UM_OK);
    CHECK(out.handle == nullptr);
    CHECK(q.stats().posted_len == 3);
    for (int *want : {&r[2], &r[3], &r[4]}) {
        REQUIRE(q.arrive(2, 5, h, &m[3], &out) == UM_OK);
        CHECK(out.handle == want);
    }
    CHECK(q.ordered_calls() > before);
    // W empty: exact calls go to their bins again, under no other bin's gate.
    const uint64_t after = q.ordered_calls();
    REQUIRE(q.post_recv(3, 1, h, &r[5], &out) == UM_OK);
    REQUIRE(q.arrive(3, 1, h, &m[4], &out) == UM_OK);
    CHECK(out.handle == &r[5]);
    CHECK(q.ordered_calls() == after);
    // Cancel finds a waiting wildcard in W; bad sources are refused.
    REQUIRE(q.post_recv(UM_ANY_SOURCE, 11, h, &r[0], &out) == UM_OK);
    bool removed = false;
    REQUIRE(q.cancel(UM_ANY_SOURCE, 11, &r[0], &removed) == UM_OK);
    CHECK(removed);
    CHECK(q.post_recv(4, 1, h, &r[1], &out) == UM_ERR_SOURCE);
    CHECK(q.post_recv(UM_ANY_SOURCE - 1, UM_ANY_TAG, h, &r[1], &out) == UM_ERR_SOURCE);
    CHECK(q.arrive(0, UM_ANY_TAG, h, &m[5], &out) == UM_ERR_TAG);
    const ubermatch::Snapshot snap = q.snapshot();
    CHECK(snap.posted.empty());
    CHECK(snap.unexpected.empty());
}

// The `auto` backend: when it changes form (thresholds, hysteresis), what the
// memory bound does, that collective elements stay apart, that an indexed
// queue searches in O(1) for exact keys, and that its parameters are checked.
#include <catch2/catch.hpp>

#include <string>

#include "matching/registry.h"
#include "matching/ubermatch_engine.h"

using namespace ubermatch;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

const um_hint_t kP2P{};

struct Auto {
    std::unique_ptr<Engine> e;
    explicit Auto(const um_params_t &p = default_params(), int32_t n = 64)
        : e(make_engine("auto", n, p)) {}
    um_match_t post(int32_t s, int32_t t, uintptr_t handle) {
        um_match_t m{};
        REQUIRE(e->post_recv(s, t, kP2P, h(handle), &m) == UM_OK);
        return m;
    }
    um_match_t arrive(int32_t s, int32_t t, uintptr_t handle) {
        um_match_t m{};
        REQUIRE(e->arrive(s, t, kP2P, h(handle), &m) == UM_OK);
        return m;
    }
    um_stats_t stats() const { return e->stats(); }
};

} // namespace

TEST_CASE("auto: a queue is indexed when a search compares index_at elements, a list again at list_at",
          "[auto]") {
    um_params_t p = default_params();
    p.index_at = 16;
    p.list_at = 4;
    Auto a(p);
    for (int i = 0; i < 40; ++i) {
        a.post(1, i, 100 + i);
    }
    CHECK(a.stats().indexed == 0); // length alone indexes nothing
    for (int i = 0; i < 10; ++i) {
        CHECK(a.arrive(1, i, 1).handle == h(100 + i)); // matches at the head
    }
    CHECK(a.stats().indexed == 0);
    CHECK(a.arrive(1, 30, 1).inspected == 21); // a search 21 deep
    CHECK(a.stats().indexed == 1);
    CHECK(a.stats().reshapes == 1);
    CHECK(a.stats().index_bytes > 0);
    CHECK(a.arrive(1, 39, 1).inspected == 1); // one probe now
    // Hysteresis: below index_at but above list_at it stays indexed.
    for (int i = 10; i < 33; ++i) {
        if (i != 30) {
            CHECK(a.arrive(1, i, 1).handle == h(100 + i));
        }
    }
    CHECK(a.stats().posted_len == 6);
    CHECK(a.arrive(1, 33, 1).handle == h(133));
    CHECK(a.stats().indexed == 1); // 5 left
    CHECK(a.arrive(1, 34, 1).handle == h(134));
    CHECK(a.stats().indexed == 0); // 4 left: list_at
    CHECK(a.stats().reshapes == 2);
    CHECK(a.stats().index_bytes == 0);
    // Hovering around one threshold changes nothing.
    for (int i = 0; i < 10; ++i) {
        a.post(2, 0, 200);
        CHECK(a.arrive(2, 0, 2).handle == h(200));
    }
    CHECK(a.stats().reshapes == 2);
}

// index_rent: the deep searches of a list must compare index_rent times its
// length before it is indexed, counted afresh each time the queue is short
// again (fds: a queue of messages that fills and drains every step, passed by
// one or two receives on the way, stays a list; 0 indexes at the first).
TEST_CASE("auto: index_rent indexes a list once its deep searches compared that many lengths", "[auto]") {
    constexpr int kDepth = 64;
    for (int64_t rent : {0, 4}) {
        INFO("index_rent " << rent);
        um_params_t p = default_params();
        p.index_rent = rent;
        Auto a(p);
        uint64_t reshapes = 0;
        for (int step = 0; step < 3; ++step) {
            INFO("step " << step);
            for (int i = 0; i < kDepth; ++i) {
                CHECK(a.arrive(1, i, 100 + i).handle == nullptr);
            }
            // Two receives that pass every message: two lengths compared, fewer than four ...
            for (int k = 0; k < 2; ++k) {
                CHECK(a.post(1, 1000 + k, 900 + k).inspected == (rent == 0 && k == 1 ? 0 : kDepth));
                CHECK(a.stats().indexed == (rent == 0 ? 1 : 0));
            }
            // ... the rest matched at the head: the queue drains to list_at.
            for (int i = 0; i < kDepth; ++i) {
                CHECK(a.post(1, i, 1).handle == h(100 + i));
            }
            CHECK(a.stats().indexed == 0);
            // Step after step: 2 changes of form at rent 0, none at 4 (the count starts again).
            reshapes += rent == 0 ? 2 : 0;
            CHECK(a.stats().reshapes == reshapes);
            for (int k = 0; k < 2; ++k) { // the two receives take their messages
                CHECK(a.arrive(1, 1000 + k, 1).handle == h(900 + k));
            }
        }
        // Searches that keep passing the queue index it once they compared 4 lengths.
        for (int i = 0; i < kDepth; ++i) {
            a.arrive(1, i, 100 + i);
        }
        for (int k = 0; k < 4; ++k) {
            CHECK(a.stats().indexed == (rent == 0 && k > 0 ? 1 : 0));
            a.post(1, 2000 + k, 900 + k);
        }
        CHECK(a.stats().indexed == 1);
    }
}

// index_rent -1 (the default): a queue learns from its last cycle whether its
// index paid off. One that served only its oldest element (fds: messages
// taken at the head once a receive has passed them all) waits for a rent of
// 4 lengths next time; one whose searches found elements deep in it (taken
// in reverse order here) is indexed at once again. Both sides of the engine.
TEST_CASE("auto: a queue learns its rent from whether its last index paid off", "[auto]") {
    constexpr int kDepth = 64;
    for (const bool posted : {false, true}) {
        for (const bool reverse : {false, true}) {
            INFO((posted ? "posted" : "unexpected") << (reverse ? ", taken newest first" : ", taken at the head"));
            Auto a; // default_params(): index_rent -1
            // queue: what sits in the queue; take: the other side's element.
            const auto queue = [&](int32_t tag, uintptr_t id) {
                return posted ? a.post(1, tag, id) : a.arrive(1, tag, id);
            };
            const auto take = [&](int32_t tag, uintptr_t id) {
                return posted ? a.arrive(1, tag, id) : a.post(1, tag, id);
            };
            uint64_t reshapes = 0;
            for (int step = 0; step < 3; ++step) {
                INFO("step " << step);
                for (int i = 0; i < kDepth; ++i) {
                    CHECK(queue(i, 100 + i).handle == nullptr);
                }
                // Two searches that pass the whole queue: fewer than 4 lengths compared.
                for (int k = 0; k < 2; ++k) {
                    take(1000 + k, 900 + k);
                }
                // Indexed at the first deep search in step 0, and in every step
                // while the index pays off; in none after an index served only heads.
                const bool indexed = step == 0 || reverse;
                CHECK(a.stats().indexed == (indexed ? 1 : 0));
                for (int i = 0; i < kDepth; ++i) {
                    const int tag = reverse ? kDepth - 1 - i : i;
                    CHECK(take(tag, 1).handle == h(100 + static_cast<uintptr_t>(tag)));
                }
                CHECK(a.stats().indexed == 0);
                reshapes += indexed ? 2 : 0;
                CHECK(a.stats().reshapes == reshapes);
                for (int k = 0; k < 2; ++k) { // the passing searches' elements leave
                    CHECK(queue(1000 + k, 1).handle == h(900 + static_cast<uintptr_t>(k)));
                }
            }
        }
    }
}

// A posted queue stops keeping its posting order once its index has paid
// off; going back to a list then sorts by posting order, and the list
// matches in it, wildcards included.
TEST_CASE("auto: a learnt index that stopped tracking goes back to a list in posting order", "[auto]") {
    Auto a;
    constexpr int kDepth = 64;
    for (int i = 0; i < kDepth; ++i) {
        a.post(1, i, 100 + static_cast<uintptr_t>(i));
    }
    a.post(UM_ANY_SOURCE, 5000, 7000); // behind them: both match (1, 5000)
    a.post(1, 5000, 7001);
    for (int i = kDepth - 1; i >= 8; --i) { // newest first: far past the oldest, paid off
        CHECK(a.arrive(1, i, 1).handle == h(100 + static_cast<uintptr_t>(i)));
    }
    CHECK(a.stats().indexed == 1);
    a.post(UM_ANY_SOURCE, UM_ANY_TAG, 7002); // into the index after tracking stopped
    for (int i = 0; i < 7; ++i) { // down to list_at (4): a list again
        CHECK(a.arrive(1, i, 1).handle == h(100 + static_cast<uintptr_t>(i)));
    }
    CHECK(a.stats().indexed == 0);
    CHECK(a.arrive(1, 5000, 1).handle == h(7000)); // posting order kept
    CHECK(a.arrive(1, 5000, 1).handle == h(7001));
    CHECK(a.arrive(2, 77, 1).handle == h(7002));
    CHECK(a.arrive(1, 7, 1).handle == h(107));
    CHECK(a.stats().posted_len == 0);
}

TEST_CASE("auto: an exact arrival behind a deep indexed queue compares one element", "[auto]") {
    Auto a;
    for (int i = 0; i < 4096; ++i) {
        a.post(3, i, 1000 + i);
    }
    CHECK(a.arrive(3, 4000, 9).inspected == 4001); // a list's search, which indexes it
    const um_match_t m = a.arrive(3, 4001, 9);
    CHECK(m.handle == h(5001));
    CHECK(m.inspected == 1);
    // Unexpected side: an exact receive probes its key.
    for (int i = 0; i < 4096; ++i) {
        a.arrive(5, i, 20000 + i);
    }
    CHECK(a.post(5, 4095, 7).inspected == 4096);
    const um_match_t r = a.post(5, 4094, 7);
    CHECK(r.handle == h(24094));
    CHECK(r.inspected == 1);
}

TEST_CASE("auto: an earlier wildcard beats a later exact receive, and the reverse", "[auto]") {
    Auto a;
    for (int i = 0; i < 100; ++i) {
        a.post(UM_ANY_SOURCE, 1000 + i, 1 + i); // wildcards, never matched here
    }
    a.post(UM_ANY_SOURCE, 7, 500); // wildcard first
    a.post(2, 7, 501);             // then exact
    a.post(2, 7, 502);
    a.post(UM_ANY_SOURCE, 7, 503);
    CHECK(a.arrive(2, 7, 99999).handle == h(500)); // 101 deep: indexes the posted queue
    CHECK(a.stats().indexed == 1);
    CHECK(a.arrive(2, 7, 99999).handle == h(501));
    CHECK(a.arrive(2, 7, 99999).handle == h(502));
    CHECK(a.arrive(2, 7, 99999).handle == h(503));
    // Unexpected: a wildcard receive takes the earliest of every key.
    for (int i = 0; i < 64; ++i) {
        a.arrive(i % 8, 50 + i % 3, 700 + i);
    }
    CHECK(a.post(UM_ANY_SOURCE, 51, 99999).handle == h(701));
    CHECK(a.post(4, UM_ANY_TAG, 99999).handle == h(704));
    CHECK(a.post(4, UM_ANY_TAG, 99999).handle == h(712));
    CHECK(a.post(1, 51, 99999).handle == h(725)); // 701 went to the wildcard
}

TEST_CASE("auto: collective elements are kept apart", "[auto]") {
    {
        // In list form: a point-to-point arrival does not walk the collective receives
        // posted before its own (one shared list would compare all 21).
        Auto l;
        for (int i = 0; i < 20; ++i) {
            l.post(i % 8, -5, 100 + i);
        }
        l.post(1, 3, 9);
        const um_match_t m = l.arrive(1, 3, 1);
        CHECK(m.handle == h(9));
        CHECK(m.inspected == 1);
        CHECK(l.stats().indexed == 0);
    }
    Auto a;
    for (int i = 0; i < 64; ++i) {
        a.post(i % 8, -5, 100 + i); // collective tag
    }
    CHECK(a.arrive(7, -6, 55).inspected == 64); // no match: a full scan indexes that queue
    CHECK(a.stats().indexed == 1);                // the collective posted queue only
    CHECK(a.arrive(7, -5, 56).handle == h(107));
    a.post(1, 3, 9);
    CHECK(a.arrive(1, 3, 1).handle == h(9));
    CHECK(a.arrive(1, 3, 1).inspected == 0); // nothing point-to-point queued: no search
    // ANY_TAG never takes a collective message.
    a.arrive(2, -7, 77);
    CHECK(a.post(2, UM_ANY_TAG, 1).handle == nullptr);
    CHECK(a.post(2, -7, 2).handle == h(77));
}

TEST_CASE("auto: max_index_bytes keeps queues lists and is counted", "[auto]") {
    um_params_t p = default_params();
    p.max_index_bytes = 0;
    Auto a(p);
    for (int i = 0; i < 1000; ++i) {
        a.post(1, i, 1 + i);
    }
    for (int i = 999; i > 900; --i) {
        CHECK(a.arrive(1, i, 99999).handle == h(1 + i)); // deep searches
    }
    CHECK(a.stats().indexed == 0);
    CHECK(a.stats().index_bytes == 0);
    CHECK(a.stats().memory_limited > 0);
    CHECK(a.stats().memory_limited < 10); // retried at doubling depths, not every search

    // A bound that lets a queue index, then stops it growing past the bound.
    p.max_index_bytes = 64 << 10;
    Auto b(p);
    for (int i = 0; i < 20000; ++i) {
        b.arrive(2, i, 1 + i);
        if (i % 64 == 63) {
            CHECK(b.post(2, i - 32, 99999).handle == h(i - 31)); // a search 32 deep
        }
        CHECK(b.stats().index_bytes <= uint64_t{64} << 10);
    }
    CHECK(b.stats().memory_limited > 0);
    CHECK(b.stats().reshapes >= 2); // indexed, then a list when the bound was reached
    CHECK(b.post(2, 12345, 99999).handle == h(12346));
}

TEST_CASE("auto: cancel finds exact and wildcard receives in either form", "[auto]") {
    for (const int64_t index_at : {2, 1000}) {
        um_params_t p = default_params();
        p.index_at = index_at;
        p.list_at = 1;
        Auto a(p);
        a.post(1, 1, 11);
        a.post(UM_ANY_SOURCE, 1, 12);
        a.post(1, UM_ANY_TAG, 13);
        a.post(1, 1, 14);
        bool removed = false;
        REQUIRE(a.e->cancel(UM_ANY_SOURCE, 1, h(12), &removed) == UM_OK);
        CHECK(removed);
        REQUIRE(a.e->cancel(1, 1, h(11), &removed) == UM_OK);
        CHECK(removed);
        REQUIRE(a.e->cancel(1, 1, h(11), &removed) == UM_OK);
        CHECK(!removed);
        CHECK(a.arrive(1, 1, 99999).handle == h(13));
        CHECK(a.arrive(1, 1, 99999).handle == h(14));
        CHECK(a.stats().posted_len == 0);
    }
}

TEST_CASE("auto: parameters out of range name the valid range", "[auto]") {
    const auto error_of = [](const um_params_t &p) {
        try {
            make_engine("auto", 4, p);
        } catch (const std::invalid_argument &e) {
            return std::string(e.what());
        }
        return std::string();
    };
    um_params_t p = default_params();
    p.index_at = 1;
    CHECK(error_of(p) == "parameter index_at = 1 is out of range; valid values are 2 .. 1048576");
    p = default_params();
    p.list_at = p.index_at;
    CHECK(error_of(p) == "parameter list_at = 8 is out of range; valid values are 0 .. 7");
    p = default_params();
    p.max_index_bytes = -1;
    CHECK(error_of(p).find("parameter max_index_bytes = -1 is out of range") == 0);
    p = default_params();
    p.index_rent = -2;
    CHECK(error_of(p) == "parameter index_rent = -2 is out of range; valid values are -1 .. 1048576");
    p = default_params();
    p.kernel = "sse9";
    CHECK(error_of(p).find("auto, avx512, avx2, scalar") != std::string::npos);
}

TEST_CASE("auto: block filters skip wildcard blocks that cannot match", "[auto]") {
    Auto a;
    for (int i = 0; i < 4096; ++i) {
        a.post(UM_ANY_SOURCE, 1000 + i, 1 + i); // ANY_SOURCE, other tags
    }
    a.arrive(2, 8, 4); // no match: a full scan, which indexes the posted queue
    a.post(1, 7, 9999);
    const um_match_t m = a.arrive(1, 7, 5);
    CHECK(m.handle == h(9999));
    CHECK(m.inspected < 4096 / 4); // a full scan would compare all 4096
    // A tag that one block holds: found, in posting order, however the bits fold.
    for (const int tag : {1000, 3095, 5095}) {
        const um_match_t w = a.arrive(3, tag, 6);
        CHECK(w.handle == h(static_cast<uintptr_t>(tag - 999)));
    }
    // Unexpected side: a wildcard receive skips blocks of other sources.
    for (int i = 0; i < 4096; ++i) {
        a.arrive(2, 50000 + i, 20000 + i);
    }
    a.arrive(3, 60000, 777);
    a.post(4, UM_ANY_TAG, 9); // no match: a full scan, which indexes the unexpected queue
    const um_match_t r = a.post(3, UM_ANY_TAG, 8);
    CHECK(r.handle == h(777));
    CHECK(r.inspected < 4096 / 4);
}

TEST_CASE("auto: a receive with both wildcards takes the oldest unexpected message in one step", "[auto]") {
    Auto a;
    for (int i = 0; i < 4096; ++i) {
        a.arrive(i % 16, i, 1 + static_cast<uintptr_t>(i)); // unexpected, each its own tag
    }
    CHECK(a.post(5, 99999, 9000).handle == nullptr); // no match after a full walk: indexed
    // Exact receives take the first 100 messages and one in the middle.
    for (int i = 0; i < 100; ++i) {
        CHECK(a.post(i % 16, i, 10000 + static_cast<uintptr_t>(i)).handle == h(1 + static_cast<uintptr_t>(i)));
    }
    CHECK(a.post(2000 % 16, 2000, 20000).handle == h(2001));
    // The oldest left is message 100: taken with one comparison, not a walk
    // past the places the taken messages held.
    const um_match_t any = a.post(UM_ANY_SOURCE, UM_ANY_TAG, 30000);
    CHECK(any.handle == h(101));
    CHECK(any.inspected == 1);
    // Arrival order holds after the taken ones: ANY_SOURCE/ANY_TAG receives
    // and exact ones interleaved still get the oldest eligible message.
    CHECK(a.post(UM_ANY_SOURCE, UM_ANY_TAG, 30001).handle == h(102));
    CHECK(a.post(UM_ANY_SOURCE, 103, 30002).handle == h(104));
    CHECK(a.post(103 % 16, UM_ANY_TAG, 30003).handle == h(104 + 16)); // 103 was taken: the next of its source
    CHECK(a.post(UM_ANY_SOURCE, UM_ANY_TAG, 30004).handle == h(103));
}

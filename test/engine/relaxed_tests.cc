// Issue 14: the relaxed backends' refusals (UM_ERR_ASSERTION) and what they
// still owe: nothing queued lost, the matches MPI would make.
#include <catch2/catch.hpp>

#include <cstring>

#include "matching/registry.h"
#include "matching/ubermatch_engine.h"

using namespace ubermatch;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }
const um_hint_t kP2P{};

int post(Engine &e, int32_t s, int32_t t, uintptr_t handle, void **matched = nullptr) {
    um_match_t m{};
    const int rc = e.post_recv(s, t, kP2P, h(handle), &m);
    if (matched != nullptr) {
        *matched = m.handle;
    }
    return rc;
}

int arrive(Engine &e, int32_t s, int32_t t, uintptr_t handle, void **matched = nullptr) {
    um_match_t m{};
    const int rc = e.arrive(s, t, kP2P, h(handle), &m);
    if (matched != nullptr) {
        *matched = m.handle;
    }
    return rc;
}

int probe(Engine &e, int32_t s, int32_t t, bool remove) {
    um_match_t m{};
    return remove ? e.mprobe(s, t, kP2P, &m) : e.probe(s, t, kP2P, &m);
}

} // namespace

TEST_CASE("relaxed backends name their assertion; full ones none", "[relaxed]") {
    int relaxed = 0;
    for (const Backend &b : backends()) {
        if (b.assertion != nullptr) {
            ++relaxed;
            CHECK(std::strstr(b.description, "assert") != nullptr);
        }
    }
    CHECK(relaxed == 4);
    CHECK(std::strstr(um_status_string(UM_ERR_ASSERTION), "mpi_assert_no_any_source") != nullptr);
}

TEST_CASE("a wildcard the assertion excludes is refused and the queues stay", "[relaxed]") {
    struct Case {
        const char *backend;
        bool any_tag_refused;
    };
    for (const Case c : {Case{"nosource", false}, Case{"nosource-nounexp", false},
                         Case{"exact", true}, Case{"exact-nounexp", true}}) {
        DYNAMIC_SECTION(c.backend) {
            auto e = make_engine(c.backend, 4, default_params());
            REQUIRE(post(*e, 1, 7, 100) == UM_OK); // queued receive
            CHECK(post(*e, UM_ANY_SOURCE, 7, 101) == UM_ERR_ASSERTION);
            CHECK(probe(*e, UM_ANY_SOURCE, 7, false) == UM_ERR_ASSERTION);
            CHECK(probe(*e, UM_ANY_SOURCE, 7, true) == UM_ERR_ASSERTION);
            CHECK((post(*e, 1, UM_ANY_TAG, 102) == UM_ERR_ASSERTION) == c.any_tag_refused);
            const um_stats_t s = e->stats();
            CHECK(s.posted_len == (c.any_tag_refused ? 1u : 2u));
            CHECK(s.p2p.searches == (c.any_tag_refused ? 1u : 2u)); // refusals are not searches
            // The queued receive is still there and takes its message.
            void *m = nullptr;
            REQUIRE(arrive(*e, 1, 7, 200, &m) == UM_OK);
            CHECK(m == h(100));
            // A malformed call is still reported as malformed, not as the assertion.
            um_match_t out{};
            CHECK(e->post_recv(UM_ANY_SOURCE, 7, kP2P, nullptr, &out) == UM_ERR_ARG);
            CHECK(e->post_recv(9, 7, kP2P, h(103), &out) == UM_ERR_SOURCE);
        }
    }
}

TEST_CASE("no-unexpected backends refuse an arrival no receive awaits", "[relaxed]") {
    for (const char *backend : {"nosource-nounexp", "exact-nounexp"}) {
        DYNAMIC_SECTION(backend) {
            auto e = make_engine(backend, 4, default_params());
            REQUIRE(post(*e, 2, 5, 100) == UM_OK);
            CHECK(arrive(*e, 2, 6, 200) == UM_ERR_ASSERTION); // other tag
            CHECK(arrive(*e, 3, 5, 201) == UM_ERR_ASSERTION); // other source
            const um_stats_t s = e->stats();
            CHECK(s.unexpected_len == 0);
            CHECK(s.posted_len == 1);
            void *m = nullptr;
            REQUIRE(arrive(*e, 2, 5, 202, &m) == UM_OK);
            CHECK(m == h(100));
            CHECK(e->snapshot().unexpected.empty());
        }
    }
    // Without the key the same arrival is queued.
    auto e = make_engine("exact", 4, default_params());
    CHECK(arrive(*e, 2, 6, 200) == UM_OK);
    CHECK(e->stats().unexpected_len == 1);
}

TEST_CASE("relaxed backends keep MPI order within a (source, tag)", "[relaxed]") {
    for (const char *backend : {"nosource", "exact"}) {
        DYNAMIC_SECTION(backend) {
            auto e = make_engine(backend, 4, default_params());
            for (uintptr_t i = 0; i < 3; ++i) {
                REQUIRE(arrive(*e, 1, 9, 300 + i) == UM_OK);
            }
            REQUIRE(arrive(*e, 2, 9, 400) == UM_OK);
            for (uintptr_t i = 0; i < 3; ++i) {
                void *m = nullptr;
                REQUIRE(post(*e, 1, 9, 500 + i, &m) == UM_OK);
                CHECK(m == h(300 + i));
            }
            void *m = nullptr;
            REQUIRE(post(*e, 2, 9, 600, &m) == UM_OK);
            CHECK(m == h(400));
        }
    }
}

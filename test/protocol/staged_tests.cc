// Contiguous sends staged through the arena (shm_stage_max): from kPullMin up
// to the limit, a contiguous send to a peer whose ring carries pulls is copied
// into the sender's arena piece by piece while the receiver copies it out of
// its mapping (no CMA read), as a packed send streams; larger ones, and those
// past kStagedInFlight bytes staged at once, are read by CMA from the user's
// buffer as before.
#include "test/protocol/pair.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

using namespace prototest;

namespace {

constexpr size_t kStageLimit = size_t{1} << 20;

// Sends n bytes of pattern(n, seed) from a to b with tag and receives them
// (the receive posted first, or after the send: unexpected), and checks them.
void round_trip(PullPair &p, int32_t tag, size_t n, unsigned seed, bool posted_first, bool sync = false) {
    const auto m = pattern(n, seed);
    std::vector<unsigned char> buf(n, 0);
    Op s, r;
    if (posted_first) {
        REQUIRE(p.post(p.cb, 0, tag, buf.data(), n, r) == UM_PROTO_OK);
    }
    REQUIRE(p.send(p.ca, tag, m.data(), n, s, sync) == UM_PROTO_OK);
    if (!posted_first) {
        p.spin(50); // the record waits at b, unexpected
        REQUIRE(p.post(p.cb, 0, tag, buf.data(), n, r) == UM_PROTO_OK);
    }
    REQUIRE(p.until([&] { return r.done && s.done; }));
    CHECK(r.status == UM_PROTO_OK);
    CHECK(s.status == UM_PROTO_OK);
    CHECK(r.received == n);
    CHECK((buf == m)); // not decomposed: Catch would print both vectors
}

} // namespace

TEST_CASE("protocol: contiguous sends up to shm_stage_max are staged through the arena",
          "[protocol][shm][pull][stage]") {
    PullPair p(31, kStageLimit);
    const uint64_t staged0 = shm_of(p.a).pulls_staged, mapped0 = shm_of(p.b).pulls_mapped;
    const uint64_t read0 = shm_of(p.b).pulls_read, streamed0 = shm_of(p.a).pulls_streamed;
    {
        INFO("12 KiB, 100 000 bytes (pieces of 12.5 KiB) and the limit itself, posted first and unexpected");
        round_trip(p, 1, 12 * 1024, 1, true);
        round_trip(p, 2, 100000, 2, true);
        round_trip(p, 3, 100000, 3, false);
        round_trip(p, 4, kStageLimit, 4, false);
        CHECK(shm_of(p.a).pulls_staged == staged0 + 4);
        CHECK(shm_of(p.a).pulls_streamed == streamed0 + 4);
        CHECK(shm_of(p.b).pulls_read == read0 + 4);
        CHECK(shm_of(p.b).pulls_mapped == mapped0 + 4); // from the mapped arena: no CMA
    }
    {
        INFO("synchronous: completes once received");
        round_trip(p, 5, 65536, 5, false, true);
        CHECK(shm_of(p.a).pulls_staged == staged0 + 5);
    }
    {
        INFO("past the limit: the user's buffer, read by CMA");
        round_trip(p, 6, kStageLimit + 8, 6, true);
        CHECK(shm_of(p.a).pulls_staged == staged0 + 5);
        CHECK(shm_of(p.b).pulls_read == read0 + 6);
        CHECK(shm_of(p.b).pulls_mapped == mapped0 + 5);
    }
    {
        INFO("truncated: the receive fails, nothing past its capacity, the send completes");
        const size_t n = 300000;
        const auto m = pattern(n, 7);
        std::vector<unsigned char> small(4096 + 64, 0xEE);
        Op s, r;
        REQUIRE(p.post(p.cb, 0, 7, small.data(), 4096, r) == UM_PROTO_OK);
        REQUIRE(p.send(p.ca, 7, m.data(), n, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_TRUNCATED);
        CHECK(prototest::same_bytes(small.data(), m.data(), 4096));
        CHECK(std::count(small.begin() + 4096, small.end(), 0xEE) == 64);
        CHECK(shm_of(p.a).pulls_staged == staged0 + 6);
    }
}

// A window of staged sends holds their buffers until the receiver is done:
// at most kStagedInFlight bytes (64 MiB) at once, the rest read by CMA; every
// buffer goes back when its send completes, so the next window is staged whole.
TEST_CASE("protocol: staged sends in flight are bounded and their buffers come back", "[protocol][shm][pull][stage]") {
    PullPair p(32, kStageLimit);
    const size_t n = 512 * 1024, window = 140; // 70 MiB: past kStagedInFlight
    const auto m = pattern(n, 9);
    for (int round = 0; round < 2; ++round) {
        INFO("window " << round);
        const uint64_t staged0 = shm_of(p.a).pulls_staged;
        std::vector<Op> s(window), r(window);
        std::vector<std::vector<unsigned char>> bufs(window, std::vector<unsigned char>(n, 0));
        for (size_t i = 0; i < window; ++i) {
            REQUIRE(p.send(p.ca, static_cast<int32_t>(i), m.data(), n, s[i]) == UM_PROTO_OK);
        }
        CHECK(shm_of(p.a).pulls_staged == staged0 + 128); // 64 MiB of them
        for (size_t i = 0; i < window; ++i) {
            REQUIRE(p.post(p.cb, 0, static_cast<int32_t>(i), bufs[i].data(), n, r[i]) == UM_PROTO_OK);
        }
        REQUIRE(p.until([&] {
            return std::all_of(r.begin(), r.end(), [](const Op &o) { return o.done; }) &&
                   std::all_of(s.begin(), s.end(), [](const Op &o) { return o.done; });
        }));
        for (size_t i = 0; i < window; ++i) {
            CHECK(r[i].status == UM_PROTO_OK);
            CHECK((bufs[i] == m));
        }
    }
}

TEST_CASE("protocol: with shm_stage_max 0 contiguous pulls are read by CMA", "[protocol][shm][pull][stage]") {
    PullPair p(33, 0);
    const uint64_t mapped0 = shm_of(p.b).pulls_mapped;
    round_trip(p, 1, 100000, 11, true);
    CHECK(shm_of(p.a).pulls_staged == 0);
    CHECK(shm_of(p.b).pulls_mapped == mapped0);
}

// With threads the sender takes the ring's packing slot under its lock
// (push_shared): b, with thread_multiple, stages to a.
TEST_CASE("protocol: with threads, contiguous sends are staged too", "[protocol][shm][pull][stage][threads]") {
    PullPair p(34, kStageLimit, true);
    ring_up_from_b(p, p.ca, p.cb);
    const size_t n = 200000;
    const auto m = pattern(n, 13);
    for (int i = 0; i < 4; ++i) {
        std::vector<unsigned char> buf(n, 0);
        Op s, r;
        const um_hint_t hint{};
        REQUIRE(Pair::post_at(p.a, p.ca, 1, i, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(um_proto_send(p.b, p.cb, p.b_to_a, 0, i, &hint, m.data(), n, 0, &s.send, &s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK((buf == m)); // not decomposed: Catch would print both vectors
    }
    CHECK(shm_of(p.b).pulls_staged == 4);
    CHECK(shm_of(p.a).pulls_mapped >= 4);
}

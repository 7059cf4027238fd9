// A receive whose glue refuses a piece (its convertor cannot be moved to it,
// or cannot take it): on every path a message reaches a non-contiguous
// receive by, the receive fails, no later piece of it is passed, the send
// completes, and the next message is received whole. The arena's paths are in
// arena_tests.cc.
#include "test/protocol/pair.h"

#include <sys/mman.h>
#include <unistd.h>

using namespace prototest;

namespace {

// n bytes from a to b with tag, into a receive without a buffer whose call
// `refuse` of the unpack callback is refused; posted first or not. Then the
// same message again, received whole.
void refused_then_whole(Pair &p, um_proto_comm_t *ca, um_proto_comm_t *cb, int32_t tag, size_t n, int refuse,
                        bool posted_first) {
    const auto m = pattern(n, static_cast<unsigned>(tag));
    Op s, r;
    r.refuse_piece = refuse;
    if (posted_first) {
        REQUIRE(p.post(cb, 0, tag, nullptr, n, r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, tag, m.data(), n, s) == UM_PROTO_OK);
    } else {
        REQUIRE(p.send(ca, tag, m.data(), n, s) == UM_PROTO_OK);
        p.spin(500);
        REQUIRE(p.post(cb, 0, tag, nullptr, n, r) == UM_PROTO_OK);
    }
    REQUIRE(p.until([&] { return r.done && s.done; }));
    check_refused(r, s, refuse);

    Op s2, r2;
    REQUIRE(p.post(cb, 0, tag, nullptr, n, r2) == UM_PROTO_OK);
    REQUIRE(p.send(ca, tag, m.data(), n, s2) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r2.done && s2.done; }));
    CHECK(r2.status == UM_PROTO_OK);
    CHECK(r2.received == n);
    CHECK(r2.unpacked == m);
}

} // namespace

TEST_CASE("protocol: a piece the glue refuses fails its receive, not the send, through UCX", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 21);
    um_proto_comm_t *cb = p.comm(p.b, 21);
    SECTION("eager, posted") { refused_then_whole(p, ca, cb, 1, 100, 0, true); }
    SECTION("eager, unexpected") { refused_then_whole(p, ca, cb, 2, 100, 0, false); }
    SECTION("rendezvous unpacked as UCX receives it, the second piece refused") {
        refused_then_whole(p, ca, cb, 3, size_t{3} << 18, 1, true);
    }
    SECTION("rendezvous past kRndvUnpackMax, through scratch memory") {
        refused_then_whole(p, ca, cb, 4, ubermatch::protocol::kRndvUnpackMax + 4096, 0, false);
    }
}

TEST_CASE("protocol: a piece the glue refuses fails its receive, not the send, through the ring",
          "[protocol][shm]") {
    SECTION("eager") {
        Pair p(0, 8192);
        um_proto_comm_t *ca = p.comm(p.a, 22);
        um_proto_comm_t *cb = p.comm(p.b, 22);
        ring_up(p, ca, cb);
        const uint64_t received = shm_of(p.b).received;
        refused_then_whole(p, ca, cb, 1, 3000, 0, true);
        refused_then_whole(p, ca, cb, 2, 3000, 0, false);
        CHECK(shm_of(p.b).received == received + 4);
    }
    SECTION("pulled by CMA in pieces, the second refused") {
        PullPair p(23);
        const uint64_t read = shm_of(p.b).pulls_read;
        refused_then_whole(p, p.ca, p.cb, 1, 600000, 1, true);
        CHECK(shm_of(p.b).pulls_read == read + 2);
    }
}

// A rendezvous into a non-contiguous receive past kRndvUnpackMax lands in
// scratch memory and is unpacked from there in one piece; the scratch comes
// from a pool that keeps it, mapped and its pages resident, for the next one
// (malloc'd and freed per message, a window of such receives faulted all its
// pages in afresh each time: docs/message-path.md round 23).
TEST_CASE("protocol: a rendezvous receive's scratch memory is kept for the next", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 22);
    um_proto_comm_t *cb = p.comm(p.b, 22);
    const size_t n = ubermatch::protocol::kRndvUnpackMax * 2;
    const auto m = pattern(n, 22);
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const void *scratch = nullptr;
    for (int i = 0; i < 3; ++i) {
        INFO("message " << i);
        Op s, r;
        REQUIRE(p.post(cb, 0, 5, nullptr, n, r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 5, m.data(), n, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(r.unpacked == m);
        CHECK(r.unpack_pieces == 1); // from the scratch, whole
        REQUIRE(r.unpack_from != nullptr);
        // After the receive: still mapped, every page resident.
        const auto addr = reinterpret_cast<uintptr_t>(r.unpack_from) & ~(page - 1);
        const size_t span = reinterpret_cast<uintptr_t>(r.unpack_from) + n - addr;
        std::vector<unsigned char> resident((span + page - 1) / page);
        REQUIRE(mincore(reinterpret_cast<void *>(addr), span, resident.data()) == 0);
        CHECK(std::count_if(resident.begin(), resident.end(), [](unsigned char v) { return v & 1; }) ==
              static_cast<std::ptrdiff_t>(resident.size()));
        if (scratch != nullptr) {
            CHECK(r.unpack_from == scratch); // the same memory again
        }
        scratch = r.unpack_from;
    }
}

// The protocol core alone, in one process: two cores, each with its own UCX
// worker, connected to each other (over shared memory), driven through the C
// interface the PML's glue uses (pair.h). No MPI, no Open MPI object. The
// shared-memory rings' tests are in shm_protocol_tests.cc.
#define CATCH_CONFIG_MAIN
#include "test/protocol/pair.h"

#include <algorithm>
#include <set>

using namespace prototest;


TEST_CASE("protocol: eager messages, posted and unexpected, in order", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 3);
    um_proto_comm_t *cb = p.comm(p.b, 3);
    const auto m1 = pattern(8, 1);
    const auto m2 = pattern(200, 2);
    Op s1, s2, r1, r2;
    std::vector<unsigned char> b1(8), b2(256);
    REQUIRE(p.post(cb, 0, 7, b1.data(), b1.size(), r1) == UM_PROTO_OK); // posted before
    REQUIRE(p.send(ca, 7, m1.data(), m1.size(), s1) == UM_PROTO_OK);
    REQUIRE(p.send(ca, 7, m2.data(), m2.size(), s2) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r1.done && s1.done && s2.done; }));
    REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == 1; }));
    REQUIRE(p.post(cb, UM_ANY_SOURCE, UM_ANY_TAG, b2.data(), b2.size(), r2) == UM_PROTO_OK);
    REQUIRE(r2.done); // it was waiting: matched inside the call
    CHECK(r1.status == UM_PROTO_OK);
    CHECK(r1.received == 8);
    CHECK(b1 == m1);
    CHECK(r2.status == UM_PROTO_OK);
    CHECK(r2.source == 0);
    CHECK(r2.tag == 7);
    CHECK(r2.received == 200);
    CHECK(prototest::same_bytes(b2.data(), m2.data(), 200));
}

TEST_CASE("protocol: a message for a communicator not created yet is held, then matched", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 9);
    const auto m = pattern(40, 3);
    Op s, r;
    REQUIRE(p.send(ca, 1, m.data(), m.size(), s) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return um_proto_held(p.b) == 1; }));
    um_proto_comm_t *cb = p.comm(p.b, 9);
    CHECK(um_proto_held(p.b) == 0);
    std::vector<unsigned char> buf(40);
    REQUIRE(p.post(cb, 0, 1, buf.data(), buf.size(), r) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r.done; }));
    CHECK(r.status == UM_PROTO_OK);
    CHECK(buf == m);
}

TEST_CASE("protocol: truncation, eager and rendezvous, writes nothing past the buffer", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 4);
    um_proto_comm_t *cb = p.comm(p.b, 4);
    for (size_t n : {size_t{100}, size_t{4} << 20}) {
        DYNAMIC_SECTION(n << " bytes") {
            const auto m = pattern(n, 4);
            Op s, r;
            std::vector<unsigned char> buf(64 + 16, 0xEE);
            REQUIRE(p.post(cb, 0, 2, buf.data(), 64, r) == UM_PROTO_OK);
            REQUIRE(p.send(ca, 2, m.data(), m.size(), s) == UM_PROTO_OK);
            REQUIRE(p.until([&] { return r.done && s.done; }));
            CHECK(r.status == UM_PROTO_TRUNCATED);
            CHECK(r.received == 64);
            CHECK(r.length == n);
            CHECK(prototest::same_bytes(buf.data(), m.data(), 64));
            for (size_t i = 64; i < buf.size(); ++i) {
                CHECK(buf[i] == 0xEE);
            }
        }
    }
}

TEST_CASE("protocol: rendezvous into a buffer and through the unpack callback", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 5);
    um_proto_comm_t *cb = p.comm(p.b, 5);
    const size_t n = size_t{3} << 18; // 768 KiB: UCX unpacks it (up to kRndvUnpackMax)
    const auto m = pattern(n, 5);
    Op s1, s2, r1, r2;
    std::vector<unsigned char> buf(n);
    REQUIRE(p.send(ca, 8, m.data(), n, s1) == UM_PROTO_OK); // unexpected: UCX keeps the descriptor
    REQUIRE(p.send(ca, 8, m.data(), n, s2) == UM_PROTO_OK);
    p.spin(1000);
    CHECK_FALSE(s1.done); // a rendezvous send waits for its receive
    REQUIRE(p.post(cb, 0, 8, buf.data(), n, r1) == UM_PROTO_OK);
    REQUIRE(p.post(cb, 0, 8, nullptr, n, r2) == UM_PROTO_OK); // non-contiguous: unpacked in order
    REQUIRE(p.until([&] { return r1.done && r2.done && s1.done && s2.done; }));
    CHECK(r1.status == UM_PROTO_OK);
    CHECK(buf == m);
    CHECK(r2.status == UM_PROTO_OK);
    CHECK(r2.unpacked == m);
    CHECK(r2.unpack_messages == 1);
    CHECK(r2.unpack_pieces > 1); // as UCX receives it: no scratch copy of the whole message
    CHECK_FALSE(r2.unpack_out_of_order);

    INFO("non-contiguous and truncated: what the receive can take, through scratch memory");
    Op s3, r3;
    REQUIRE(p.send(ca, 9, m.data(), n, s3) == UM_PROTO_OK);
    REQUIRE(p.post(cb, 0, 9, nullptr, n / 2, r3) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r3.done && s3.done; }));
    CHECK(r3.status == UM_PROTO_TRUNCATED);
    CHECK(r3.received == n / 2);
    CHECK(r3.unpacked == std::vector<unsigned char>(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(n / 2)));

    INFO("non-contiguous past kRndvUnpackMax: one get into scratch memory, unpacked at once");
    const auto big = pattern(ubermatch::protocol::kRndvUnpackMax + 4096, 6);
    Op s4, r4;
    REQUIRE(p.send(ca, 10, big.data(), big.size(), s4) == UM_PROTO_OK);
    REQUIRE(p.post(cb, 0, 10, nullptr, big.size(), r4) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r4.done && s4.done; }));
    CHECK(r4.status == UM_PROTO_OK);
    CHECK(r4.unpacked == big);
    CHECK(r4.unpack_pieces == 1);
}

TEST_CASE("protocol: a synchronous send completes when matched, not before", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 6);
    um_proto_comm_t *cb = p.comm(p.b, 6);
    const auto m = pattern(16, 6);
    Op s, r;
    REQUIRE(p.send(ca, 4, m.data(), m.size(), s, true) == UM_PROTO_OK);
    p.spin(2000);
    CHECK_FALSE(s.done); // delivered, unexpected, not matched
    std::vector<unsigned char> buf(16);
    REQUIRE(p.post(cb, 0, 4, buf.data(), buf.size(), r) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return s.done; }));
    CHECK(s.status == UM_PROTO_OK);
    CHECK(buf == m);
}

TEST_CASE("protocol: cancel withdraws a posted receive; probe and mprobe", "[protocol]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 8);
    um_proto_comm_t *cb = p.comm(p.b, 8);
    Op r, s;
    std::vector<unsigned char> buf(8);
    REQUIRE(p.post(cb, 0, 11, buf.data(), buf.size(), r) == UM_PROTO_OK);
    int cancelled = 0;
    REQUIRE(um_proto_cancel(p.b, cb, &r.recv, &cancelled) == UM_PROTO_OK);
    CHECK(cancelled == 1);
    REQUIRE(um_proto_cancel(p.b, cb, &r.recv, &cancelled) == UM_PROTO_OK);
    CHECK(cancelled == 0); // gone already

    const auto m = pattern(24, 8);
    REQUIRE(p.send(ca, 11, m.data(), m.size(), s) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == 1; }));
    CHECK_FALSE(r.done); // the cancelled receive took nothing
    const um_hint_t hint{};
    int found = 0;
    um_proto_msg_info_t info{};
    um_proto_msg_t *msg = nullptr;
    REQUIRE(um_proto_probe(p.b, cb, UM_ANY_SOURCE, 11, &hint, 0, &found, &info, nullptr) == UM_PROTO_OK);
    CHECK(found == 1);
    CHECK(info.length == 24);
    REQUIRE(um_proto_probe(p.b, cb, 0, 11, &hint, 1, &found, &info, &msg) == UM_PROTO_OK);
    REQUIRE(found == 1);
    CHECK(unexpected_len(p.b, cb) == 0);
    Op r2;
    std::vector<unsigned char> buf2(24);
    r2.recv.cookie = &r2;
    r2.recv.buffer = buf2.data();
    r2.recv.capacity = buf2.size();
    REQUIRE(um_proto_msg_recv(p.b, msg, &r2.recv) == UM_PROTO_OK);
    REQUIRE(r2.done);
    CHECK(buf2 == m);
}

TEST_CASE("protocol: a failed allocation fails the receive concerned and nothing else", "[protocol]") {
    Pair p(3); // every 3rd allocation on b's message path fails (descriptors and payload copies alternate)
    um_proto_comm_t *ca = p.comm(p.a, 10);
    um_proto_comm_t *cb = p.comm(p.b, 10);
    const int kMsgs = 12;
    std::vector<Op> s(kMsgs), r(kMsgs);
    std::vector<std::vector<unsigned char>> m, buf;
    for (int i = 0; i < kMsgs; ++i) {
        m.push_back(pattern(100 + i, 10 + i)); // kept on the heap when unexpected
        buf.emplace_back(200);
        REQUIRE(p.send(ca, i, m.back().data(), m.back().size(), s[i]) == UM_PROTO_OK);
    }
    REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == kMsgs; }));
    int nomem = 0;
    for (int i = 0; i < kMsgs; ++i) {
        REQUIRE(p.post(cb, 0, i, buf[i].data(), buf[i].size(), r[i]) == UM_PROTO_OK);
        REQUIRE(r[i].done);
        if (r[i].status == UM_PROTO_NOMEM) {
            ++nomem;
            continue;
        }
        CHECK(r[i].status == UM_PROTO_OK);
        CHECK(r[i].received == m[i].size());
        CHECK(prototest::same_bytes(buf[i].data(), m[i].data(), m[i].size()));
    }
    CHECK(nomem > 0);
    CHECK(nomem < kMsgs);
    um_proto_faults_t f{};
    um_proto_faults(p.b, &f);
    CHECK(f.lost == static_cast<uint64_t>(nomem));
    CHECK(f.dropped == 0); // the spare descriptors covered every failed descriptor allocation
}

// Relaxed engines per communicator (info assertions): Open MPI's own traffic
// (negative tags) keeps full matching beside them, a refused wildcard queues
// nothing, and an arrival no receive awaits under no-unexpected is kept.
static um_proto_comm_info_t info_of(um_proto_t *p, um_proto_comm_t *c) {
    um_proto_comm_info_t i{};
    um_proto_comm_info(p, c, &i);
    return i;
}

TEST_CASE("protocol: a relaxed engine, collective traffic apart, wildcards refused", "[protocol][relaxed]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 4);
    um_proto_comm_t *cb = p.comm(p.b, 4, "exact");
    CHECK(std::strcmp(info_of(p.b, cb).backend, "exact") == 0);
    CHECK(std::strcmp(info_of(p.b, cb).coll_backend, "auto") == 0);
    CHECK(info_of(p.b, cb).relaxed == (UM_PROTO_ASSERT_NO_ANY_SOURCE | UM_PROTO_ASSERT_NO_ANY_TAG));
    int v = 0, w = 0;
    Op r_any, r_coll, r_tag, s1, s2;
    REQUIRE(p.post(cb, UM_ANY_SOURCE, 5, &w, sizeof w, r_any) == UM_PROTO_ASSERTION);
    REQUIRE(p.post(cb, 0, UM_ANY_TAG, &w, sizeof w, r_any) == UM_PROTO_ASSERTION);
    // A barrier's ANY_SOURCE receive with an internal tag goes to the full engine.
    REQUIRE(p.post(cb, UM_ANY_SOURCE, -16, &v, sizeof v, r_coll) == UM_PROTO_OK);
    REQUIRE(p.post(cb, 0, 5, &w, sizeof w, r_tag) == UM_PROTO_OK);
    const int one = 1, two = 2;
    REQUIRE(p.send(ca, -16, &one, sizeof one, s1) == UM_PROTO_OK);
    REQUIRE(p.send(ca, 5, &two, sizeof two, s2) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r_coll.done && r_tag.done && s1.done && s2.done; }));
    CHECK(v == 1);
    CHECK(w == 2);
    CHECK(!r_any.done);
    um_stats_t st{};
    um_proto_comm_stats(p.b, cb, &st);
    CHECK(st.posted_len == 0);
    CHECK(st.p2p.matches + st.coll.matches == 2); // both engines counted
}

TEST_CASE("protocol: switching engines waits for point-to-point queues to empty", "[protocol][relaxed]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 6);
    um_proto_comm_t *cb = p.comm(p.b, 6);
    char err[256];
    int v = 0, c = 0;
    Op r, rc, s;
    REQUIRE(p.post(cb, 0, 1, &v, sizeof v, r) == UM_PROTO_OK);
    REQUIRE(p.post(cb, UM_ANY_SOURCE, -20, &c, sizeof c, rc) == UM_PROTO_OK); // internal: may stay
    REQUIRE(um_proto_comm_use(p.b, cb, "nosource", err, sizeof err) == UM_PROTO_AGAIN);
    CHECK(info_of(p.b, cb).relaxed == 0);
    const int x = 9;
    REQUIRE(p.send(ca, 1, &x, sizeof x, s) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r.done; }));
    REQUIRE(um_proto_comm_use(p.b, cb, "nosource", err, sizeof err) == UM_PROTO_OK);
    CHECK(info_of(p.b, cb).relaxed == UM_PROTO_ASSERT_NO_ANY_SOURCE);
    Op s2;
    REQUIRE(p.send(ca, -20, &x, sizeof x, s2) == UM_PROTO_OK); // the old engine kept its receive
    REQUIRE(p.until([&] { return rc.done; }));
    CHECK(c == 9);
    REQUIRE(um_proto_comm_use(p.b, cb, nullptr, err, sizeof err) == UM_PROTO_OK); // back to auto
    CHECK(info_of(p.b, cb).relaxed == 0);
    CHECK(info_of(p.b, cb).coll_backend[0] == '\0');
    REQUIRE(um_proto_comm_use(p.b, cb, "hashmap", err, sizeof err) == UM_PROTO_ERROR);
    CHECK(std::strstr(err, "hashmap") != nullptr);
}

// MPI_Comm_set_info took an assertion back while the relaxed engine holds
// traffic: its queues move, in order, to an engine that takes the wildcards the
// old one refused; an engine asserting no more than asked waits as before.
TEST_CASE("protocol: an assertion taken back moves the queued traffic to a full engine", "[protocol][relaxed]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 9);
    um_proto_comm_t *cb = p.comm(p.b, 9, "exact");
    char err[256];
    int pending = 0, first = 0, second = 0;
    Op r_pending, r_first, r_second, s1, s2, s3;
    REQUIRE(p.post(cb, 0, 5, &pending, sizeof pending, r_pending) == UM_PROTO_OK);
    const int one = 1, two = 2, nine = 9;
    REQUIRE(p.send(ca, 7, &one, sizeof one, s1) == UM_PROTO_OK);
    REQUIRE(p.send(ca, 7, &two, sizeof two, s2) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == 2; }));
    // More assertions (overtaking as well): exact is still right, so it waits.
    REQUIRE(um_proto_comm_use(p.b, cb, "overtake", err, sizeof err) == UM_PROTO_AGAIN);
    CHECK(std::strcmp(info_of(p.b, cb).backend, "exact") == 0);
    // Fewer (no_any_tag taken back): the receive and both messages move to nosource.
    REQUIRE(um_proto_comm_use(p.b, cb, "nosource", err, sizeof err) == UM_PROTO_OK);
    CHECK(std::strcmp(info_of(p.b, cb).backend, "nosource") == 0);
    um_stats_t st{};
    um_proto_comm_stats(p.b, cb, &st);
    CHECK(st.posted_len == 1);
    CHECK(st.unexpected_len == 2);
    REQUIRE(p.post(cb, 0, UM_ANY_TAG, &first, sizeof first, r_first) == UM_PROTO_OK);
    REQUIRE(p.post(cb, 0, UM_ANY_TAG, &second, sizeof second, r_second) == UM_PROTO_OK);
    REQUIRE((r_first.done && r_second.done));
    CHECK(first == 1); // in arrival order
    CHECK(second == 2);
    REQUIRE(p.send(ca, 5, &nine, sizeof nine, s3) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r_pending.done; }));
    CHECK(pending == 9);
}

// An assertion taken back while another is added that the queued traffic
// breaks: the move takes the most relaxed engine that holds that traffic.
TEST_CASE("protocol: a move keeps out the assertions its queued traffic breaks", "[protocol][relaxed]") {
    Pair p;
    char err[256];
    SECTION("an ANY_TAG receive queued, no_any_tag added, overtaking taken back") {
        um_proto_comm_t *ca = p.comm(p.a, 9);
        um_proto_comm_t *cb = p.comm(p.b, 9, "overtake-anytag");
        int any = 0, next = 0;
        Op r_any, r_next, s1, s2;
        REQUIRE(p.post(cb, 0, UM_ANY_TAG, &any, sizeof any, r_any) == UM_PROTO_OK);
        REQUIRE(um_proto_comm_use(p.b, cb, "exact", err, sizeof err) == UM_PROTO_OK);
        CHECK(std::strcmp(info_of(p.b, cb).backend, "nosource") == 0);
        REQUIRE(p.post(cb, 0, 4, &next, sizeof next, r_next) == UM_PROTO_OK);
        const int one = 1, two = 2;
        REQUIRE(p.send(ca, 4, &one, sizeof one, s1) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 4, &two, sizeof two, s2) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r_any.done && r_next.done; }));
        CHECK(any == 1); // posting order, as overtaking is no longer allowed
        CHECK(next == 2);
    }
    SECTION("messages queued, no_unexpected added, no_any_tag taken back") {
        um_proto_comm_t *ca = p.comm(p.a, 9);
        um_proto_comm_t *cb = p.comm(p.b, 9, "exact");
        const int one = 1;
        Op s1, r_any;
        REQUIRE(p.send(ca, 6, &one, sizeof one, s1) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == 1; }));
        REQUIRE(um_proto_comm_use(p.b, cb, "nosource-nounexp", err, sizeof err) == UM_PROTO_OK);
        CHECK(std::strcmp(info_of(p.b, cb).backend, "nosource") == 0);
        CHECK(info_of(p.b, cb).refused == 0); // it arrived before the assertion
        int any = 0;
        REQUIRE(p.post(cb, 0, UM_ANY_TAG, &any, sizeof any, r_any) == UM_PROTO_OK);
        REQUIRE(r_any.done);
        CHECK(any == 1);
    }
}

TEST_CASE("protocol: an arrival before its receive under no-unexpected is kept", "[protocol][relaxed]") {
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 8);
    um_proto_comm_t *cb = p.comm(p.b, 8, "nosource-nounexp");
    int early = 0, later = 0;
    Op r_early, r_later, s1, s2;
    REQUIRE(p.post(cb, 0, 2, &later, sizeof later, r_later) == UM_PROTO_OK); // moves to the new engine
    const int one = 1, two = 2;
    REQUIRE(p.send(ca, 1, &one, sizeof one, s1) == UM_PROTO_OK); // nobody awaits tag 1
    REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == 1; }));
    CHECK(info_of(p.b, cb).refused == 1);
    CHECK(std::strcmp(info_of(p.b, cb).backend, "nosource") == 0);
    CHECK(info_of(p.b, cb).relaxed == UM_PROTO_ASSERT_NO_ANY_SOURCE);
    char err[256];
    REQUIRE(um_proto_comm_use(p.b, cb, "nosource-nounexp", err, sizeof err) == UM_PROTO_OK);
    CHECK(std::strcmp(info_of(p.b, cb).backend, "nosource") == 0); // never relied on again
    REQUIRE(p.post(cb, 0, 1, &early, sizeof early, r_early) == UM_PROTO_OK);
    REQUIRE(r_early.done);
    CHECK(early == 1);
    REQUIRE(p.send(ca, 2, &two, sizeof two, s2) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r_later.done; }));
    CHECK(later == 2);
}

// Under MPI_THREAD_MULTIPLE, one lock (global) or tail queues: a thread posts
// receives on b while the main thread sends from a and drives both workers,
// so b's arrivals are matched in the main thread while receives are posted
// in the other. Receive k asks for (0, k % 3) when k is even, (ANY_SOURCE,
// k % 3) when odd: MPI's order gives it message k, whatever the interleaving
// (a receive or message that overtook another would get or give another k).
// Under mpi_assert_allow_overtaking (engine overtake) a message of the user's
// traffic that arrives ahead of its turn is matched at once; a communicator of
// ordered matching (exact) holds it until the one before it has arrived. The
// count goes on right for both: later messages, Open MPI's too, are in turn.
TEST_CASE("protocol: an overtaking communicator matches an arrival ahead of its turn at once",
          "[protocol][relaxed]") {
    using ubermatch::protocol::ProtocolTestAccess;
    Pair p;
    for (const char *backend : {"exact", "overtake"}) {
        DYNAMIC_SECTION(backend) {
            const bool overtaking = std::strcmp(backend, "overtake") == 0;
            const uint32_t cid = overtaking ? 31 : 30;
            um_proto_comm_t *cb = p.comm(p.b, cid, backend);
            CHECK(((info_of(p.b, cb).relaxed & UM_PROTO_ASSERT_ALLOW_OVERTAKING) != 0) == overtaking);
            int first = 0, second = 0, third = 0;
            Op r1, r2, r3;
            REQUIRE(p.post(cb, 0, 5, &second, sizeof second, r2) == UM_PROTO_OK);
            ProtocolTestAccess::arrive(p.b, cid, 0, 5, 1, 41); // number 1 before number 0
            CHECK(r2.done == overtaking);
            CHECK(um_proto_held(p.b) == (overtaking ? 0u : 1u));
            ProtocolTestAccess::arrive(p.b, cid, 0, 6, 0, 40); // number 0: unexpected
            CHECK(r2.done);
            CHECK(second == 41);
            CHECK(um_proto_held(p.b) == 0);
            REQUIRE(p.post(cb, 0, 6, &first, sizeof first, r1) == UM_PROTO_OK);
            CHECK(r1.done);
            CHECK(first == 40);
            REQUIRE(p.post(cb, 0, 5, &third, sizeof third, r3) == UM_PROTO_OK);
            ProtocolTestAccess::arrive(p.b, cid, 0, 5, 2, 42); // in turn
            CHECK(r3.done);
            CHECK(third == 42);
            // Open MPI's own traffic is never overtaken: it is matched only in turn,
            // so this shows that the count stepped over number 1.
            int coll = 0;
            Op r4;
            REQUIRE(p.post(cb, 0, -16, &coll, sizeof coll, r4) == UM_PROTO_OK);
            ProtocolTestAccess::arrive(p.b, cid, 0, -16, 3, 43);
            CHECK(r4.done);
            CHECK(coll == 43);
            CHECK(um_proto_held(p.b) == 0);
            // One more ahead of its turn (number 5), and the communicator goes: what it
            // held is freed, and a marker is nothing to free.
            Op r5;
            int fifth = 0;
            REQUIRE(p.post(cb, 0, 5, &fifth, sizeof fifth, r5) == UM_PROTO_OK);
            ProtocolTestAccess::arrive(p.b, cid, 0, 5, 5, 45);
            CHECK(r5.done == overtaking);
            CHECK(um_proto_held(p.b) == (overtaking ? 0u : 1u));
            if (!overtaking) {
                int cancelled = 0;
                REQUIRE(um_proto_cancel(p.b, cb, &r5.recv, &cancelled) == UM_PROTO_OK);
                CHECK(cancelled == 1); // its message is held, not matched
            }
            p.comms.erase(std::find_if(p.comms.begin(), p.comms.end(),
                                       [cb](const auto &c) { return c.second == cb; }));
            um_proto_comm_destroy(p.b, cb);
            CHECK(um_proto_held(p.b) == 0);
        }
    }
}

TEST_CASE("protocol: receives posted by one thread while another matches arrivals keep MPI order",
          "[protocol][threads]") {
    for (const int bins : {0, 1, 4}) {
        INFO((bins == 0 ? "one lock" : "tail queues in bins: " + std::to_string(bins)));
        Pair p(0, 0, true, bins);
        um_proto_comm_t *ca = p.comm(p.a, 4);
        um_proto_comm_t *cb = p.comm(p.b, 4);
        constexpr int kN = 20000;
        std::vector<Op> s(kN), r(kN);
        std::vector<int64_t> got(kN, -1), sent(kN);
        std::atomic<bool> posted_ok{true};
        std::atomic<int> posted{0}, sent_count{0};
        g_recvs_done.store(0);
        // Phases of 256: receives run up to 32 ahead of the messages (the
        // posted queue and its inbox), then messages ahead of the receives
        // (the unexpected queue and its inbox). A side waits for the other
        // only up to the end of its phase, so neither waits for ever.
        constexpr int kPhase = 256, kLead = 32;
        const auto ahead = [&](int k) { return std::min({k + kLead, (k / kPhase + 1) * kPhase, kN}); };
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        std::thread poster([&] {
            for (int k = 0; k < kN; ++k) {
                while ((k / kPhase) % 2 == 1 && sent_count.load() < ahead(k) &&
                       std::chrono::steady_clock::now() < deadline) {
                    std::this_thread::yield();
                }
                if (p.post(cb, k % 2 ? UM_ANY_SOURCE : 0, k % 3, &got[k], sizeof got[k], r[k]) !=
                    UM_PROTO_OK) {
                    posted_ok = false;
                }
                posted.store(k + 1);
            }
        });
        for (int k = 0; k < kN; ++k) {
            while ((k / kPhase) % 2 == 0 && posted.load() < ahead(k) &&
                   std::chrono::steady_clock::now() < deadline) {
                p.spin(1);
            }
            sent[k] = k;
            REQUIRE(p.send(ca, k % 3, &sent[k], sizeof sent[k], s[k]) == UM_PROTO_OK);
            sent_count.store(k + 1);
            if (k % 16 == 0) {
                p.spin(1);
            }
        }
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (g_recvs_done.load(std::memory_order_acquire) < kN &&
               std::chrono::steady_clock::now() < end) {
            p.spin(1);
        }
        poster.join();
        REQUIRE(posted_ok);
        REQUIRE(g_recvs_done.load(std::memory_order_acquire) == kN);
        int wrong = 0;
        for (int k = 0; k < kN; ++k) {
            wrong += (got[k] != k || r[k].status != UM_PROTO_OK || r[k].tag != k % 3) ? 1 : 0;
        }
        CHECK(wrong == 0);
        um_stats_t st{};
        um_proto_comm_stats(p.b, cb, &st);
        CHECK(st.posted_len == 0);
        CHECK(st.unexpected_len == 0);
    }
}

// Copies that outlive a call (unexpected payloads, packed sends) come from
// classes of powers of two, kept for reuse up to a bound in bytes.
TEST_CASE("protocol: the buffer pool reuses a class's buffers and bounds what it keeps", "[protocol]") {
    ubermatch::protocol::BufferPool pool(7, 16, 64 * 256);
    void *tiny = pool.get(1); // the smallest class holds the free list's link
    pool.put(tiny, 1);
    CHECK(pool.kept(128) == 1);
    CHECK(pool.get(100) == tiny);
    std::free(tiny);
    void *a = pool.get(3000); // the 4 KiB class
    REQUIRE(a != nullptr);
    std::memset(a, 0x5a, 4096); // the whole class is usable
    pool.put(a, 3000);
    CHECK(pool.kept(4096) == 1);
    CHECK(pool.kept_bytes() == 4096);
    void *other = std::malloc(4096); // had the pool freed a, malloc would hand it out here
    CHECK(pool.get(4096) == a);      // kept: the same class gives it back
    CHECK(pool.kept(4096) == 0);
    CHECK(pool.kept_bytes() == 0);
    std::free(other);
    void *b = pool.get(4097); // the next class
    pool.put(b, 4097);
    CHECK(pool.kept(4096) == 0);
    CHECK(pool.kept(8192) == 1);
    pool.put(a, 4096);
    CHECK(pool.get(8192) == b); // a class's list gives back its own only
    pool.put(b, 8192);
    CHECK(pool.kept_bytes() == 4096 + 8192);
    std::vector<void *> many;
    for (int i = 0; i < 100; ++i) { // more than the pool keeps
        many.push_back(pool.get(200));
        REQUIRE(many.back() != nullptr);
    }
    for (void *p : many) {
        pool.put(p, 200);
    }
    CHECK(pool.kept(256) == (64 * 256 - 4096 - 8192) / 256); // up to the bound, no further
    CHECK(pool.kept_bytes() <= 64 * 256);
    void *big = pool.get(size_t{1} << 20); // past the classes: plain allocation, never kept
    REQUIRE(big != nullptr);
    pool.put(big, size_t{1} << 20);
    CHECK(pool.kept(size_t{1} << 20) == 0);


    // Carved from a region while it has room, then allocated; past the bound
    // a carved buffer is kept with its memory released, an allocated one freed.
    alignas(4096) static unsigned char region[3 * 4096];
    struct Released {
        std::vector<std::pair<void *, size_t>> calls;
        static void release(void *self, void *p, size_t n) { static_cast<Released *>(self)->calls.emplace_back(p, n); }
    } released;
    ubermatch::protocol::BufferPool carving(12, 16, 4096); // keeps one 4 KiB buffer's memory
    carving.carve_from(region, sizeof region, &Released::release, &released);
    void *c1 = carving.get(4096);
    void *c2 = carving.get(8000); // the 8 KiB class: the rest of the region
    void *c3 = carving.get(4096); // no room left: allocated
    CHECK(c1 == region);
    CHECK(c2 == region + 4096);
    CHECK((c3 < static_cast<void *>(region) || c3 >= static_cast<void *>(region + sizeof region)));
    CHECK(carving.carved(c2));
    CHECK_FALSE(carving.carved(c3));
    carving.put(c1, 4096); // within the bound: kept as it is
    carving.put(c3, 4096); // allocated, past the bound: freed
    carving.put(c2, 8000); // carved, past the bound: kept, its memory released
    CHECK(released.calls == std::vector<std::pair<void *, size_t>>{{c2, 8192}});
    CHECK(carving.kept(4096) == 1);
    CHECK(carving.kept(8192) == 1);
    CHECK(carving.kept_bytes() == 4096);
    CHECK(carving.get(8192) == c2);
    CHECK(carving.kept_bytes() == 4096); // its memory was not counted
    CHECK(carving.get(100) == c1);
    CHECK(carving.kept_bytes() == 0);
}

// Past the bound, the buffer just put back keeps its memory and other
// classes' carved buffers give theirs, those of the class used longest ago
// first: a run of large messages after smaller ones (or of small ones after
// large ones) must not fault its buffer's pages in each time.
TEST_CASE("protocol: the buffer pool keeps the buffer just put back, releasing others", "[protocol]") {
    alignas(4096) static unsigned char region[16 * 4096];
    struct Punch { // as the arena's hole punching: the memory reads back as zeros
        std::vector<std::pair<void *, size_t>> calls;
        static void release(void *self, void *p, size_t n) {
            static_cast<Punch *>(self)->calls.emplace_back(p, n);
            std::memset(p, 0, n);
        }
    } punch;
    ubermatch::protocol::BufferPool pool(12, 16, 4 * 4096);
    pool.carve_from(region, sizeof region, &Punch::release, &punch);
    void *a4 = pool.get(4096);
    void *b4 = pool.get(4096);
    void *a8 = pool.get(8192);
    void *a16 = pool.get(16384);
    pool.put(a4, 4096);
    pool.put(b4, 4096);
    pool.put(a8, 8192);
    CHECK(pool.kept_bytes() == 4 * 4096);
    CHECK(punch.calls.empty());
    pool.put(a16, 16384); // the bound: the 4 KiB class's, put back first, then the 8 KiB one's
    CHECK(punch.calls == std::vector<std::pair<void *, size_t>>{{b4, 4096}, {a4, 4096}, {a8, 8192}});
    CHECK(pool.kept_bytes() == 4 * 4096);
    CHECK(pool.get(16384) == a16);
    CHECK(pool.kept_bytes() == 0);
    // The released ones are still listed (their links survived the release).
    CHECK(pool.kept(4096) == 2);
    CHECK(pool.kept(8192) == 1);
    CHECK(pool.get(4096) == b4);
    CHECK(pool.get(4096) == a4);
    CHECK(pool.get(8192) == a8);
    CHECK(pool.kept_bytes() == 0);
    // Released buffers are not released again, and what cannot make room
    // releases nothing: a buffer larger than the bound gives its own.
    pool.put(a8, 8192);
    pool.put(a4, 4096);
    pool.put(b4, 4096);
    punch.calls.clear();
    void *big = pool.get(32768); // carved: the region's last room
    REQUIRE(pool.carved(big));
    pool.put(big, 32768);
    CHECK(punch.calls == std::vector<std::pair<void *, size_t>>{{big, 32768}});
    CHECK(pool.kept_bytes() == 4 * 4096);
    // A large one after small ones, then a small one after it: each time the
    // others give their memory, the one just put back keeps its own.
    punch.calls.clear();
    pool.put(a16, 16384);
    CHECK(punch.calls == std::vector<std::pair<void *, size_t>>{{a8, 8192}, {b4, 4096}, {a4, 4096}});
    REQUIRE(pool.get(4096) == b4); // the newest of its class
    pool.put(b4, 4096);
    CHECK(punch.calls.back() == std::make_pair(a16, size_t{16384}));
    CHECK(pool.kept_bytes() == 4096);
}

// Buffers of the classes that rotate (rotate_within) come back in turns: the
// one put back longest ago first, as many of each class as fit the bytes
// given; smaller classes, and those of which one buffer fills the bytes, give
// back the newest. One message at a time thus uses all of its class's.
TEST_CASE("protocol: the buffer pool rotates the larger classes' buffers", "[protocol]") {
    alignas(4096) static unsigned char region[64 * 4096];
    ubermatch::protocol::BufferPool pool(12, 20, sizeof region);
    pool.carve_from(region, sizeof region, nullptr, nullptr);
    pool.rotate_within(4 * 8192, 8192); // four 8 KiB buffers, two of 16 KiB; 4 KiB and 32 KiB not
    const auto one_at_a_time = [&](size_t length, int n) {
        std::vector<void *> seen;
        for (int i = 0; i < n; ++i) {
            void *p = pool.get(length);
            REQUIRE(p != nullptr);
            CHECK(pool.carved(p));
            seen.push_back(p);
            pool.put(p, length);
        }
        return seen;
    };
    const auto eights = one_at_a_time(8192, 9);
    CHECK(std::set<void *>(eights.begin(), eights.end()).size() == 4);
    for (size_t i = 4; i < eights.size(); ++i) {
        CHECK(eights[i] == eights[i - 4]); // in turns
    }
    const auto sixteens = one_at_a_time(16384, 4);
    CHECK(sixteens[0] != sixteens[1]);
    CHECK(sixteens[2] == sixteens[0]);
    CHECK(sixteens[3] == sixteens[1]);
    const auto fours = one_at_a_time(4096, 3); // below `from`: the newest
    CHECK(fours[1] == fours[0]);
    CHECK(fours[2] == fours[0]);
    const auto big = one_at_a_time(32768, 3); // one fills the bytes: the newest
    CHECK(big[1] == big[0]);
    CHECK(big[2] == big[0]);
    CHECK(pool.kept(8192) == 4);
    CHECK(pool.kept(16384) == 2);

    INFO("two out at once, then back: the older of the free ones next");
    void *x = pool.get(8192);
    void *y = pool.get(8192);
    CHECK(x != y);
    pool.put(y, 8192);
    pool.put(x, 8192);
    void *next = pool.get(8192);
    CHECK(next != x);
    CHECK(next != y);
    pool.put(next, 8192);
}

// The protocol core's shared-memory rings between two cores of one process
// (pair.h): ring and UCX in MPI order, the rings' limits, rendezvous and
// single-copy pulls from 32 KiB, rings under threads, settling sends.
#include "test/protocol/pair.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

using namespace prototest;

namespace {

// Sends n messages from a to b, sizes alternating around the ring's limit and
// no receive posted (the ring fills, and UCX takes the rest), then receives
// them with wildcards: each must come in send order, whole.
void order_across_paths(Pair &p, size_t limit, int n) {
    um_proto_comm_t *ca = p.comm(p.a, 5);
    um_proto_comm_t *cb = p.comm(p.b, 5);
    std::vector<Op> sends(static_cast<size_t>(n)), recvs(static_cast<size_t>(n));
    std::vector<std::vector<unsigned char>> data, bufs;
    for (int i = 0; i < n; ++i) {
        const size_t size = i % 3 == 2 ? limit + 1 + static_cast<size_t>(i % 7) : static_cast<size_t>(i % 97);
        data.push_back(pattern(size, static_cast<unsigned>(i)));
        bufs.emplace_back(limit + 16);
    }
    for (int i = 0; i < n; ++i) {
        auto &d = data[static_cast<size_t>(i)];
        REQUIRE(p.send(ca, i, d.data(), d.size(), sends[static_cast<size_t>(i)]) == UM_PROTO_OK);
        if (i == 0) { // the offer goes with the first message; let the reply come back
            p.spin(200);
        }
    }
    for (int i = 0; i < n; ++i) {
        auto &b = bufs[static_cast<size_t>(i)];
        REQUIRE(p.post(cb, UM_ANY_SOURCE, UM_ANY_TAG, b.data(), b.size(), recvs[static_cast<size_t>(i)]) ==
                UM_PROTO_OK);
    }
    const bool all = p.until([&] {
        for (const Op &r : recvs) {
            if (!r.done) {
                return false;
            }
        }
        return true;
    });
    REQUIRE(all);
    for (int i = 0; i < n; ++i) {
        const Op &r = recvs[static_cast<size_t>(i)];
        const auto &d = data[static_cast<size_t>(i)];
        INFO("message " << i);
        REQUIRE(r.status == UM_PROTO_OK);
        REQUIRE(r.tag == i);
        REQUIRE(r.received == d.size());
        REQUIRE(prototest::same_bytes(bufs[static_cast<size_t>(i)].data(), d.data(), d.size()));
    }
}

} // namespace

// Payloads of a few bytes are copied without memcpy (copy_payload): each size,
// received posted and unexpected, through UCX and through a ring, arrives whole
// and writes nothing past its end.
TEST_CASE("protocol: every small size arrives whole, posted and unexpected, writing nothing past it",
          "[protocol][shm]") {
    for (const size_t shm : {size_t{0}, size_t{1024}}) {
        DYNAMIC_SECTION((shm != 0 ? "rings" : "UCX only")) {
            Pair p(0, shm);
            um_proto_comm_t *ca = p.comm(p.a, 9);
            um_proto_comm_t *cb = p.comm(p.b, 9);
            for (int pass = 0; pass < 2; ++pass) { // the first pass also makes the ring
                for (size_t n = 0; n <= 40; ++n) {
                    for (const bool unexpected : {false, true}) {
                        INFO("pass " << pass << ", " << n << " bytes, " << (unexpected ? "unexpected" : "posted"));
                        const auto m = pattern(n, static_cast<unsigned>(n) + 1);
                        std::vector<unsigned char> buf(n + 16, 0xEE);
                        Op s, r;
                        if (unexpected) {
                            REQUIRE(p.send(ca, 3, m.data(), n, s) == UM_PROTO_OK);
                            REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == 1; }));
                        }
                        REQUIRE(p.post(cb, 0, 3, buf.data(), n + 8, r) == UM_PROTO_OK);
                        if (!unexpected) {
                            REQUIRE(p.send(ca, 3, m.data(), n, s) == UM_PROTO_OK);
                        }
                        REQUIRE(p.until([&] { return r.done && s.done; }));
                        CHECK(r.status == UM_PROTO_OK);
                        CHECK(r.received == n);
                        CHECK(prototest::same_bytes(buf.data(), m.data(), n));
                        size_t past = 0;
                        for (size_t i = n; i < buf.size(); ++i) {
                            past += buf[i] != 0xEE;
                        }
                        CHECK(past == 0);
                    }
                }
            }
            if (shm != 0) {
                CHECK(shm_of(p.a).sent > 0); // the second pass went through the ring
            }
        }
    }
}

TEST_CASE("protocol: shared-memory ring and UCX together keep MPI order", "[protocol][shm]") {
    Pair p(0, 1024);
    order_across_paths(p, 1024, 12000); // more than a ring holds: some small ones go by UCX too
    const auto a = shm_of(p.a);
    const auto b = shm_of(p.b);
    CHECK(a.rings_out == 1);
    CHECK(b.rings_in == 1);
    CHECK(a.sent > 1500);    // a ring-full of the 8000 small messages went through it...
    CHECK(a.sent < 8000);    // ...the rest by UCX once it was full
    CHECK(b.received == a.sent);
}

TEST_CASE("protocol: a ring takes messages up to a 16th of its size when shm_eager_limit allows more",
          "[protocol][shm]") {
    Pair p(0, 32768); // rings of 256 KiB (the default): 16 KiB
    CHECK(shm_of(p.a).eager_limit == 16384);
    um_proto_comm_t *ca = p.comm(p.a, 7);
    um_proto_comm_t *cb = p.comm(p.b, 7);
    const auto m = pattern(16385, 7);
    std::vector<unsigned char> buf(16385);
    // The first message offers the ring; then one at the limit and one past it.
    const size_t sizes[] = {8, 16384, 16385};
    uint64_t through_ring[3];
    for (int i = 0; i < 3; ++i) {
        Op s, r;
        REQUIRE(p.post(cb, 0, i, buf.data(), buf.size(), r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, i, m.data(), sizes[i], s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.received == sizes[i]);
        CHECK(prototest::same_bytes(buf.data(), m.data(), sizes[i]));
        REQUIRE(p.until([&] { return shm_of(p.a).rings_out == 1; }));
        through_ring[i] = shm_of(p.a).sent;
    }
    CHECK(through_ring[1] == through_ring[0] + 1);
    CHECK(through_ring[2] == through_ring[1]);
}

// To a peer of the node that UCX reaches with a single-copy lane, 32 KiB and
// more go by rendezvous (the send waits for its receive); to any other peer
// by UCX's threshold (64 KiB: eager, done at once).
TEST_CASE("protocol: rendezvous from 32 KiB to a peer of the node with a single-copy lane", "[protocol][shm]") {
    for (const bool local : {true, false}) {
        Pair p(0, local ? 1024 : 0);
        char lanes[256] = "";
        um_proto_peer_transports(p.a, p.a_to_b, lanes, sizeof lanes);
        INFO("local " << local << ", lanes " << lanes);
        // Its own reading of the lanes, not the protocol's: a protocol that
        // misread them would make this test skip instead of fail.
        const bool single_copy = std::strstr(lanes, "cma/") != nullptr || std::strstr(lanes, "knem/") != nullptr ||
                                 std::strstr(lanes, "xpmem/") != nullptr;
        if (local && !single_copy) {
            WARN("skipped: UCX has no single-copy lane between two workers here (" << lanes << ")");
            continue;
        }
        um_proto_comm_t *ca = p.comm(p.a, 9);
        um_proto_comm_t *cb = p.comm(p.b, 9);
        const size_t n = 40000;
        const auto m = pattern(n, 9);
        std::vector<unsigned char> buf(n);
        Op s, r;
        REQUIRE(p.send(ca, 1, m.data(), n, s) == UM_PROTO_OK);
        p.spin(1000);
        CHECK(s.done == !local); // unexpected: a rendezvous waits for its receive
        REQUIRE(p.post(cb, 0, 1, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(buf == m);
    }
}

namespace {

// b's ring to a, up before b's sending threads start: its offer and the reply
// need this thread's progress, which four sending threads on two cores can
// starve until every message has gone through UCX (CI saw it).
void ring_up_from_b(Pair &p, um_proto_comm_t *ca, um_proto_comm_t *cb, int32_t tag) {
    Op ws, wr;
    const auto wm = pattern(8, 99);
    std::vector<unsigned char> wbuf(16);
    REQUIRE(Pair::post_at(p.a, ca, 1, tag, wbuf.data(), wbuf.size(), wr) == UM_PROTO_OK);
    const um_hint_t hint{};
    REQUIRE(um_proto_send(p.b, cb, p.b_to_a, 0, tag, &hint, wm.data(), wm.size(), 0, &ws.send, &ws) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return wr.done && ws.done && shm_of(p.b).rings_out == 1; }));
}

// `threads` threads of b (MPI_THREAD_MULTIPLE) send `each` messages to a at
// once, thread t under tag t, message k of size(k); a's receives of each tag
// are posted in order first, and this thread progresses both until every
// receive and send is done. wrong(): messages not received whole, in their
// thread's order, or sends that failed.
class ThreadedSends {
public:
    template <typename Size>
    ThreadedSends(Pair &p, um_proto_comm_t *ca, int threads, int each, Size size)
        : p_(p), threads_(threads), each_(each), n_(static_cast<size_t>(threads * each)), sends_(n_), recvs_(n_),
          data_(n_), bufs_(n_) {
        for (int t = 0; t < threads; ++t) {
            for (int k = 0; k < each; ++k) {
                const size_t i = static_cast<size_t>(t * each + k);
                data_[i] = pattern(size(k), static_cast<unsigned>(i));
                bufs_[i].resize(data_[i].size() + 100);
                REQUIRE(Pair::post_at(p.a, ca, 1, t, bufs_[i].data(), bufs_[i].size(), recvs_[i]) == UM_PROTO_OK);
            }
        }
    }
    void run(um_proto_comm_t *cb) {
        std::atomic<int> senders_done{0};
        std::vector<std::thread> senders;
        for (int t = 0; t < threads_; ++t) {
            senders.emplace_back([&, t] {
                const um_hint_t hint{};
                for (int k = 0; k < each_; ++k) {
                    const size_t i = static_cast<size_t>(t * each_ + k);
                    if (um_proto_send(p_.b, cb, p_.b_to_a, 0, t, &hint, data_[i].data(), data_[i].size(), 0,
                                      &sends_[i].send, &sends_[i]) != UM_PROTO_OK) {
                        send_errors_.fetch_add(1);
                    }
                }
                senders_done.fetch_add(1);
            });
        }
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while ((senders_done.load() < threads_ || !all_done(recvs_)) && std::chrono::steady_clock::now() < end) {
            p_.spin(4);
        }
        for (std::thread &s : senders) {
            s.join();
        }
        REQUIRE(p_.until([&] { return all_done(sends_); })); // the last hand-backs of pulls
        REQUIRE(send_errors_.load() == 0);
    }
    int wrong() const {
        int n = 0;
        for (size_t i = 0; i < n_; ++i) {
            const Op &r = recvs_[i];
            n += (!r.done || r.status != UM_PROTO_OK || r.received != data_[i].size() ||
                  !prototest::same_bytes(bufs_[i].data(), data_[i].data(), data_[i].size()) ||
                  sends_[i].status != UM_PROTO_OK) ? 1 : 0;
        }
        return n;
    }

private:
    static bool all_done(const std::vector<Op> &ops) {
        return std::all_of(ops.begin(), ops.end(), [](const Op &o) { return o.done; });
    }
    Pair &p_;
    const int threads_, each_;
    const size_t n_;
    std::vector<Op> sends_, recvs_;
    std::vector<std::vector<unsigned char>> data_, bufs_;
    std::atomic<int> send_errors_{0};
};

} // namespace

TEST_CASE("protocol: with threads the ring carries small messages both ways, each thread's order kept",
          "[protocol][shm][threads]") {
    Pair p(0, 1024, true); // b: MPI_THREAD_MULTIPLE
    // To b: its progress (inside the gate) reads the ring.
    order_across_paths(p, 1024, 300);
    CHECK(shm_of(p.a).rings_out == 1);
    CHECK(shm_of(p.a).sent > 0);
    CHECK(shm_of(p.b).received == shm_of(p.a).sent);

    // From b: four threads send to a at once, 1500 messages each under their
    // own tag (every fifth beyond the ring's limit, so both paths interleave),
    // while this thread progresses both; a's receives of a tag, posted in
    // order, must get that thread's messages in order.
    um_proto_comm_t *ca = p.comm(p.a, 6);
    um_proto_comm_t *cb = p.comm(p.b, 6);
    ThreadedSends t(p, ca, 4, 1500, [](int k) { return k % 5 == 4 ? size_t{1100} : static_cast<size_t>(8 + k % 200); });
    ring_up_from_b(p, ca, cb, 4);
    const uint64_t ring_before = shm_of(p.b).sent;
    t.run(cb);
    CHECK(t.wrong() == 0);
    CHECK(shm_of(p.b).rings_out == 1);
    CHECK(shm_of(p.b).sent > ring_before);
    CHECK(shm_of(p.a).received == shm_of(p.b).sent);
}

TEST_CASE("protocol: shm_eager_limit beyond what a ring carries is refused at creation", "[protocol][shm]") {
    um_proto_config_t c{};
    c.backend = "auto";
    um_params_init(&c.params);
    c.shm_eager_limit = size_t{1} << 20;
    um_proto_t *p = nullptr;
    char err[256] = "";
    CHECK(um_proto_create(&c, &kCallbacks, &p, err, sizeof err) == UM_PROTO_ERROR);
    CHECK(std::string(err).find("is out of range; valid values are 0 .. ") != std::string::npos);
    CHECK(p == nullptr);
}


// Past the ring's limit (1024 here), with the ring up, b reads a's buffer itself
// once a receive matches (the two cores are one process here: CMA on itself is
// allowed).
TEST_CASE("protocol: single-copy pulls: unexpected, posted, probed, truncated, unpacked, synchronous",
          "[protocol][shm][pull]") {
    PullPair p(11);
    um_proto_comm_t *const ca = p.ca, *const cb = p.cb;
    const size_t n = 40000;
    const auto m = pattern(n, 11);
    {
        INFO("unexpected: the send waits until a receive has read it");
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(p.send(ca, 1, m.data(), n, s) == UM_PROTO_OK);
        p.spin(1000);
        CHECK_FALSE(s.done);
        CHECK(shm_of(p.a).pulls_sent == 1);
        const um_hint_t hint{};
        int found = 0;
        um_proto_msg_info_t info{};
        REQUIRE(um_proto_probe(p.b, cb, 0, 1, &hint, 0, &found, &info, nullptr) == UM_PROTO_OK);
        CHECK(found == 1);
        CHECK(info.length == n);
        REQUIRE(p.post(cb, 0, 1, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(r.received == n);
        CHECK(buf == m);
        CHECK(s.status == UM_PROTO_OK);
        CHECK(shm_of(p.b).pulls_read == 1);
    }
    {
        INFO("posted, then truncated: no byte past the receive's capacity");
        Op s, r, s2, r2;
        std::vector<unsigned char> buf(n);
        REQUIRE(p.post(cb, 0, 2, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 2, m.data(), n, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(buf == m);
        std::vector<unsigned char> small(30016, 0xEE);
        REQUIRE(p.post(cb, 0, 3, small.data(), 30000, r2) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 3, m.data(), n, s2) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r2.done && s2.done; }));
        CHECK(r2.status == UM_PROTO_TRUNCATED);
        CHECK(r2.received == 30000);
        CHECK(r2.length == n);
        CHECK(prototest::same_bytes(small.data(), m.data(), 30000));
        CHECK(std::count(small.begin() + 30000, small.end(), 0xEE) == 16);
        CHECK(s2.status == UM_PROTO_OK);
    }
    {
        INFO("without a contiguous buffer: through the unpack callback, in pieces, in order");
        const auto big = pattern(600000, 12);
        Op s, r;
        REQUIRE(p.post(cb, 0, 4, nullptr, big.size(), r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 4, big.data(), big.size(), s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(r.unpacked == big);
        CHECK(r.unpack_messages == 1);
        CHECK(r.unpack_pieces == 3); // 256 KiB, 256 KiB, the rest
        CHECK_FALSE(r.unpack_out_of_order);

        INFO("... and truncated: the pieces stop at the receive's capacity");
        Op s2, r2;
        REQUIRE(p.post(cb, 0, 6, nullptr, 300000, r2) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 6, big.data(), big.size(), s2) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r2.done && s2.done; }));
        CHECK(r2.status == UM_PROTO_TRUNCATED);
        CHECK(r2.received == 300000);
        CHECK(r2.unpacked == std::vector<unsigned char>(big.begin(), big.begin() + 300000));
        CHECK(r2.unpack_pieces == 2);
        CHECK(s2.status == UM_PROTO_OK);
    }
    {
        INFO("synchronous: done when matched, not before");
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(p.send(ca, 5, m.data(), n, s, true) == UM_PROTO_OK);
        p.spin(1000);
        CHECK_FALSE(s.done);
        REQUIRE(p.post(cb, 0, 5, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(buf == m);
    }
    CHECK(shm_of(p.a).pulls_sent == 6);
    CHECK(shm_of(p.b).pulls_read == 6);
}

// A sender has at most kReturns pulls out per ring: the next ones go by UCX
// and the receiver still takes all in send order; the return slots are
// reused lap after lap.
TEST_CASE("protocol: pulls beyond the return slots go by UCX, in order, and the slots wrap",
          "[protocol][shm][pull]") {
    PullPair p(13);
    um_proto_comm_t *const ca = p.ca, *const cb = p.cb;
    const int n = 300;
    std::vector<std::vector<unsigned char>> data;
    for (int i = 0; i < n; ++i) {
        data.push_back(pattern(33000, static_cast<unsigned>(i)));
    }
    for (uint64_t round = 1; round <= 3; ++round) {
        INFO("round " << round);
        std::vector<Op> sends(n), recvs(n);
        std::vector<std::vector<unsigned char>> bufs(n, std::vector<unsigned char>(33000));
        for (int i = 0; i < n; ++i) {
            REQUIRE(p.send(ca, i, data[i].data(), data[i].size(), sends[i]) == UM_PROTO_OK);
        }
        p.spin(100);
        CHECK(shm_of(p.a).pulls_sent == round * ubermatch::protocol::shm::kReturns);
        for (int i = 0; i < n; ++i) {
            REQUIRE(p.post(cb, UM_ANY_SOURCE, UM_ANY_TAG, bufs[i].data(), bufs[i].size(), recvs[i]) ==
                    UM_PROTO_OK);
        }
        REQUIRE(p.until([&] {
            return std::all_of(recvs.begin(), recvs.end(), [](const Op &o) { return o.done; }) &&
                   std::all_of(sends.begin(), sends.end(), [](const Op &o) { return o.done; });
        }));
        int wrong = 0;
        for (int i = 0; i < n; ++i) {
            wrong += (recvs[i].tag != i || recvs[i].status != UM_PROTO_OK || bufs[i] != data[i] ||
                      sends[i].status != UM_PROTO_OK) ? 1 : 0;
        }
        CHECK(wrong == 0);
    }
}

// A pull that no receive takes is handed back when its communicator goes: its
// send completes instead of waiting for ever.
TEST_CASE("protocol: a pull never received is handed back when its communicator is freed",
          "[protocol][shm][pull]") {
    PullPair p(14);
    um_proto_comm_t *gone = nullptr;
    char err[256];
    REQUIRE(um_proto_comm_create(p.b, 15, 1, 2, nullptr, &gone, err, sizeof err) == UM_PROTO_OK);
    um_proto_comm_t *ca15 = p.comm(p.a, 15);
    const auto m = pattern(50000, 15);
    Op s;
    REQUIRE(p.send(ca15, 1, m.data(), m.size(), s) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return unexpected_len(p.b, gone) == 1; }));
    p.spin(100);
    CHECK_FALSE(s.done);
    CHECK(shm_of(p.a).pulls_sent == 1);
    um_proto_comm_destroy(p.b, gone);
    REQUIRE(p.until([&] { return s.done; }));
    CHECK(s.status == UM_PROTO_OK);
}

// Which messages are pulled: from kPullMin (12 KiB) even where the ring would
// take them eagerly, and every one past the ring's eager limit.
TEST_CASE("protocol: pulls from 12 KiB, and past the ring's eager limit", "[protocol][shm][pull]") {
    for (const uint32_t cells : {8192u, 4096u, 1024u}) { // rings of 512, 256 and 64 KiB: limits 32, 16, 8 KiB
        Pair p(0, 32768, false, 0, true, cells);
        um_proto_comm_t *ca = p.comm(p.a, 16);
        um_proto_comm_t *cb = p.comm(p.b, 16);
        ring_up(p, ca, cb);
        const size_t eager = shm_of(p.a).eager_limit;
        INFO("eager limit " << eager);
        const auto m = pattern(24576, 16);
        std::vector<unsigned char> buf(m.size());
        for (const size_t n : {size_t{8192}, size_t{8193}, size_t{12287}, size_t{12288}, size_t{24576}}) {
            INFO(n << " bytes");
            const auto before = shm_of(p.a);
            Op s, r;
            REQUIRE(p.post(cb, 0, 1, buf.data(), buf.size(), r) == UM_PROTO_OK);
            REQUIRE(p.send(ca, 1, m.data(), n, s) == UM_PROTO_OK);
            REQUIRE(p.until([&] { return r.done && s.done; }));
            CHECK(r.received == n);
            CHECK(prototest::same_bytes(buf.data(), m.data(), n));
            const auto after = shm_of(p.a);
            const bool pulled = n >= 12288 || n > eager;
            CHECK(after.pulls_sent - before.pulls_sent == (pulled ? 1u : 0u));
            CHECK(after.sent - before.sent == (pulled ? 0u : 1u)); // else an eager record
        }
    }
}

// Under MPI_THREAD_MULTIPLE (b): four threads send to a at once, every third
// message a pull (pushed under the peer's ring lock, handed back in b's
// progress gate), the rest small through the ring; a's receives of a thread's
// tag, posted in order, get that thread's messages in order and whole, and
// every send completes.
TEST_CASE("protocol: with threads, pulls and small messages from four threads keep each thread's order",
          "[protocol][shm][pull][threads]") {
    Pair p(0, 1024, true, 0, true); // b: MPI_THREAD_MULTIPLE
    um_proto_comm_t *ca = p.comm(p.a, 17);
    um_proto_comm_t *cb = p.comm(p.b, 17);
    ThreadedSends t(p, ca, 4, 300, [](int k) {
        return k % 3 == 2 ? 13000 + static_cast<size_t>(k) : 8 + static_cast<size_t>(k % 100);
    });
    ring_up_from_b(p, ca, cb, 4);
    t.run(cb);
    CHECK(t.wrong() == 0);
    CHECK(shm_of(p.b).pulls_sent > 0);
    CHECK(shm_of(p.a).pulls_read == shm_of(p.b).pulls_sent);
}

// One receiver with more rings than it polls on every round (all of them up
// to 8): rings left idle go cold and are then polled a few a round in turn.
// After the receiver has spun long enough, every ring is cold; messages sent
// on each must still arrive, through the rings, whole and in each sender's
// order, and every ring that delivered is hot again.
TEST_CASE("protocol: with many rings, messages on rings gone cold arrive whole and in order", "[protocol][shm]") {
    constexpr int kSenders = 11;
    constexpr int kPerSender = 3;
    const int size = kSenders + 1;
    um_proto_t *r = make(0, 1024);
    std::vector<um_proto_t *> s;
    std::vector<um_proto_peer_t *> to_r, from_r;
    std::vector<um_proto_comm_t *> cs;
    um_proto_comm_t *cr = nullptr;
    char err[256];
    REQUIRE(um_proto_comm_create(r, 5, 0, size, nullptr, &cr, err, sizeof err) == UM_PROTO_OK);
    for (int i = 0; i < kSenders; ++i) {
        s.push_back(make(0, 1024));
        to_r.push_back(Pair::connect(s.back(), r, true));
        from_r.push_back(Pair::connect(r, s.back(), true));
        um_proto_comm_t *c = nullptr;
        REQUIRE(um_proto_comm_create(s.back(), 5, i + 1, size, nullptr, &c, err, sizeof err) == UM_PROTO_OK);
        cs.push_back(c);
    }
    const auto progress_all = [&] {
        um_proto_progress(r);
        for (um_proto_t *p : s) {
            um_proto_progress(p);
        }
    };
    const auto until = [&](auto &&done) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
            progress_all();
        }
        return true;
    };
    // Each sender sends a round of messages (tag = round) and the receiver
    // takes them with one receive per sender, in order.
    const auto round = [&](int tag, int per_sender) {
        std::vector<Op> sends(static_cast<size_t>(kSenders * per_sender));
        std::vector<Op> recvs(sends.size());
        std::vector<std::vector<unsigned char>> data, bufs;
        for (size_t k = 0; k < sends.size(); ++k) {
            data.push_back(pattern(24 + k, static_cast<unsigned>(tag * 1000) + static_cast<unsigned>(k)));
            bufs.emplace_back(data.back().size(), 0);
        }
        const um_hint_t hint{};
        for (int j = 0; j < per_sender; ++j) {
            for (int i = 0; i < kSenders; ++i) {
                const size_t k = static_cast<size_t>(i * per_sender + j);
                REQUIRE(um_proto_send(s[static_cast<size_t>(i)], cs[static_cast<size_t>(i)],
                                      to_r[static_cast<size_t>(i)], 0, tag, &hint, data[k].data(),
                                      data[k].size(), 0, &sends[k].send, &sends[k]) == UM_PROTO_OK);
            }
        }
        for (int i = 0; i < kSenders; ++i) {
            for (int j = 0; j < per_sender; ++j) {
                const size_t k = static_cast<size_t>(i * per_sender + j);
                REQUIRE(Pair::post_at(r, cr, i + 1, tag, bufs[k].data(), bufs[k].size(), recvs[k]) ==
                        UM_PROTO_OK);
            }
        }
        REQUIRE(until([&] {
            return std::all_of(recvs.begin(), recvs.end(), [](const Op &o) { return o.done; }) &&
                   std::all_of(sends.begin(), sends.end(), [](const Op &o) { return o.done; });
        }));
        for (size_t k = 0; k < recvs.size(); ++k) {
            INFO("round " << tag << ", message " << k);
            REQUIRE(recvs[k].status == UM_PROTO_OK);
            REQUIRE(recvs[k].received == data[k].size());
            REQUIRE(bufs[k] == data[k]); // a receive posted j-th for a sender took its j-th message
        }
    };
    round(0, 1); // the offers go with these; the rings are up once they are answered
    for (int i = 0; i < 2000; ++i) {
        progress_all();
    }
    um_proto_shm_counts_t before{};
    um_proto_shm_stats(r, &before);
    REQUIRE(before.rings_in == kSenders);
    round(1, 1);
    um_proto_shm_counts_t used{};
    um_proto_shm_stats(r, &used);
    CHECK(used.rings_cold == 0); // each ring that delivered is hot
    for (int i = 0; i < 200000; ++i) { // every ring empty for far longer than a ring stays hot
        um_proto_progress(r);
    }
    um_proto_shm_counts_t cooled{};
    um_proto_shm_stats(r, &cooled);
    CHECK(cooled.rings_cold == kSenders);
    round(2, kPerSender);
    um_proto_shm_counts_t woken{};
    um_proto_shm_stats(r, &woken);
    CHECK(woken.rings_cold == 0);
    round(3, kPerSender);
    um_proto_shm_counts_t after{};
    um_proto_shm_stats(r, &after);
    CHECK(after.received - before.received == uint64_t{kSenders} * (1 + 2 * kPerSender));

    um_proto_comm_destroy(r, cr);
    for (int i = 0; i < kSenders; ++i) {
        um_proto_comm_destroy(s[static_cast<size_t>(i)], cs[static_cast<size_t>(i)]);
        Pair::disconnect_progressing(s[static_cast<size_t>(i)], &to_r[static_cast<size_t>(i)], r);
        Pair::disconnect_progressing(r, &from_r[static_cast<size_t>(i)], s[static_cast<size_t>(i)]);
        um_proto_destroy(s[static_cast<size_t>(i)]);
    }
    um_proto_destroy(r);
}

namespace {
std::atomic<bool> g_slow_started{false};
Op *g_slow_op = nullptr;
// The slow receive's completion holds its core's progress gate a while.
void slow_receive(Op *op) {
    if (op == g_slow_op) {
        g_slow_started.store(true, std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
}
} // namespace

// A buffered send that finds no room first settles the sends whose receivers
// are done with them (um_proto_settle_sends). With threads, while another
// thread is inside progress, it waits for that round to end and reaps after
// it: a hand-back written meanwhile is not left unreaped.
TEST_CASE("protocol: with threads, settling sends waits for the thread inside progress",
          "[protocol][shm][pull][threads]") {
    Pair p(0, 1024, true, 0, true); // b runs with thread_multiple; both pull
    um_proto_comm_t *ca = p.comm(p.a, 43);
    um_proto_comm_t *cb = p.comm(p.b, 43);
    const um_hint_t hint{};
    const size_t n = 20000; // a pull
    const auto m = pattern(n, 43);
    ring_up_from_b(p, ca, cb);
    Op pulled, slow, slow_send, r;
    REQUIRE(um_proto_send(p.b, cb, p.b_to_a, 0, 1, &hint, m.data(), n, 0, &pulled.send, &pulled) == UM_PROTO_OK);
    std::vector<unsigned char> one(8), buf(n);
    g_slow_op = &slow;
    g_recv_done_hook = slow_receive;
    REQUIRE(Pair::post_at(p.b, cb, 0, 2, one.data(), one.size(), slow) == UM_PROTO_OK);
    struct Unhook { // also when a REQUIRE below fails
        ~Unhook() {
            g_recv_done_hook = nullptr;
            g_slow_op = nullptr;
        }
    } unhook;
    Progressing progress(p.b); // b's progress: this thread alone
    REQUIRE(um_proto_send(p.a, ca, p.a_to_b, 1, 2, &hint, m.data(), 8, 0, &slow_send.send, &slow_send) ==
            UM_PROTO_OK);
    const auto progress_a_until = [&](const auto &done) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!done() && std::chrono::steady_clock::now() < end) {
            um_proto_progress(p.a);
        }
        return done();
    };
    REQUIRE(progress_a_until([] { return g_slow_started.load(std::memory_order_acquire); }));
    INFO("a receives the pull (and hands it back) while b's progress sleeps in a completion");
    REQUIRE(Pair::post_at(p.a, ca, 1, 1, buf.data(), n, r) == UM_PROTO_OK);
    REQUIRE(progress_a_until([&] { return __atomic_load_n(&r.done, __ATOMIC_ACQUIRE); }));
    CHECK(buf == m);
    CHECK_FALSE(__atomic_load_n(&pulled.done, __ATOMIC_ACQUIRE)); // handed back, not reaped
    um_proto_settle_sends(p.b);
    CHECK(__atomic_load_n(&pulled.done, __ATOMIC_ACQUIRE)); // reaped by the time it returns
    progress.stop();
    REQUIRE(p.until([&] { return slow.done && slow_send.done && pulled.done; }));
    CHECK(pulled.status == UM_PROTO_OK);
}

// With threads a small send still completes inside the call while the peer's
// ring has room (no request, as single-threaded), and takes its number only
// then: once the ring is full it returns 0 having numbered nothing, and the
// send that goes through UCX instead is received in its turn, after them all.
TEST_CASE("protocol: with threads, a small send goes inside the call while the ring has room",
          "[protocol][shm][threads]") {
    Pair p(0, 1024, true); // b runs with thread_multiple
    um_proto_comm_t *ca = p.comm(p.a, 44);
    um_proto_comm_t *cb = p.comm(p.b, 44);
    const um_hint_t hint{};
    ring_up_from_b(p, ca, cb);
    const uint64_t sent_before = shm_of(p.b).sent;
    constexpr int kMost = 1 << 20; // far more than a ring holds
    int n = 0;
    while (n < kMost && um_proto_send_now(p.b, cb, p.b_to_a, 0, n, &hint, &n, sizeof n) == 1) {
        ++n; // a does not progress: the ring fills
    }
    INFO(n << " sent inside the call");
    REQUIRE(n > 0);
    REQUIRE(n < kMost);
    CHECK(shm_of(p.b).sent == sent_before + static_cast<uint64_t>(n));
    Op last;
    REQUIRE(um_proto_send(p.b, cb, p.b_to_a, 0, n, &hint, &n, sizeof n, 0, &last.send, &last) == UM_PROTO_OK);
    for (int i = 0; i <= n; ++i) {
        int got = -1;
        Op r;
        REQUIRE(Pair::post_at(p.a, ca, 1, UM_ANY_TAG, &got, sizeof got, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done; }));
        REQUIRE(r.tag == i);
        REQUIRE(got == i);
    }
    REQUIRE(p.until([&] { return last.done; }));
    CHECK(last.status == UM_PROTO_OK);
}

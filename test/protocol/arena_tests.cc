// The packed sends' arena (protocol/shm.h, Arena): buffers from
// um_proto_send_buffer are unpacked by the receiver straight from its mapping
// of the sender's shared memory, and a send packed by the protocol goes as a
// pull whose record leaves before its data, unpacked piece by piece.
#include "test/protocol/pair.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace prototest;

// Packed sends' buffers come from the sender's arena of shared memory: the
// receiver maps it once and copies or unpacks straight from it (one piece,
// no CMA); other buffers are still read by CMA.
TEST_CASE("protocol: pulls of send buffers are unpacked from the sender's mapped arena", "[protocol][shm][pull]") {
    PullPair p(17);
    um_proto_comm_t *const ca = p.ca, *const cb = p.cb;
    const size_t n = 600000;
    const auto m = pattern(n, 17);
    auto *packed = static_cast<unsigned char *>(um_proto_send_buffer(p.a, n));
    REQUIRE(packed != nullptr);
    std::memcpy(packed, m.data(), n);
    {
        INFO("into a contiguous receive");
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(p.send(ca, 1, packed, n, s) == UM_PROTO_OK);
        REQUIRE(p.post(cb, 0, 1, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(buf == m);
        CHECK(shm_of(p.b).pulls_mapped == 1);
    }
    {
        INFO("through the unpack callback: the whole message in one piece");
        Op s, r;
        REQUIRE(p.post(cb, 0, 2, nullptr, n, r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 2, packed, n, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.unpacked == m);
        CHECK(r.unpack_pieces == 1);
        CHECK(shm_of(p.b).pulls_mapped == 2);
    }
    {
        INFO("truncated: no byte past the receive's capacity");
        Op s, r;
        std::vector<unsigned char> small(1016, 0xEE);
        REQUIRE(p.post(cb, 0, 3, small.data(), 1000, r) == UM_PROTO_OK);
        REQUIRE(p.send(ca, 3, packed, n, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_TRUNCATED);
        CHECK(prototest::same_bytes(small.data(), m.data(), 1000));
        CHECK(std::count(small.begin() + 1000, small.end(), 0xEE) == 16);
    }
    {
        INFO("a buffer outside the arena: read by CMA");
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(p.send(ca, 4, m.data(), n, s) == UM_PROTO_OK);
        REQUIRE(p.post(cb, 0, 4, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(buf == m);
        CHECK(shm_of(p.b).pulls_mapped == 3);
        CHECK(shm_of(p.b).pulls_read == 4);
    }
    um_proto_send_buffer_return(p.a, packed, n);
    CHECK(um_proto_send_buffer(p.a, n) == packed); // kept for the next send
    um_proto_send_buffer_return(p.a, packed, n);
}

namespace {

// A glue's packing as um_proto_send_packing calls it: copies from `src`, logs
// each call, and whether the pull's record was out before the first piece.
struct Packing {
    explicit Packing(const unsigned char *from) : src(from) {}
    const unsigned char *src;
    um_proto_t *sender = nullptr;
    uint64_t pulls_before = 0;
    std::chrono::milliseconds nap{0}; // per piece: a slow sender
    size_t fail_at = SIZE_MAX;         // the piece at this offset fails
    std::vector<std::pair<size_t, size_t>> calls;
    std::vector<const void *> dests;
    std::atomic<int> started{0}; // pack calls begun, for other threads
    bool record_first = false;
    const Op *send_op = nullptr; // its completion is watched while packing
    bool done_while_packing = false;
    static int pack(void *arg, size_t offset, void *dest, size_t length) {
        auto *p = static_cast<Packing *>(arg);
        if (p->calls.empty()) {
            p->record_first = shm_of(p->sender).pulls_sent == p->pulls_before + 1;
        }
        if (p->send_op != nullptr && __atomic_load_n(&p->send_op->done, __ATOMIC_ACQUIRE)) {
            p->done_while_packing = true;
        }
        p->calls.emplace_back(offset, length);
        p->dests.push_back(dest);
        p->started.fetch_add(1, std::memory_order_release);
        std::this_thread::sleep_for(p->nap);
        if (offset == p->fail_at) {
            return 1;
        }
        std::memcpy(dest, p->src + offset, length);
        return 0;
    }
    // Of the calls, those given a place other than their own in buffer (a stage).
    size_t staged(const unsigned char *buffer) const {
        size_t k = 0;
        for (size_t i = 0; i < calls.size(); ++i) {
            k += dests[i] != buffer + calls[i].first;
        }
        return k;
    }
};

// buffer: the send's (from um_proto_send_buffer), or null for the call to take
// one where it packs into it; taken: where the buffer it used goes (null: none).
int send_packing(PullPair &p, int32_t tag, void *buffer, size_t n, Packing &pk, Op &op, bool rows = false,
                 void **taken = nullptr) {
    const um_hint_t hint{};
    pk.sender = p.a;
    pk.pulls_before = shm_of(p.a).pulls_sent;
    const int rc = um_proto_send_packing(p.a, p.ca, p.a_to_b, 1, tag, &hint, &buffer, n, 0, &op.send, &op,
                                         Packing::pack, &pk, rows ? 1 : 0);
    if (taken != nullptr) {
        *taken = buffer;
    }
    return rc;
}

} // namespace

// A packed send into the arena goes as a pull whose record leaves before the
// data is packed: the receiver unpacks each piece once the sender says it is
// there, while the sender packs the next.
TEST_CASE("protocol: a pull from the arena is packed while its receiver unpacks", "[protocol][shm][pull]") {
    PullPair p(19);
    const size_t n = 300000; // 10 pieces of 32 KiB
    const auto m = pattern(n, 19);
    auto *buffer = static_cast<unsigned char *>(um_proto_send_buffer(p.a, n));
    REQUIRE(buffer != nullptr);
    {
        INFO("the record first, then the pieces in order");
        Packing pk(m.data());
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(send_packing(p, 1, buffer, n, pk, s) == UM_PROTO_OK);
        CHECK(pk.record_first);
        REQUIRE(pk.calls.size() == 10);
        for (size_t i = 0; i < pk.calls.size(); ++i) {
            CHECK(pk.calls[i].first == i * 32768);
        }
        CHECK(shm_of(p.a).pulls_streamed == 1);
        REQUIRE(p.post(p.cb, 0, 1, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(buf == m);
    }
    {
        INFO("a slow sender: the receiver, matched, unpacks the pieces as they come");
        Packing pk(m.data());
        pk.nap = std::chrono::milliseconds(3);
        Op s, r;
        REQUIRE(p.post(p.cb, 0, 2, nullptr, n, r) == UM_PROTO_OK);
        int rc = UM_PROTO_ERROR;
        std::thread sender([&] { rc = send_packing(p, 2, buffer, n, pk, s); });
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!r.done && std::chrono::steady_clock::now() < end) {
            um_proto_progress(p.b); // a alone is inside the send, on its own thread
        }
        sender.join();
        REQUIRE(rc == UM_PROTO_OK);
        REQUIRE(r.done);
        CHECK(r.status == UM_PROTO_OK);
        CHECK(r.unpacked == m);
        CHECK(r.unpack_pieces > 2); // whole when packed first: one piece
        CHECK_FALSE(r.unpack_out_of_order);
        REQUIRE(p.until([&] { return s.done; }));
    }
    {
        INFO("a buffer outside the arena: packed whole, then sent");
        std::vector<unsigned char> plain(n);
        Packing pk(m.data());
        Op s, r;
        std::vector<unsigned char> buf(n);
        const uint64_t streamed = shm_of(p.a).pulls_streamed;
        REQUIRE(send_packing(p, 3, plain.data(), n, pk, s) == UM_PROTO_OK);
        CHECK_FALSE(pk.record_first);
        REQUIRE(pk.calls.size() == 1);
        CHECK(pk.calls[0] == std::make_pair(size_t{0}, n));
        CHECK(shm_of(p.a).pulls_streamed == streamed);
        REQUIRE(p.post(p.cb, 0, 3, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(buf == m);
    }
    {
        INFO("packing that fails after the record went out fails the send and its receive");
        Packing pk(m.data());
        pk.fail_at = 3 * 32768;
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(send_packing(p, 4, buffer, n, pk, s) == UM_PROTO_OK); // out: completes by the receiver
        CHECK(pk.record_first);
        CHECK(pk.calls.size() == 4);

        INFO("... a send while that pull is out is packed first (the slot still says it failed)");
        auto *second = static_cast<unsigned char *>(um_proto_send_buffer(p.a, n));
        REQUIRE(second != nullptr);
        Packing next(m.data());
        Op s2, r2;
        std::vector<unsigned char> buf2(n);
        REQUIRE(send_packing(p, 5, second, n, next, s2) == UM_PROTO_OK);
        CHECK_FALSE(next.record_first);
        REQUIRE(next.calls.size() == 1);
        REQUIRE(p.post(p.cb, 0, 4, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.post(p.cb, 0, 5, buf2.data(), n, r2) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done && r2.done && s2.done; }));
        CHECK(r.status == UM_PROTO_ERROR);
        CHECK(s.status == UM_PROTO_ERROR);
        CHECK(r2.status == UM_PROTO_OK);
        CHECK(buf2 == m);
        um_proto_send_buffer_return(p.a, second, n);

        INFO("... and once every pull is handed back, sends stream again");
        Packing third(m.data());
        Op s3, r3;
        REQUIRE(send_packing(p, 6, buffer, n, third, s3) == UM_PROTO_OK);
        CHECK(third.record_first);
        REQUIRE(p.post(p.cb, 0, 6, buf.data(), n, r3) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r3.done && s3.done; }));
        CHECK(r3.status == UM_PROTO_OK);
        CHECK(buf == m);
    }
    {
        INFO("packing that fails before anything went out fails the call, and nothing arrives");
        std::vector<unsigned char> plain(n);
        Packing pk(m.data());
        pk.fail_at = 0;
        Op s, r;
        std::vector<unsigned char> buf(n);
        CHECK(send_packing(p, 7, plain.data(), n, pk, s) == UM_PROTO_ERROR);
        REQUIRE(p.post(p.cb, 0, 7, buf.data(), n, r) == UM_PROTO_OK);
        p.spin(2000);
        CHECK_FALSE(r.done);
        int cancelled = 0;
        CHECK(um_proto_cancel(p.b, p.cb, &r.recv, &cancelled) == UM_PROTO_OK);
        CHECK(cancelled == 1);
    }
    um_proto_send_buffer_return(p.a, buffer, n);
}

// A piece the glue refuses (unpack_tests.cc for the other paths): from the
// arena, whole or while the sender packs, the receive fails and is passed no
// later piece; the send completes, and the next message arrives whole.
TEST_CASE("protocol: a piece the glue refuses from the arena fails its receive, not the send",
          "[protocol][shm][pull]") {
    PullPair p(24);
    const size_t n = 300000;
    const auto m = pattern(n, 24);
    auto *buffer = static_cast<unsigned char *>(um_proto_send_buffer(p.a, n));
    REQUIRE(buffer != nullptr);
    {
        INFO("packed before it was sent: one piece, refused");
        std::memcpy(buffer, m.data(), n);
        Op s, r;
        r.refuse_piece = 0;
        REQUIRE(p.post(p.cb, 0, 1, nullptr, n, r) == UM_PROTO_OK);
        REQUIRE(p.send(p.ca, 1, buffer, n, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        check_refused(r, s, 0);
    }
    {
        INFO("a slow sender packing: the second piece refused, the sender packs on");
        Packing pk(m.data());
        pk.nap = std::chrono::milliseconds(3);
        Op s, r;
        r.refuse_piece = 1;
        REQUIRE(p.post(p.cb, 0, 2, nullptr, n, r) == UM_PROTO_OK);
        int rc = UM_PROTO_ERROR;
        std::thread sender([&] { rc = send_packing(p, 2, buffer, n, pk, s); });
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!r.done && std::chrono::steady_clock::now() < end) {
            um_proto_progress(p.b);
        }
        sender.join();
        REQUIRE(rc == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(pk.calls.size() == 10);
        check_refused(r, s, 1);
    }
    {
        INFO("the next message, whole");
        Packing pk(m.data());
        Op s, r;
        REQUIRE(p.post(p.cb, 0, 3, nullptr, n, r) == UM_PROTO_OK);
        REQUIRE(send_packing(p, 3, buffer, n, pk, s) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(r.unpacked == m);
    }
    CHECK(shm_of(p.b).pulls_mapped == 3);
    um_proto_send_buffer_return(p.a, buffer, n);
}

// A small message whose packer writes rows is packed into a stage and copied
// into its send buffer (kPackStage); a large one, or one of single words, is
// packed straight into the buffer. Either way it arrives whole.
TEST_CASE("protocol: small packed sends of rows go through a stage", "[protocol][shm][pull]") {
    PullPair p(23);
    const auto m = pattern(300000, 23);
    int tag = 0;
    const auto send = [&](size_t n, bool rows) {
        auto *buffer = static_cast<unsigned char *>(um_proto_send_buffer(p.a, n));
        REQUIRE(buffer != nullptr);
        Packing pk(m.data());
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(send_packing(p, ++tag, buffer, n, pk, s, rows) == UM_PROTO_OK);
        REQUIRE(p.post(p.cb, 0, tag, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(std::equal(buf.begin(), buf.end(), m.begin()));
        um_proto_send_buffer_return(p.a, buffer, n);
        return std::make_pair(pk.staged(buffer), pk.calls.size());
    };
    for (const size_t n : {size_t{5000}, size_t{32768}, size_t{65536}}) {
        INFO(n << " bytes of rows: every piece through the stage, in pieces of at most 16 KiB");
        const auto [staged, calls] = send(n, true);
        CHECK(staged == calls);
        CHECK(calls >= (n + 16383) / 16384);
    }
    {
        INFO("single words: straight into the buffer");
        const auto [staged, calls] = send(32768, false);
        CHECK(staged == 0);
        CHECK(calls > 0);
    }
    {
        INFO("past 64 KiB: straight into the buffer");
        const auto [staged, calls] = send(300000, true);
        CHECK(staged == 0);
        CHECK(calls == 10);
    }
}

// shm_pack_stage: measure (the default) sends rows both ways, whichever
// packs cheaper most of the time and the other now and then; never packs
// them straight. Every message arrives whole either way.
TEST_CASE("protocol: shm_pack_stage measure sends rows both ways, never straight", "[protocol][shm][pull][stage]") {
    const auto m = pattern(40000, 29);
    const auto sends = [&](int way, int n) {
        PullPair p(29, 0, false, way);
        for (int tag = 1; tag <= n; ++tag) {
            auto *buffer = static_cast<unsigned char *>(um_proto_send_buffer(p.a, m.size()));
            REQUIRE(buffer != nullptr);
            Packing pk(m.data());
            Op s, r;
            std::vector<unsigned char> buf(m.size());
            REQUIRE(send_packing(p, tag, buffer, m.size(), pk, s, true) == UM_PROTO_OK);
            REQUIRE(p.post(p.cb, 0, tag, buf.data(), buf.size(), r) == UM_PROTO_OK);
            REQUIRE(p.until([&] { return r.done && s.done; }));
            CHECK(r.status == UM_PROTO_OK);
            CHECK((buf == m));
            um_proto_send_buffer_return(p.a, buffer, m.size());
        }
        return std::make_pair(shm_of(p.a).rows_staged, shm_of(p.a).rows_straight);
    };
    {
        INFO("measure: 70 sends, each way taken");
        const auto [staged, straight] = sends(UM_PROTO_PACK_STAGE_MEASURE, 70);
        CHECK(staged + straight == 70);
        CHECK(staged >= 2);
        CHECK(straight >= 2);
    }
    {
        INFO("never: straight");
        const auto [staged, straight] = sends(UM_PROTO_PACK_STAGE_NEVER, 5);
        CHECK(staged == 0);
        CHECK(straight == 5);
    }
    {
        INFO("always: through the stage");
        const auto [staged, straight] = sends(UM_PROTO_PACK_STAGE_ALWAYS, 5);
        CHECK(staged == 5);
        CHECK(straight == 0);
    }
}

namespace {

// b of a Pair runs with thread_multiple and sends packed messages of n bytes
// (m) to a through its ring, which the constructor brings up.
struct ThreadedSends {
    ThreadedSends(uint32_t cid, size_t len)
        : p(0, 1024, true, 0, true), ca(p.comm(p.a, cid)), cb(p.comm(p.b, cid)), n(len),
          m(pattern(len, cid)) {
        ring_up_from_b(p, ca, cb);
    }
    // One message: its send buffer (from b's arena), packing log, ops, and
    // where a receives it.
    struct Sent {
        explicit Sent(ThreadedSends &t) : pk(t.m.data()), buf(t.n) {
            buffer = static_cast<unsigned char *>(um_proto_send_buffer(t.p.b, t.n));
            REQUIRE(buffer != nullptr);
        }
        unsigned char *buffer;
        Packing pk;
        Op s, r;
        std::vector<unsigned char> buf;
        int rc = UM_PROTO_ERROR;
        size_t staged() const { return pk.staged(buffer); }
    };
    void send(Sent &x, int32_t tag, bool rows) {
        x.pk.sender = p.b;
        x.pk.pulls_before = shm_of(p.b).pulls_sent;
        void *buffer = x.buffer;
        x.rc = um_proto_send_packing(p.b, cb, p.b_to_a, 0, tag, &hint, &buffer, n, 0, &x.s.send, &x.s,
                                     Packing::pack, &x.pk, rows ? 1 : 0);
    }
    // a receives x whole; its buffer goes back to b's pool.
    void arrive(Sent &x, int32_t tag) {
        REQUIRE(Pair::post_at(p.a, ca, 1, tag, x.buf.data(), n, x.r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return x.r.done && x.s.done; }));
        CHECK(x.r.status == UM_PROTO_OK);
        CHECK(x.s.status == UM_PROTO_OK);
        CHECK(x.buf == m);
        um_proto_send_buffer_return(p.b, x.buffer, n);
    }
    Pair p;
    um_proto_comm_t *ca;
    um_proto_comm_t *cb;
    const um_hint_t hint{};
    const size_t n;
    const std::vector<unsigned char> m;
};

} // namespace

// With threads the stage is one thread's at a time: a lone sender packs
// through it; one that comes while another is packing through it packs
// straight. Every message arrives whole.
TEST_CASE("protocol: with threads, one small packed send of rows at a time has the stage",
          "[protocol][shm][pull][threads]") {
    ThreadedSends t(31, 40000);
    using Sent = ThreadedSends::Sent;
    {
        INFO("a lone sender: through the stage");
        Sent x(t);
        t.send(x, 1, true);
        REQUIRE(x.rc == UM_PROTO_OK);
        CHECK(x.staged() == x.pk.calls.size());
        CHECK(x.pk.calls.size() >= 3); // 40 000 bytes in stages of 16 KiB
        t.arrive(x, 1);
    }
    {
        INFO("a second sender while the first packs through the stage: straight");
        Sent first(t), second(t);
        first.pk.nap = std::chrono::milliseconds(30); // holds the stage a while
        std::thread t1([&] { t.send(first, 2, true); });
        while (first.pk.started.load(std::memory_order_acquire) == 0) {
            std::this_thread::yield();
        }
        t.send(second, 3, true); // meanwhile, on this thread
        t1.join();
        REQUIRE(first.rc == UM_PROTO_OK);
        REQUIRE(second.rc == UM_PROTO_OK);
        CHECK(first.staged() == first.pk.calls.size());
        CHECK(second.staged() == 0);
        t.arrive(first, 2);
        t.arrive(second, 3);
    }
}

// With threads a packed send streams too, one at a time per ring: the sender
// that takes the ring's packing slot pushes the record and packs after it,
// outside the ring's lock; another that comes meanwhile packs whole first. A
// receive shorter than the message hands the pull back before it is all
// packed: the send completes only once its packing is done.
TEST_CASE("protocol: with threads, a packed send streams while its receiver unpacks",
          "[protocol][shm][pull][threads]") {
    ThreadedSends t(37, 300000); // 10 pieces of 32 KiB
    using Sent = ThreadedSends::Sent;
    {
        INFO("a lone sender: the record first, then the pieces in order");
        Sent x(t);
        const uint64_t streamed = shm_of(t.p.b).pulls_streamed;
        t.send(x, 1, false);
        REQUIRE(x.rc == UM_PROTO_OK);
        CHECK(x.pk.record_first);
        REQUIRE(x.pk.calls.size() == 10);
        for (size_t i = 0; i < x.pk.calls.size(); ++i) {
            CHECK(x.pk.calls[i].first == i * 32768);
        }
        CHECK(shm_of(t.p.b).pulls_streamed == streamed + 1);
        t.arrive(x, 1);
    }
    {
        INFO("a second sender while the first streams: packed whole first");
        Sent first(t), second(t);
        first.pk.nap = std::chrono::milliseconds(10); // holds the packing slot a while
        std::thread t1([&] { t.send(first, 2, false); });
        while (first.pk.started.load(std::memory_order_acquire) == 0) {
            std::this_thread::yield();
        }
        t.send(second, 3, false); // meanwhile, on this thread
        const size_t first_packed_then = static_cast<size_t>(first.pk.started.load(std::memory_order_acquire));
        t1.join();
        REQUIRE(first.rc == UM_PROTO_OK);
        REQUIRE(second.rc == UM_PROTO_OK);
        CHECK(first.pk.record_first);
        CHECK(first_packed_then < 10); // the second went while the first still packed
        CHECK_FALSE(second.pk.record_first);
        CHECK(second.pk.calls.size() == 1);
        t.arrive(first, 2);
        t.arrive(second, 3);
    }
    {
        INFO("a receive shorter than the message: the send completes once all is packed");
        Sent x(t);
        x.pk.nap = std::chrono::milliseconds(3);
        x.pk.send_op = &x.s;
        REQUIRE(Pair::post_at(t.p.a, t.ca, 1, 4, x.buf.data(), 1000, x.r) == UM_PROTO_OK);
        Progressing progress(t.p.a, t.p.b); // a (single-threaded) only here meanwhile
        t.send(x, 4, false);
        progress.stop();
        REQUIRE(x.rc == UM_PROTO_OK);
        CHECK(x.pk.record_first);
        CHECK(x.pk.calls.size() == 10);
        REQUIRE(t.p.until([&] { return x.r.done && x.s.done; }));
        CHECK(x.r.received < t.n); // handed back after its 1000 bytes
        CHECK_FALSE(x.pk.done_while_packing);
        CHECK(std::equal(x.buf.begin(), x.buf.begin() + 1000, t.m.begin()));
        um_proto_send_buffer_return(t.p.b, x.buffer, t.n);
    }
}

// To another node a packed send of kUcxPacksMin or more is packed by UCX as it
// sends, fragment by fragment into its own buffers (a generic datatype), not
// whole into the send buffer first; the receiver takes such a message in
// pieces whatever its size. A smaller one is packed whole first. A piece that
// fails to pack fails the send.
TEST_CASE("protocol: through UCX, a packed send is packed by UCX as it sends", "[protocol][pack]") {
    Pair p; // no rings, the peers on "other nodes": every send goes through UCX
    um_proto_comm_t *ca = p.comm(p.a, 41);
    um_proto_comm_t *cb = p.comm(p.b, 41);
    const um_hint_t hint{};
    const auto m = pattern(size_t{2} << 20, 41);
    int tag = 0;
    const auto send = [&](size_t n, Packing &pk, Op &s, std::vector<unsigned char> &buffer) {
        pk.sender = p.a;
        void *given = buffer.data();
        return um_proto_send_packing(p.a, ca, p.a_to_b, 1, ++tag, &hint, &given, n, 0, &s.send, &s,
                                     Packing::pack, &pk, 0);
    };
    for (const size_t n : {size_t{20000}, size_t{300000}, size_t{2} << 20}) {
        INFO(n << " bytes: packed whole (below kUcxPacksMin) or by UCX, received whole and in pieces");
        const bool by_ucx = n >= ubermatch::protocol::kUcxPacksMin;
        std::vector<unsigned char> buffer(n);
        Packing pk(m.data()), pk2(m.data());
        Op s, r, s2, r2;
        std::vector<unsigned char> buf(n);
        REQUIRE(send(n, pk, s, buffer) == UM_PROTO_OK);
        REQUIRE(p.post(cb, 0, tag, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(s.status == UM_PROTO_OK);
        CHECK(std::equal(buf.begin(), buf.end(), m.begin()));
        REQUIRE_FALSE(pk.calls.empty());
        CHECK(pk.calls.front().first == 0);
        if (by_ucx) {
            CHECK(pk.staged(buffer.data()) == pk.calls.size()); // never into the send buffer
            CHECK(pk.calls.size() > 1);                          // fragment by fragment
            // In UCX's shared-memory segments of kMmSegSize (32 KiB), not its own 8 KiB.
            size_t largest = 0;
            for (const auto &c : pk.calls) {
                largest = std::max(largest, c.second);
            }
            if (std::getenv("UCX_MM_SEG_SIZE") == nullptr && std::getenv("UCX_POSIX_SEG_SIZE") == nullptr &&
                std::getenv("UCX_SYSV_SEG_SIZE") == nullptr) {
                CHECK(largest > 16 * 1024);
                CHECK(largest <= 32 * 1024);
            }
        } else {
            CHECK(pk.calls.size() == 1); // whole, into the send buffer
            CHECK(pk.staged(buffer.data()) == 0);
        }
        REQUIRE(send(n, pk2, s2, buffer) == UM_PROTO_OK);
        REQUIRE(p.post(cb, 0, tag, nullptr, n, r2) == UM_PROTO_OK); // non-contiguous
        REQUIRE(p.until([&] { return r2.done && s2.done; }));
        CHECK(r2.status == UM_PROTO_OK);
        CHECK(std::equal(r2.unpacked.begin(), r2.unpacked.end(), m.begin()));
        CHECK(r2.unpacked.size() == n);
        if (n > ubermatch::protocol::kRndvUnpackMax) {
            CHECK(r2.unpack_pieces > 1); // past kRndvUnpackMax too: no scratch copy
        }
    }
    {
        INFO("a piece that fails to pack fails the send");
        const size_t n = ubermatch::protocol::kUcxPacksMin;
        std::vector<unsigned char> buffer(n);
        Packing pk(m.data());
        pk.fail_at = 0;
        Op s, r;
        std::vector<unsigned char> buf(n);
        REQUIRE(send(n, pk, s, buffer) == UM_PROTO_OK);
        REQUIRE(p.post(cb, 0, tag, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(s.status == UM_PROTO_ERROR);
    }
}

// What the pool releases of the arena goes back to the system: its pages read
// as zeros after, and the arena's other bytes are untouched.
TEST_CASE("protocol: the arena's released pages go back to the system", "[protocol][shm]") {
    std::string err;
    ubermatch::protocol::shm::Arena arena(1 << 20, err);
    REQUIRE(err.empty());
    std::memset(arena.base(), 0x5a, 1 << 20);
    ubermatch::protocol::shm::Arena::release(&arena, arena.base() + 65536, 65536);
    CHECK(std::count(arena.base() + 65536, arena.base() + 131072, 0) == 65536);
    CHECK(std::count(arena.base(), arena.base() + 65536, 0x5a) == 65536);
    CHECK(std::count(arena.base() + 131072, arena.base() + (1 << 20), 0x5a) == (1 << 20) - 131072);
}

// A packed send of kUcxPacksMin or more to a peer that has pulls out (a window
// of them) is packed by UCX as it sends, not into the arena: a window of them
// there outgrew the caches and the pages the pool keeps. Smaller ones, and one
// sent when nothing is out, are pulls from the arena. All arrive whole, in the
// order sent. Given no buffer (as the glue sends), the call takes one from the
// arena for each pull and none for a send UCX packs (each took a buffer of its
// size, whose pages the pool released past its bound: round 23).
TEST_CASE("protocol: in a window of large packed sends, those behind a pull are packed by UCX",
          "[protocol][shm][pull]") {
    PullPair p(25);
    const size_t big = ubermatch::protocol::kUcxPacksMin, small = big / 2;
    const auto m = pattern(big, 25);
    struct Send {
        explicit Send(const unsigned char *src) : pk(src) {}
        Packing pk;
        Op s, r;
        void *buffer = nullptr; // taken by the call
        std::vector<unsigned char> buf;
    };
    std::vector<std::unique_ptr<Send>> sends;
    const auto send = [&](size_t n) {
        sends.push_back(std::make_unique<Send>(m.data()));
        Send &x = *sends.back();
        x.buf.resize(n);
        const uint64_t pulls = shm_of(p.a).pulls_sent;
        REQUIRE(send_packing(p, static_cast<int32_t>(sends.size()), nullptr, n, x.pk, x.s, false, &x.buffer) ==
                UM_PROTO_OK);
        const uint64_t pulled = shm_of(p.a).pulls_sent - pulls;
        INFO(n << " bytes, a pull: " << pulled);
        CHECK((x.buffer != nullptr) == (pulled == 1)); // a buffer for a pull only
        return pulled;
    };
    CHECK(send(big) == 1);   // nothing out: a pull, streamed from the arena
    CHECK(send(big) == 0);   // behind it: UCX packs it
    CHECK(send(small) == 1); // smaller: a pull
    CHECK(send(big) == 0);
    for (auto &x : sends) {
        REQUIRE(p.post(p.cb, 0, UM_ANY_TAG, x->buf.data(), x->buf.size(), x->r) == UM_PROTO_OK);
    }
    REQUIRE(p.until([&] {
        for (auto &x : sends) {
            if (!x->r.done || !x->s.done) {
                return false;
            }
        }
        return true;
    }));
    for (size_t i = 0; i < sends.size(); ++i) {
        const Send &x = *sends[i];
        INFO("send " << i);
        CHECK(x.r.status == UM_PROTO_OK);
        CHECK(x.s.status == UM_PROTO_OK);
        CHECK(x.r.tag == static_cast<int32_t>(i + 1)); // in the order sent, across the paths
        CHECK(std::equal(x.buf.begin(), x.buf.end(), m.begin()));
        CHECK(x.pk.calls.size() > 1); // streamed in pieces, or by UCX in fragments
    }
    CHECK(send(big) == 1); // all handed back: a pull again
    REQUIRE(p.post(p.cb, 0, UM_ANY_TAG, sends.back()->buf.data(), big, sends.back()->r) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return sends.back()->r.done && sends.back()->s.done; }));
    CHECK(std::equal(sends.back()->buf.begin(), sends.back()->buf.end(), m.begin()));
    for (auto &x : sends) {
        if (x->buffer != nullptr) {
            um_proto_send_buffer_return(p.a, x->buffer, x->buf.size());
        }
    }
}

// With the rings up but pulls off (pml_ubermatch_shm_pull 0), a packed send
// larger than a ring carries goes through UCX: from kUcxPacksMin UCX packs it
// as it sends, taking no buffer (packed whole, a window of them outgrew the
// pool's kept pages); below, it is packed whole, as is one for a ring.
TEST_CASE("protocol: with pulls off, a large packed send is packed by UCX, not whole", "[protocol][shm][pack]") {
    Pair p(0, 1024); // rings of 1 KiB messages, no pulls
    um_proto_comm_t *ca = p.comm(p.a, 26);
    um_proto_comm_t *cb = p.comm(p.b, 26);
    ring_up(p, ca, cb);
    const um_hint_t hint{};
    const size_t big = ubermatch::protocol::kUcxPacksMin;
    const auto m = pattern(2 * big, 26);
    int tag = 0;
    for (const size_t n : {size_t{1000}, big / 4, big, 2 * big}) {
        INFO(n << " bytes");
        Packing pk(m.data());
        pk.sender = p.a;
        Op s, r;
        void *buffer = nullptr; // as the glue passes it: taken where packed into
        const uint64_t ring_sent = shm_of(p.a).sent;
        REQUIRE(um_proto_send_packing(p.a, ca, p.a_to_b, 1, ++tag, &hint, &buffer, n, 0, &s.send, &s,
                                      Packing::pack, &pk, 0) == UM_PROTO_OK);
        std::vector<unsigned char> buf(n);
        REQUIRE(p.post(cb, 0, tag, buf.data(), n, r) == UM_PROTO_OK);
        REQUIRE(p.until([&] { return r.done && s.done; }));
        CHECK(r.status == UM_PROTO_OK);
        CHECK(s.status == UM_PROTO_OK);
        CHECK(std::equal(buf.begin(), buf.end(), m.begin()));
        CHECK(shm_of(p.a).pulls_sent == 0);
        CHECK(shm_of(p.a).sent - ring_sent == (n <= 1000 ? 1u : 0u));
        if (n >= big) {
            CHECK(buffer == nullptr);    // no buffer taken
            CHECK(pk.calls.size() > 1); // UCX packs fragment by fragment
        } else {
            REQUIRE(buffer != nullptr); // packed whole into it
            CHECK(pk.calls.size() == 1);
            um_proto_send_buffer_return(p.a, buffer, n);
        }
    }
}

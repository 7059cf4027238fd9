// The protocol tests' harness: two protocol cores in one process, each with
// its own UCX worker, connected to each other, driven through the C interface
// the PML's glue uses, with the glue's callbacks recorded per operation.
#ifndef UBERMATCH_TEST_PROTOCOL_PAIR_H
#define UBERMATCH_TEST_PROTOCOL_PAIR_H

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "ompi/mca/pml/ubermatch/protocol/um_protocol.h"
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

namespace ubermatch::protocol {
// Feeds a core an eager arrival as a shared-memory ring's record would, with
// any sequence number: a message overtaken on its way, deterministically.
struct ProtocolTestAccess {
    static void arrive(um_proto_t *p, uint32_t cid, int32_t source, int32_t tag, uint32_t seq,
                       const int &payload) {
        shm::RecordHeader r{};
        r.length = sizeof payload;
        r.cid = cid;
        r.source = source;
        r.tag = tag;
        r.seq = seq;
        REQUIRE(reinterpret_cast<Protocol *>(p)->ring_arrival(r, &payload, nullptr));
    }
};
} // namespace ubermatch::protocol

namespace prototest {

// What the glue would keep in its request: the protocol's state plus what
// the callbacks reported.
struct Op {
    um_proto_recv_t recv{};
    um_proto_send_op_t send{};
    bool done = false;
    int status = -1;
    int32_t source = -1;
    int32_t tag = -1;
    size_t received = 0;
    size_t length = 0;
    std::vector<unsigned char> unpacked; // receives without a contiguous buffer: the last message
    int unpack_messages = 0;             // messages unpacked (calls at offset 0)
    int unpack_pieces = 0;               // calls of the unpack callback
    const void *unpack_from = nullptr;   // where the last message's first piece was read
    bool unpack_out_of_order = false;    // a piece not where the last one ended
    int refuse_piece = -1;               // the unpack callback refuses its call of this index (from 0)
    int calls_after_refusal = 0;         // calls of the unpack callback after it refused one
};

// done last, released: tests with threads read it (acquire) on another thread.
inline void send_done(void *cookie, int status) {
    Op *op = static_cast<Op *>(cookie);
    op->status = status;
    __atomic_store_n(&op->done, true, __ATOMIC_RELEASE);
}

// Every completed receive, released after its Op is written: a thread that
// sees the count can read the Ops (the test with threads).
inline std::atomic<int> g_recvs_done{0};

// Set by a test before its threads start: runs at every completed receive,
// on the thread that completes it (inside that core's progress).
inline void (*g_recv_done_hook)(Op *) = nullptr;

inline void recv_done(void *cookie, int32_t source, int32_t tag, size_t received, size_t length, int status) {
    Op *op = static_cast<Op *>(cookie);
    op->status = status;
    op->source = source;
    op->tag = tag;
    op->received = received;
    op->length = length;
    __atomic_store_n(&op->done, true, __ATOMIC_RELEASE);
    g_recvs_done.fetch_add(1, std::memory_order_release);
    if (g_recv_done_hook != nullptr) {
        g_recv_done_hook(op);
    }
}

// Pieces must come in order, each where the last ended (offset 0 starts a
// message): anything else is recorded as a failed unpack. The call numbered
// refuse_piece is refused, as a glue whose convertor cannot take a piece.
inline int recv_unpack(void *cookie, size_t offset, const void *data, size_t length) {
    Op *op = static_cast<Op *>(cookie);
    const auto *p = static_cast<const unsigned char *>(data);
    if (op->refuse_piece >= 0 && op->unpack_pieces > op->refuse_piece) {
        ++op->calls_after_refusal;
    }
    if (op->unpack_pieces == op->refuse_piece) {
        ++op->unpack_pieces;
        return 1;
    }
    if (offset == 0) {
        op->unpacked.clear();
        op->unpack_from = data;
        ++op->unpack_messages;
    } else if (offset != op->unpacked.size()) {
        op->unpack_out_of_order = true;
    }
    op->unpacked.insert(op->unpacked.end(), p, p + length);
    ++op->unpack_pieces;
    return 0;
}

inline const um_proto_callbacks_t kCallbacks = {send_done, recv_done, recv_unpack};

// A receive whose unpack call `refuse` was refused: failed, given no data and
// no call after the refusal; its send completed (unpack_tests.cc, arena_tests.cc).
inline void check_refused(const Op &r, const Op &s, int refuse) {
    CHECK(r.status == UM_PROTO_ERROR);
    CHECK(r.received == 0);
    CHECK(r.unpack_pieces == refuse + 1);
    CHECK(r.calls_after_refusal == 0);
    CHECK(s.status == UM_PROTO_OK);
}

// Progresses one core (or two) on a thread of its own until stop() or the
// end of its scope: a REQUIRE that fails meanwhile ends the test case, not the
// run (a std::thread destroyed unjoined terminates the process).
class Progressing {
public:
    explicit Progressing(um_proto_t *p, um_proto_t *q = nullptr)
        : thread_([this, p, q] {
              while (!stop_.load(std::memory_order_acquire)) {
                  um_proto_progress(p);
                  if (q != nullptr) {
                      um_proto_progress(q);
                  }
              }
          }) {}
    ~Progressing() { stop(); }
    Progressing(const Progressing &) = delete;
    Progressing &operator=(const Progressing &) = delete;
    void stop() {
        stop_.store(true, std::memory_order_release);
        if (thread_.joinable()) {
            thread_.join();
        }
    }

private:
    std::atomic<bool> stop_{false}; // before thread_: set when the thread starts
    std::thread thread_;
};

// tailq_bins: 0, no tail queues; else tail queues in that many bins.
// pull: messages from 32 KiB go as single-copy pulls once the ring is up.
// ring_cells: of the rings this core makes (0: the default, 256 KiB).
// stage_max: shm_stage_max (0: contiguous pulls read by CMA, as before it).
// pack_stage: shm_pack_stage; the tests take the stage always (what they check
// of it does not then depend on timing) unless they test the measuring.
inline um_proto_t *make(unsigned fail_alloc_every = 0, size_t shm = 0, bool threads = false,
                 int tailq_bins = 0, bool pull = false, uint32_t ring_cells = 0, size_t stage_max = 0,
                 int pack_stage = UM_PROTO_PACK_STAGE_ALWAYS) {
    um_proto_config_t c{};
    c.tailq = tailq_bins > 0 ? 1 : 0;
    c.tailq_bins = tailq_bins;
    c.backend = "auto";
    um_params_init(&c.params);
    c.fail_alloc_every = fail_alloc_every;
    c.shm_eager_limit = shm;
    c.thread_multiple = threads ? 1 : 0;
    c.shm_pull = pull ? 1 : 0;
    c.shm_ring_cells = ring_cells;
    c.shm_stage_max = stage_max;
    c.shm_pack_stage = pack_stage;
    um_proto_t *p = nullptr;
    char err[256];
    const int rc = um_proto_create(&c, &kCallbacks, &p, err, sizeof err);
    INFO(err);
    REQUIRE(rc == UM_PROTO_OK);
    return p;
}

// Two connected cores: rank 0 is `a`, rank 1 is `b`, in every communicator.
struct Pair {
    // shm: a's messages up to this size may go through a shared-memory ring
    // (the two cores count as one node); b_threads: b runs with thread_multiple
    // (b_tailq_bins > 0: and matches in tail queues of that many bins).
    // pull: both send large messages as single-copy pulls once their rings are
    // up, through rings of ring_cells cells (0: the default), contiguous ones
    // up to stage_max staged through the arena (shm_stage_max), rows packed
    // as pack_stage says (shm_pack_stage).
    explicit Pair(unsigned b_fails = 0, size_t shm = 0, bool b_threads = false, int b_tailq_bins = 0,
                  bool pull = false, uint32_t ring_cells = 0, size_t stage_max = 0,
                  int pack_stage = UM_PROTO_PACK_STAGE_ALWAYS)
        : a(make(0, shm, false, 0, pull, ring_cells, stage_max, pack_stage)),
          b(make(b_fails, shm, b_threads, b_tailq_bins, pull, ring_cells, stage_max, pack_stage)) {
        a_to_b = connect(a, b, shm > 0);
        b_to_a = connect(b, a, shm > 0);
    }
    ~Pair() {
        for (auto &[p, c] : comms) {
            um_proto_comm_destroy(p, c);
        }
        disconnect_progressing(a, &a_to_b, b);
        disconnect_progressing(b, &b_to_a, a);
        um_proto_destroy(a);
        um_proto_destroy(b);
    }
    // Closing an endpoint may wait for the other side's progress, as when two
    // processes finalize at once: `other` is progressed on a thread of its own
    // (it shares nothing with p) while p disconnects. Seen to hang otherwise.
    static void disconnect_progressing(um_proto_t *p, um_proto_peer_t **peer, um_proto_t *other) {
        Progressing progress(other);
        um_proto_disconnect(p, peer, 1);
    }
    static um_proto_peer_t *connect(um_proto_t *from, um_proto_t *to, bool local) {
        void *address = nullptr;
        size_t length = 0;
        REQUIRE(um_proto_address(to, &address, &length) == UM_PROTO_OK);
        char err[256];
        um_proto_peer_t *peer = um_proto_connect(from, address, length, local ? 1 : 0, err, sizeof err);
        um_proto_address_release(to, address);
        INFO(err);
        REQUIRE(peer != nullptr);
        return peer;
    }
    um_proto_comm_t *comm(um_proto_t *p, uint32_t cid, const char *backend = nullptr) {
        um_proto_comm_t *c = nullptr;
        char err[256];
        REQUIRE(um_proto_comm_create(p, cid, p == a ? 0 : 1, 2, backend, &c, err, sizeof err) == UM_PROTO_OK);
        comms.push_back({p, c});
        return c;
    }
    // Progresses both until done() or 5 s.
    template <typename F>
    bool until(F &&done) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
            um_proto_progress(a);
            um_proto_progress(b);
        }
        return true;
    }
    void spin(int rounds) {
        for (int i = 0; i < rounds; ++i) {
            um_proto_progress(a);
            um_proto_progress(b);
        }
    }
    int send(um_proto_comm_t *c, int32_t tag, const void *data, size_t n, Op &op, bool sync = false) {
        const um_hint_t hint{};
        return um_proto_send(a, c, a_to_b, 1, tag, &hint, data, n, sync ? 1 : 0, &op.send, &op);
    }
    // A receive at b (post) or at `at` (post_at).
    int post(um_proto_comm_t *c, int32_t source, int32_t tag, void *buf, size_t cap, Op &op) {
        return post_at(b, c, source, tag, buf, cap, op);
    }
    static int post_at(um_proto_t *at, um_proto_comm_t *c, int32_t source, int32_t tag, void *buf, size_t cap,
                       Op &op) {
        op.recv.cookie = &op;
        op.recv.buffer = buf;
        op.recv.capacity = cap;
        op.recv.source = source;
        op.recv.tag = tag;
        op.recv.hint = um_hint_t{};
        return um_proto_post_recv(at, c, &op.recv);
    }

    um_proto_t *a;
    um_proto_t *b;
    um_proto_peer_t *a_to_b;
    um_proto_peer_t *b_to_a;
    std::vector<std::pair<um_proto_t *, um_proto_comm_t *>> comms;
};

inline uint64_t unexpected_len(um_proto_t *p, um_proto_comm_t *c) {
    um_stats_t s{};
    um_proto_comm_stats(p, c, &s);
    return s.unexpected_len;
}

// Whether n bytes at a and b are equal; an empty vector's data() may be null,
// which memcmp may not be given even for no bytes (UBSan says so).
inline bool same_bytes(const void *a, const void *b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

inline std::vector<unsigned char> pattern(size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<unsigned char>((i * 131 + seed * 7) ^ (i >> 9));
    }
    return v;
}

inline um_proto_shm_counts_t shm_of(um_proto_t *p) {
    um_proto_shm_counts_t c{};
    um_proto_shm_stats(p, &c);
    return c;
}

// One small message, received, so that a's ring to b is up (and a knows
// whether b may read its memory).
inline void ring_up(Pair &p, um_proto_comm_t *ca, um_proto_comm_t *cb) {
    const auto m = pattern(8, 1);
    std::vector<unsigned char> buf(8);
    Op s, r;
    REQUIRE(p.post(cb, 0, 0, buf.data(), buf.size(), r) == UM_PROTO_OK);
    REQUIRE(p.send(ca, 0, m.data(), m.size(), s) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r.done && s.done && shm_of(p.a).rings_out == 1; }));
}

// The same the other way: b's ring to a up (b sends, a receives).
inline void ring_up_from_b(Pair &p, um_proto_comm_t *ca, um_proto_comm_t *cb) {
    const auto m = pattern(8, 1);
    const um_hint_t hint{};
    std::vector<unsigned char> buf(8);
    Op s, r;
    REQUIRE(Pair::post_at(p.a, ca, 1, 0, buf.data(), buf.size(), r) == UM_PROTO_OK);
    REQUIRE(um_proto_send(p.b, cb, p.b_to_a, 0, 0, &hint, m.data(), m.size(), 0, &s.send, &s) == UM_PROTO_OK);
    REQUIRE(p.until([&] { return r.done && s.done && shm_of(p.b).rings_out == 1; }));
}

// Two cores that pull (pair.h), communicator cid on both, a's ring to b up.
struct PullPair : Pair {
    explicit PullPair(uint32_t cid, size_t stage_max = 0, bool b_threads = false,
                      int pack_stage = UM_PROTO_PACK_STAGE_ALWAYS)
        : Pair(0, 1024, b_threads, 0, true, 0, stage_max, pack_stage), ca(comm(a, cid)), cb(comm(b, cid)) {
        ring_up(*this, ca, cb);
    }
    um_proto_comm_t *ca;
    um_proto_comm_t *cb;
};

} // namespace prototest

#endif

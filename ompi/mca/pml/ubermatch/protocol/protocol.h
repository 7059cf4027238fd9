// The protocol core behind um_protocol.h: UCX active messages, per-peer
// sequence numbers, held arrivals, matching and delivery.
#ifndef UBERMATCH_PROTOCOL_H
#define UBERMATCH_PROTOCOL_H

#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "matching/engine.h"
#include "matching/tailq_bins.h"
#include "ompi/mca/pml/ubermatch/protocol/buffer_pool.h"
#include "ompi/mca/pml/ubermatch/protocol/message.h"
#include "ompi/mca/pml/ubermatch/protocol/shm.h"
#include "ompi/mca/pml/ubermatch/protocol/stage_choice.h"
#include "ompi/mca/pml/ubermatch/protocol/um_protocol.h"
#include "ompi/mca/pml/ubermatch/protocol/wire.h"

// Branch hints.
#define UM_LIKELY(x) __builtin_expect(!!(x), 1)
#define UM_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace ubermatch::protocol {

// n bytes, sizeof(Word) <= n <= 2 sizeof(Word), as two overlapping Word moves.
template <typename Word> inline void copy_two_words(unsigned char *d, const unsigned char *s, size_t n) {
    Word head, tail;
    std::memcpy(&head, s, sizeof head);
    std::memcpy(&tail, s + n - sizeof tail, sizeof tail);
    std::memcpy(d, &head, sizeof head);
    std::memcpy(d + n - sizeof tail, &tail, sizeof tail);
}

// memcpy for the payloads of most messages (a few bytes, a size known only at
// run time): 4 to 16 bytes as two overlapping fixed-size moves, no call.
inline void copy_payload(void *dst, const void *src, size_t n) {
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    if (n >= 8 && n <= 16) {
        copy_two_words<uint64_t>(d, s, n);
    } else if (n >= 4 && n < 8) {
        copy_two_words<uint32_t>(d, s, n);
    } else {
        std::memcpy(d, s, n);
    }
}

// The protocol's locks guard short sections (a ring push, a descriptor from
// the pool, an arrival's matching): a spin on the cache line, then the core
// for another thread (an oversubscribed node), costs less than a mutex.
class SpinLock {
public:
    void lock() noexcept {
        while (held_.exchange(true, std::memory_order_acquire)) {
            for (unsigned spins = 0; held_.load(std::memory_order_relaxed);) {
                if (++spins < 128) {
                    relax();
                } else {
                    std::this_thread::yield();
                    spins = 0;
                }
            }
        }
    }
    void unlock() noexcept { held_.store(false, std::memory_order_release); }
    bool try_lock() noexcept {
        return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire);
    }
    // A pause in a spin (also of waits that are not for a lock).
    static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }

private:
    std::atomic<bool> held_{false};
};

class Protocol;

// Where rendezvous starts unless the user says (measured: docs/message-path.md,
// rounds 1 and 5: below 32 KiB UCX's rendezvous costs more than an eager copy;
// from 64 KiB its single copy beats the eager fragments, 0.6x the latency).
constexpr const char *kRndvThresh = "64k";
// The segment of UCX's shared-memory transports (UCX_MM_SEG_SIZE; UCX's own
// 8 KiB): see Protocol's constructor.
constexpr const char *kMmSegSize = "32k";
// To a peer UCX reaches with a single-copy transport (CMA, KNEM, XPMEM), and
// unless the user set the threshold, rendezvous from here (the ring takes what
// is smaller, up to its limit): at np 2, 36-56 KiB 0.59-0.69x the latency and
// up to 1.11x the bandwidth of eager; over TCP it was 1.8x slower, so the
// global threshold stays (docs/message-path.md round 6).
constexpr size_t kLocalRndv = 32 * 1024;
// With single-copy pulls (shm.h), messages from here, and all past the ring's
// eager limit, are pulled. At np 2, against the ring's eager copies: 24-32 KiB
// 0.54-0.58x the latency at 1.02-1.06x the bandwidth; 12-20 KiB 0.63-0.68x the
// latency (0.79-0.83x ob1's, where the eager copies took 1.2-1.3x) at
// 0.76-0.94x the bandwidth (still 1.10-1.13x ob1's). 8 KiB stays eager, where
// the ring is ahead of both stock PMLs (docs/message-path.md round 7).
constexpr size_t kPullMin = 12 * 1024;
// A pull into a non-contiguous receive goes through scratch memory in pieces
// of this size (fits the L2 beside the user's buffer).
constexpr size_t kPullPiece = 256 * 1024;
// A packed send streamed to its receiver is packed in pieces, each published
// as it is done (Sender::packed): the receiver unpacks one while the sender
// packs the next. An eighth of the message, between these bounds, so that a
// small one overlaps too. A staged contiguous send (a copy, no packing)
// publishes pieces of 16 KiB at least: each publication moves a line between
// the cores, and at 16-64 KiB pieces of 4 KiB took 1.06-1.4x the one-way time
// of pieces of 16 KiB (docs/message-path.md round 20).
constexpr size_t kPackPieceMin = 4 * 1024;
constexpr size_t kCopyPieceMin = 16 * 1024;
constexpr size_t kPackPieceMax = 32 * 1024;
inline size_t pack_piece(size_t length, bool copy) {
    return std::min(kPackPieceMax,
                    std::max(copy ? kCopyPieceMin : kPackPieceMin, (length / 8 + 4095) & ~size_t{4095}));
}

// Packing a small message straight into a send buffer that another core has
// just read is slow: Open MPI's convertor took 8 us to pack a 32 KiB 3-D
// sub-block into the arena (its memcpy of each 128-byte row), 1.2 us into
// this core's cache; a bulk copy of the rows from there took 3.5. So a
// sender packs a message of up to kPackStageMax bytes into a stage (with
// threads one at a time, the others meanwhile straight) and copies it by
// words: the sub-block's one-way trip 5.7-5.9 us instead of 10.1 (6.1-6.6
// copied by memcpy). From 128 KiB packing straight is as fast or faster, and
// so are layouts of single words, which the glue packs straight
// (docs/message-path.md round 14).
constexpr size_t kPackStage = 16 * 1024;
constexpr size_t kPackStageMax = 64 * 1024;

// The glue's packing of a send (um_proto_pack_fn and its argument).
struct Packer {
    um_proto_pack_fn fn;
    void *arg;
    bool rows; // writes rows of a cache line or more: worth a stage
    bool copy; // a staged contiguous send's copy (kCopyPieceMin)
    // Bytes [off, off + length) of the packed data, to dest + off; through
    // stage (kPackStage bytes) unless it is null.
    bool pack(unsigned char *dest, size_t off, size_t length, unsigned char *stage) const;
};
// A packed send to another node is packed by UCX as it sends (kSendPackOps)
// from this size; below it, packed whole first and sent from that buffer.
// Over TCP, packed by UCX, one message of 16-512 KiB took 1.3-2.0x the time
// (UCX's fragments cost more than one zero-copy send), 1-2 MiB 1.04-1.6x,
// 4-8 MiB 0.8-1.2x, while windows of 64 had 1.4-3.0x the bandwidth from
// 1 MiB (no buffer of each whole message: 64 of them outgrow the pages the
// pool keeps): docs/message-path.md round 16. Within the node (rings off)
// UCX's packing is faster at every size. Within the node with the rings, a
// packed send of this size behind other pulls to its receiver (a window) goes
// the same way: in the arena a window of them outgrew the caches and the
// pages kept (1 MiB 3.3-3.4 GB/s, 4 MiB 1.2; packed by UCX 4.1-11.5 GB/s at
// this VM's two speeds),
// while one in flight still streams from the arena (docs/message-path.md
// round 17).
constexpr size_t kUcxPacksMin = 1024 * 1024;
// The packed sends' arena of shared memory (shm::Arena): receivers on the node
// unpack from it where they map it. Address space only, but for the pages of
// buffers in use and of kSendKept bytes of free ones (64 messages of 4 MiB in
// flight outgrew an arena of 64 MiB: docs/message-path.md round 13).
constexpr size_t kArenaBytes = size_t{1} << 30;
constexpr size_t kSendKept = size_t{64} << 20;
// Packed sends' buffers rotate within this many bytes of each size
// (BufferPool::rotate_within): 3-D sub-blocks of 122-256 KiB 0.85-0.91x the
// one-way time they took with one buffer reused (docs/message-path.md round 17).
constexpr size_t kSendRotate = size_t{1} << 20;
// A UCX rendezvous into a non-contiguous receive is unpacked as UCX receives it
// up to this size: UCX then streams fragments through the sender's bounce
// buffers, a copy more there than its single get into scratch memory, which is
// ahead from 2 MiB (strided, np 2: 0.82-0.89x at 2 MiB, 0.83x at 4-8 MiB,
// 1.25-1.61x at 64 KiB - 1 MiB; docs/message-path.md round 10).
constexpr size_t kRndvUnpackMax = 1024 * 1024;
// The scratch memory of such receives comes from a pool that keeps this many
// bytes of it, and beyond this many in flight a receive that fits is unpacked
// as UCX receives it: malloc'd and freed per message, windows of 64
// contiguous sends of 2-4 MiB into non-contiguous receives through UCX faulted
// all their scratch pages in afresh every window (0.2-1.2 GB/s; now 4-9,
// docs/message-path.md round 23).
constexpr size_t kRndvScratchKept = size_t{64} << 20;
constexpr size_t kRndvScratchInFlight = size_t{64} << 20;

// Contiguous pulls staged through the arena (shm_stage_max) in flight at once,
// in bytes: the pages the send buffers keep (kSendKept); past them a staged
// buffer's pages would be released and faulted in again on every use. The
// rest are read by CMA from the user's buffer, as without staging.
constexpr size_t kStagedInFlight = kSendKept;

// Lives in the glue's um_proto_send_op_t.
struct SendOp {
    WireHeader hdr;
    Protocol *owner;
    void *cookie;
    int pending; // UCX completion, and the acknowledgement when synchronous
    int status;
    // A send through UCX that UCX packs as it sends (kSendPackOps): its
    // packer and packed length, used from the call until UCX completes it.
    Packer packer;
    size_t length;
    // A contiguous send staged through the arena (Protocol::take_staged):
    // its buffer of `length` bytes, given back when the send completes.
    void *staged;
};
static_assert(sizeof(SendOp) <= sizeof(um_proto_send_op_t), "um_proto_send_op_t is too small");

// A process this one sends to (um_proto_peer_t): its UCX endpoint and, on
// the same node, the shared-memory ring towards it (shm.h).
struct Peer {
    enum Shm : uint8_t { kNoRing, kWanted, kOffered, kReady };
    ucp_ep_h ep;
    shm::Sender *ring; // set when kReady
    uint32_t id;       // index in Protocol::peers_
    Shm shm;
    bool single_copy_rndv = false; // messages from kLocalRndv go by rendezvous (set at connect)
    bool local = false;            // on this node (set at connect)
    bool pull = false; // with the ring: the receiver reads messages from kPullMin (and past the ring's limit) from our memory
    std::unique_ptr<shm::Sender> offered; // made, offered, not yet answered
    // With MPI_THREAD_MULTIPLE: ring, shm and offered, and the ring's sender
    // end (one writer at a time), are under this lock.
    SpinLock ring_lock;
    // With MPI_THREAD_MULTIPLE: the ring's packing slot (one pull streamed at
    // a time), held from before its record is pushed until it is all packed.
    SpinLock pack_slot;
};

// Matching is in one of two: `engine`, under the core's lock when threads
// are on; or, with tail queues (um_proto_config_t.tailq), `tailq`, under its
// own locks, so that a thread posting a receive does not wait for one
// matching arrivals. The calls below go to whichever the communicator has.
struct Comm {
    uint32_t cid;
    int32_t local_rank;
    int32_t remote_size;
    std::unique_ptr<Engine> engine; // point-to-point, and all traffic while `coll` is null
    // With a relaxed engine (info assertions, relaxed.cc): Open MPI's own traffic
    // (negative tags: collectives, topology and window set-up) is not bound by the
    // user's assertions and may use ANY_SOURCE (the linear barrier does), so it gets
    // an engine of full matching of its own. The split is exact: ANY_TAG never
    // matches a negative tag.
    std::unique_ptr<Engine> coll;
    std::string backend;   // of `engine`
    uint32_t relaxed = 0;  // UM_PROTO_ASSERT_* that `engine` relies on
    uint64_t refused = 0;  // arrivals no receive awaited under no_unexpected
    bool kept_unexpected = false; // no_unexpected was broken: never relied on again
    Engine &engine_for(int32_t tag) {
        return (UM_UNLIKELY(coll != nullptr) && tag < 0 && tag != UM_ANY_TAG) ? *coll : *engine;
    }
    std::unique_ptr<TailBins> tailq; // instead of engine/coll (threading tailq, full matching)
    std::vector<uint32_t> send_seq; // next sequence number to each destination
    std::vector<uint32_t> recv_seq; // next expected from each source
    // Out of sequence, by (source, seq); nullptr: a marker for a message matched
    // ahead of its turn (an overtaking communicator's user traffic, arrival.cc).
    std::unordered_map<uint64_t, Message *> early;
    // Offered every arrival before matching (um_proto_comm_hook); null: none.
    um_proto_arrival_fn arrival_hook = nullptr;
    void *arrival_arg = nullptr;

    int post_recv(um_proto_recv_t *recv, um_match_t *out) {
        return tailq ? tailq->post_recv(recv->source, recv->tag, recv->hint, recv, out)
                     : engine_for(recv->tag).post_recv(recv->source, recv->tag, recv->hint, recv, out);
    }
    int cancel(um_proto_recv_t *recv, bool *removed) {
        return tailq ? tailq->cancel(recv->source, recv->tag, recv, removed)
                     : engine_for(recv->tag).cancel(recv->source, recv->tag, recv, removed);
    }
    int collective(const um_hint_t &hint, bool begin) {
        if (tailq) {
            return tailq->collective(hint, begin);
        }
        Engine &e = coll != nullptr ? *coll : *engine;
        return begin ? e.collective_begin(hint) : e.collective_end(hint);
    }
};

// What the engine is told of a message: its collective, size and the communicator's size.
inline um_hint_t message_hint(const Comm &comm, const Message &msg) {
    um_hint_t hint{};
    hint.coll = msg.hdr.coll;
    hint.msg_size = static_cast<uint32_t>(std::min<size_t>(msg.length, UINT32_MAX));
    hint.comm_size = static_cast<uint32_t>(comm.remote_size);
    return hint;
}

// Deliveries decided under the lock and carried out after it is released
// (they call UCX and the glue).
class Actions {
public:
    struct Item {
        um_proto_recv_t *recv; // deliver msg into recv; nullptr: only acknowledge msg
        Message *msg;
    };
    void add(um_proto_recv_t *recv, Message *msg) {
        if (n_ < kInline) {
            inline_[n_++] = {recv, msg};
        } else {
            overflow_.push_back({recv, msg});
        }
    }
    template <typename F>
    void for_each(F &&f) {
        for (size_t i = 0; i < n_; ++i) {
            f(inline_[i]);
        }
        for (const Item &it : overflow_) {
            f(it);
        }
    }

private:
    static constexpr size_t kInline = 4;
    Item inline_[kInline];
    size_t n_ = 0;
    std::vector<Item> overflow_;
};

class Protocol {
public:
    Protocol(const um_proto_config_t &config, const um_proto_callbacks_t &callbacks);
    ~Protocol();
    Protocol(const Protocol &) = delete;
    Protocol &operator=(const Protocol &) = delete;

    // Throws std::runtime_error with the reason.
    void start();
    const std::string &backend() const { return backend_; }

    ucp_worker_h worker() const { return worker_; }
    int progress() {
        if (!thread_multiple_) {
            const int n = poll_rings_then_ucx();
            if (UM_UNLIKELY(messages_.dipped())) {
                top_up_reserve();
            }
            return n;
        }
        return progress_shared();
    }
    // One round that completes every send the receivers have finished: the
    // pulls handed back and what UCX has sent. With threads it waits for a
    // thread inside progress instead of leaving, so that nothing handed back
    // before the call is left unreaped (an attached MPI_Bsend buffer's space).
    int settle_sends() noexcept;
    // local: the peer is on this node (a ring may carry small messages).
    Peer *connect(const void *address, size_t length, bool local, std::string &err);
    void disconnect(Peer **peers, size_t count);
    // The UCX transports of a peer's lanes and what each carries (throws
    // std::bad_alloc).
    std::string transports(const Peer &peer) const;

    // backend: empty for the configured one. Throws.
    Comm *comm_create(uint32_t cid, int32_t local_rank, int32_t remote_size,
                      const std::string &backend);
    // relaxed.cc: makes backend (empty: the configured one) the engine of comm's
    // point-to-point traffic when it holds nothing; false: not now. Throws on a bad name.
    bool comm_use(Comm *comm, const std::string &backend);
    void choose_matching(Comm &comm, const std::string &backend);
    um_proto_comm_info_t comm_info(Comm *comm);
    void comm_destroy(Comm *comm);
    um_stats_t comm_stats(Comm *comm);
    void comm_hook(Comm *comm, um_proto_arrival_fn fn, void *arg);
    void comm_dump(Comm *comm, FILE *out);
    size_t held();
    um_proto_shm_counts_t shm_counts() const {
        // Sending threads add to these with relaxed atomics while another
        // thread may read them (MPI_T, verbose output): read them so too,
        // field by field (a plain copy of the struct is the race). A field
        // added to the struct changes its size: load it here as well.
        static_assert(sizeof(um_proto_shm_counts_t) == 120, "every counter of um_proto_shm_counts_t loaded below");
        const auto load = [](const auto &f) { return __atomic_load_n(&f, __ATOMIC_RELAXED); };
        const um_proto_shm_counts_t &s = shm_counts_;
        um_proto_shm_counts_t c{};
        c.sent = load(s.sent);
        c.received = load(s.received);
        c.ring_bytes_in = load(s.ring_bytes_in);
        c.rings_out = load(s.rings_out);
        c.rings_in = load(s.rings_in);
        c.pulls_sent = load(s.pulls_sent);
        c.pulls_read = load(s.pulls_read);
        c.pulls_mapped = load(s.pulls_mapped);
        c.pulls_streamed = load(s.pulls_streamed);
        c.pulls_staged = load(s.pulls_staged);
        c.rows_staged = load(s.rows_staged);
        c.rows_straight = load(s.rows_straight);
        c.eager_limit = shm_limit_;
        c.rings_cold = static_cast<uint32_t>(cold_.size());
        c.rows_cost_staged = stage_choice_.cost(true);
        c.rows_cost_straight = stage_choice_.cost(false);
        return c;
    }
    um_proto_faults_t faults();

    // packer: data (a send buffer) is packed by it, in order; where it goes
    // as a pull from the arena the record goes first (send.cc). data null: a
    // buffer is taken (send_buffer) only where it is packed into, and left in
    // *taken for the caller to give back once the send completed.
    int send(Comm *comm, Peer *peer, int32_t dst, int32_t tag, const um_hint_t &hint,
             const void *data, size_t length, bool sync, SendOp *op, void *cookie,
             const Packer *packer = nullptr, void **taken = nullptr);
    // Buffers of packed sends (um_proto_send_buffer).
    void *send_buffer(size_t length) noexcept {
        Guard pool(pool_lock());
        return send_buffers_.get(length);
    }
    void send_buffer_return(void *p, size_t length) noexcept {
        Guard pool(pool_lock());
        send_buffers_.put(p, length);
    }
    // MPI_THREAD_MULTIPLE: numbers op and pushes it to the peer's ring if it
    // can; with a packer (the packing slot taken), streamed, or kUnpacked:
    // nothing numbered, the data must be packed whole first.
    enum class Push { kPushed, kNotPushed, kUnpacked };
    bool send_now_shared(Comm *comm, Peer *peer, int32_t dst, int32_t tag, const um_hint_t &hint,
                         const void *data, size_t length);
    Push push_shared(Comm *comm, Peer *peer, int32_t dst, const void *data, size_t length, SendOp *op,
                     bool pull, const Packer *packer);
    // A send UCX finishes inside the call (with threads: the ring takes it),
    // or nothing. Inline: with the glue's inline part, this is all of a small MPI_Send.
    bool send_now(Comm *comm, Peer *peer, int32_t dst, int32_t tag, const um_hint_t &hint,
                  const void *data, size_t length) {
        if (static_cast<uint32_t>(dst) >= static_cast<uint32_t>(comm->remote_size)) {
            return false;
        }
        if (thread_multiple_) {
            return send_now_shared(comm, peer, dst, tag, hint, data, length);
        }
        uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
        // UCX copies the header before an immediate completion: the stack will do.
        const WireHeader hdr{comm->cid, comm->local_rank, tag, seq, hint.coll, 0, 0, 0};
        if (length <= shm_limit_ && !(UM_UNLIKELY(pull_size(length)) && peer->pull)) {
            if (UM_LIKELY(peer->ring != nullptr) && peer->ring->push(hdr, data, length)) {
                ++seq;
                ++shm_counts_.sent;
                return true;
            }
            if (UM_UNLIKELY(peer->shm == Peer::kWanted)) {
                offer(*peer);
            }
        }
        if (UM_UNLIKELY(pull_size(length)) &&
            (peer->pull || (length >= kLocalRndv && peer->single_copy_rndv))) {
            return false; // send() pulls or asks for the rendezvous
        }
        ucp_request_param_t param;
        param.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
        void *req = ucp_am_send_nbx(peer->ep, kAmMessage, &hdr, header_length(false, hint), data,
                                    length, &param);
        if (req != nullptr) {
            return false; // UCS_ERR_NO_RESOURCE (not short, or the FIFO is full) or an error
        }
        ++seq;
        return true;
    }
    int recv(Comm *comm, um_proto_recv_t *recv);
    int recv_batch(Comm *comm, um_proto_recv_t *const *recvs, size_t n, size_t *done);
    int cancel(Comm *comm, um_proto_recv_t *recv, bool *cancelled);
    // *info is read while no other thread can take the message.
    int probe(Comm *comm, int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
              Message **found, um_proto_msg_info_t *info);
    void msg_recv(Message *msg, um_proto_recv_t *recv);
    // A collective call begins or ends on comm (the engine's collective_begin/end).
    int collective(Comm *comm, const um_hint_t &hint, bool begin);

private:
    friend struct ProtocolTestAccess; // test/protocol: arrivals fed as a ring's records
    static ucs_status_t am_message_cb(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length, const ucp_am_recv_param_t *param);
    static ucs_status_t am_ack_cb(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param);
    static ucs_status_t am_shm_offer_cb(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length, const ucp_am_recv_param_t *param);
    static ucs_status_t am_shm_reply_cb(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length, const ucp_am_recv_param_t *param);
    // peer.cc: the shared-memory rings.
    void offer(Peer &peer) noexcept;
    void map_ring(const ShmOffer &offer, ucp_ep_h reply_ep) noexcept;
    int poll_rings() noexcept;     // every ring, every round
    int poll_hot_rings() noexcept; // more than kPollAllRings: the hot ones and a few cold
    int poll_ring(shm::Receiver *in) noexcept;
    bool ring_arrival(const shm::RecordHeader &r, const void *payload, shm::Receiver *ring) noexcept;
    // send.cc: a message the receiver reads from our memory; false: not now.
    // With `streamed`, the record goes before the data: stream() packs it.
    bool push_pull(Peer &peer, SendOp *op, const void *data, size_t length, bool streamed);
    // Packs a pushed, streamed pull piece by piece, frees the packing slot and
    // gives op its own completion (push_pull counted it).
    void stream(Peer &peer, shm::Sender &ring, SendOp *op, const void *data, size_t length,
                const Packer &packer) noexcept;
    // Whether pulls to peer wait for its receiver to read them.
    bool pulls_out(Peer &peer) noexcept;
    // The packing slot of peer's ring for a send of data from the arena;
    // false: it is packed whole before anything goes.
    bool take_pack_slot(Peer &peer, const void *data, size_t length) noexcept;
    void give_pack_slot(Peer &peer) noexcept {
        if (thread_multiple_) {
            peer.pack_slot.unlock();
        }
    }
    int reap_pulls() noexcept; // pulls the receivers have finished
    // A ring whose receiver pulls from now on; false: no memory to watch it
    // (then the peer does without pulls). From progress: with threads inside its
    // gate, as reap_pulls; or while the endpoints close at the end.
    bool watch_pulls(shm::Sender &ring) noexcept;
    // Sizes that go as pulls to a peer that takes them (kPullMin).
    bool pull_size(size_t length) const { return length >= kPullMin || length > shm_limit_; }
    // Contiguous sends copied into the arena and streamed (shm_stage_max):
    // whether one of length goes so to peer, and its buffer there (nullptr:
    // none, it goes as it is), which give_back_staged returns when the send
    // completes.
    bool stages(const Peer &peer, size_t length) const noexcept;
    void *take_staged(size_t length) noexcept;
    void give_back_staged(SendOp *op) noexcept;
    bool windowed(Peer &peer, size_t length) noexcept;
    // Under the lock: a message whose fields are set goes to its communicator
    // (or waits for it). True when it was kept. Inline (arrival.cc only), with
    // accept: every arrival's path.
    __attribute__((always_inline)) inline bool route(Message *msg, Actions &actions, bool ucx_owns);
    int progress_shared();
    void top_up_reserve() noexcept;
    static void send_cb(void *request, ucs_status_t status, void *user_data);
    static void ack_sent_cb(void *request, ucs_status_t status, void *user_data);
    static void rndv_cb(void *request, ucs_status_t status, size_t length, void *user_data);
    // UCX unpacks a rendezvous into a non-contiguous receive through this type:
    // piece by piece into the unpack callback, no scratch copy of the message.
    static const ucp_generic_dt_ops_t kRndvUnpackOps;
    // A packed send through UCX: UCX packs each fragment as it sends it, from
    // the SendOp given as the "buffer" (no copy of the message first).
    static const ucp_generic_dt_ops_t kSendPackOps;

    ucs_status_t on_message(const void *header, size_t header_length, void *data,
                            size_t length, const ucp_am_recv_param_t *param) noexcept;
    // Under the lock: sequence check, then the engine. True when msg was kept.
    __attribute__((always_inline)) inline bool accept(Comm &comm, Message *msg, Actions &actions, bool ucx_owns);
    bool accept_out_of_turn(Comm &comm, Message *msg, Actions &actions, bool ucx_owns);
    void accept_held(Comm &comm, Message *msg, Actions &actions); // held for comm until it was created
    void release_early(Comm &comm, int32_t src, Actions &actions);
    bool arrive(Comm &comm, Message *msg, Actions &actions, bool ucx_owns);
    // relaxed.cc, under the lock: an engine of comm (internal: of Open MPI's traffic beside a relaxed one).
    std::unique_ptr<Engine> new_engine(const Comm &comm, const std::string &backend, bool internal = false);
    void set_engine(Comm &comm, std::unique_ptr<Engine> engine, const std::string &backend);
    // An arrival the no-unexpected engine refused: comm keeps unexpected messages
    // from now on, msg the first (queued, *match empty). False: no memory for that.
    bool keep_unexpected(Comm &comm, Message *msg, const um_hint_t &hint, um_match_t *match) noexcept;
    // comm's queued point-to-point traffic moved, in order, into a new engine of
    // wanted (or of fewer assertions, engine_for_queued), which becomes comm's.
    // False, nothing changed, when it refuses one (cannot happen).
    bool move_queued(Comm &comm, const std::string &wanted);
    std::string engine_for_queued(const std::string &backend, const Snapshot &snap) const;
    void store(Message *msg) noexcept;
    // Fault injection (um_proto_config_t.fail_alloc_every): this allocation fails.
    bool inject_failure() noexcept {
        return fail_alloc_every_ != 0 && ++allocations_ % fail_alloc_every_ == 0;
    }
    Comm *find_comm(uint32_t cid) const {
        return cid < comms_.size() ? comms_[cid] : nullptr;
    }

    // Inline: every matched arrival runs it; most send no acknowledgement.
    void run(Actions &actions) {
        actions.for_each([this](const Actions::Item &it) { matched(it.recv, it.msg); });
    }
    // Outside the lock: msg was matched (to recv; nullptr: an mprobe took it).
    void matched(um_proto_recv_t *recv, Message *msg) {
        if (UM_UNLIKELY(msg->hdr.flags & kFlagSync)) {
            acknowledge(*msg);
        }
        if (recv != nullptr) {
            deliver(recv, msg);
        }
    }
    void deliver(um_proto_recv_t *recv, Message *msg) noexcept;
    void deliver_rndv(um_proto_recv_t *recv, Message *msg) noexcept;
    void deliver_pull(um_proto_recv_t *recv, Message *msg) noexcept;
    static unsigned char *pull_scratch() noexcept;
    // Inline (delivery.cc only): on the path of every eager receive.
    inline bool copy_out(um_proto_recv_t *recv, const void *data, size_t n, size_t offset = 0);
    // copy_packing's result when the glue could not unpack: the receive fails,
    // the send does not (the sender's data was whole).
    static constexpr int kUnpackFailed = -1;
    int copy_packing(um_proto_recv_t *recv, shm::Receiver &ring, uint64_t address, const unsigned char *src,
                     size_t n) noexcept;
    __attribute__((always_inline)) inline void finish_recv(um_proto_recv_t *recv, int32_t source, int32_t tag, size_t length, int status);
    __attribute__((always_inline)) inline void finish_and_free(um_proto_recv_t *recv, Message *msg, int status);
    void acknowledge(const Message &msg) noexcept;
    void send_event(SendOp *op, int status);
    static size_t header_length(bool sync, const um_hint_t &hint) {
        return (sync || hint.coll != UM_COLL_NONE) ? sizeof(WireHeader) : kShortHeader;
    }

    // The lock and the counters cost fences that stall behind the shared-memory
    // transport's stores: only with MPI_THREAD_MULTIPLE are they needed.
    class Guard {
    public:
        explicit Guard(Protocol &p) : Guard(p.thread_multiple_ ? &p.lock_ : nullptr) {}
        // m: nullptr for none.
        explicit Guard(SpinLock *m) : m_(m) {
            if (m_ != nullptr) {
                m_->lock();
            }
        }
        ~Guard() {
            if (m_ != nullptr) {
                m_->unlock();
            }
        }
        Guard(const Guard &) = delete;
        Guard &operator=(const Guard &) = delete;

    private:
        SpinLock *m_;
    };
    // Outside the lock: may release a UCX descriptor.
    void free_message(Message *msg) {
        if (UM_UNLIKELY(msg->rndv || msg->pull || msg->on_heap())) {
            release_data(msg);
        }
        recycle(msg);
    }
    void recycle(Message *msg) { // outside the lock
        if (thread_multiple_ && in_gate() && gate_cache_.keep(msg)) {
            return;
        }
        Guard guard(pool_lock());
        messages_.put(msg);
    }
    bool in_gate() const { return tls_gate == this; } // this thread is inside progress_shared
    static thread_local const Protocol *tls_gate;
    GateCache gate_cache_; // the gate's own descriptors (message.h)
    // What a receiving thread's matching call takes: the core's lock, unless
    // comm's matching has its own locks (tail queues).
    SpinLock *match_lock(const Comm &comm) {
        return thread_multiple_ && !comm.tailq ? &lock_ : nullptr;
    }
    // The message pool has its own lock, so that a receiving thread giving a
    // descriptor back does not wait for arrivals matched under lock_.
    SpinLock *pool_lock() { return thread_multiple_ ? &pool_lock_ : nullptr; }
    // Packer::pack's stage for a message of length bytes, given back by
    // give_stage; or null, and packing goes straight to the buffer: a large
    // message, a packer that says a stage is not worth it, shm_pack_stage
    // never, no memory, or with threads another thread packing through it.
    unsigned char *take_stage(const Packer &packer, size_t length) noexcept;
    // A packing the stage can take: rows, kPackStageMax bytes at most.
    static bool stageable(const Packer &packer, size_t length) noexcept {
        return packer.rows && length <= kPackStageMax;
    }
    void give_stage(unsigned char *stage) noexcept;
    // All of a send's data packed into its buffer before anything goes.
    bool pack_all(const Packer &packer, const void *data, size_t length) noexcept;
    // A peer's ring state (Peer::ring_lock), locked only with threads.
    SpinLock *ring_lock(Peer &peer) { return thread_multiple_ ? &peer.ring_lock : nullptr; }
    // The rings, then UCX; while the rings deliver, UCX only every 8th round
    // (it carries what little it has then: larger and synchronous sends).
    // Up to kPollAllRings rings every one is polled on every round.
    static constexpr size_t kPollAllRings = 8;
    int poll_rings_then_ucx() {
        int n = 0;
        if (inbound_.size() > kPollAllRings) {
            n = poll_hot_rings();
        } else if (!inbound_.empty()) {
            n = poll_rings();
        }
        if (UM_UNLIKELY(pulls_out_.load(std::memory_order_relaxed) != 0)) {
            n += reap_pulls();
        }
        if (n == 0 || (++ring_rounds_ & 7) == 0) {
            n += static_cast<int>(ucp_worker_progress(worker_));
        }
        return n;
    }
    // Under the lock: an arrival that cannot be kept for want of memory. Its
    // rendezvous descriptor is released unless UCX still owns it (inside the
    // arrival's own callback, where returning UCS_OK gives it back).
    void drop(Message *msg, bool ucx_owns);
    void release_data(Message *msg);
    bool hold_unknown(Message *msg) noexcept; // under the lock

    const std::string backend_;
    const um_params_t params_;
    const bool thread_multiple_;
    const bool tailq_; // communicators match in tail queues (only with thread_multiple_)
    const int tailq_bins_;
    const std::string ucx_tls_;
    const std::string ucx_rndv_thresh_;
    bool user_rndv_ = false; // the user set the rendezvous threshold (parameter or UCX_RNDV_THRESH)
    const um_proto_callbacks_t cb_;
    const uint64_t fail_alloc_every_;
    uint64_t allocations_ = 0;

    const size_t shm_bound_;    // shm_eager_limit: the most shm_limit_ may be
    const uint32_t ring_cells_; // of each ring this process makes
    const size_t shm_limit_;    // largest payload through a ring (shm::eager_limit); 0: no rings
    const bool shm_pull_;       // rings carry pulls (um_proto_config_t)
    const size_t stage_max_;    // contiguous pulls up to this size staged (shm_stage_max; 0: none)
    const int stage_way_;       // streamed rows through pack_stage_ (shm_pack_stage)
    std::atomic<size_t> staged_bytes_{0}; // staged buffers out (kStagedInFlight)
    std::atomic<uint64_t> pulls_out_{0}; // pulls sent, not yet handed back
    std::vector<shm::Sender *> pull_rings_; // the rings reap_pulls polls (owned by their Peer, kept to the end)
    std::vector<std::unique_ptr<Peer>> peers_;               // never freed before the end: ids stay valid
    std::vector<std::unique_ptr<shm::Receiver>> inbound_; // rings other processes write to us
    bool polling_ = false;      // poll_rings is not re-entered from a delivery's callback
    unsigned ring_rounds_ = 0;
    um_proto_shm_counts_t shm_counts_{};

    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    ucp_datatype_t rndv_unpack_dt_ = 0; // kRndvUnpackOps's type (0: none, scratch memory then)
    ucp_datatype_t send_pack_dt_ = 0;   // kSendPackOps's type (0: none, packed whole first then)

    SpinLock lock_;
    SpinLock pool_lock_; // messages_; taken after lock_ where both are
    std::atomic<bool> progressing_{false};
    std::vector<Comm *> comms_; // by context id
    std::unordered_map<uint32_t, std::vector<Message *>> unknown_comm_; // arrived before their communicator
    size_t held_ = 0; // messages out of sequence or for unknown communicators
    uint64_t lost_ = 0;    // payloads that could not be kept (their receives fail)
    uint64_t dropped_ = 0; // arrivals with no memory left even for their descriptor
    MessagePool messages_; // under pool_lock_
    // Under pool_lock_: unexpected payloads' copies, 128 B - 64 KiB (the rings'
    // eager limit is below), 4 MiB kept.
    BufferPool payloads_{7, 16, size_t{4} << 20};
    std::unique_ptr<shm::Arena> arena_; // made by start() where rings carry pulls
    // Under pool_lock_: packed sends' buffers (send_buffer), 4 KiB - 64 MiB,
    // carved from arena_ while it has room, then allocated; kSendKept bytes
    // of free ones kept with their memory.
    // After arena_: gone before it.
    BufferPool send_buffers_{12, 26, kSendKept};
    // Under pool_lock_: scratch memory of rendezvous receives (delivery.cc),
    // 4 KiB - 64 MiB classes, kRndvScratchKept kept; scratch_out_ bytes of it in
    // flight (kRndvScratchInFlight).
    BufferPool rndv_scratch_{12, 26, kRndvScratchKept};
    size_t scratch_out_ = 0;
    std::unique_ptr<unsigned char[]> pack_stage_; // take_stage(), made on first use
    SpinLock stage_lock_;                         // with threads: pack_stage_ taken
    StageChoice stage_choice_;                    // stream(): rows through pack_stage_ or straight
    // Of inbound_, with more than kPollAllRings (poll_hot_rings; last here, so
    // that the members every message uses keep their places):
    std::vector<shm::Receiver *> hot_;  // polled on every round
    std::vector<shm::Receiver *> cold_; // the others, polled a few a round in turn
    size_t next_cold_ = 0;              // the cold ring polled next
};

} // namespace ubermatch::protocol

#endif

// Sends: the wire header, sequence numbers, UCX completion and the
// acknowledgement that completes a synchronous send.
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

#include <cstring>
#include <new>

namespace ubermatch::protocol {

// The packing of a contiguous send staged through the arena (Protocol::stages).
static int copy_piece(void *data, size_t offset, void *dest, size_t length) {
    std::memcpy(dest, static_cast<const unsigned char *>(data) + offset, length);
    return 0; // a copy cannot fail: neither can a staged send's packing
}

int Protocol::send(Comm *comm, Peer *peer, int32_t dst, int32_t tag, const um_hint_t &hint,
                   const void *data, size_t length, bool sync, SendOp *op, void *cookie,
                   const Packer *packer, void **taken) {
    if (dst < 0 || dst >= comm->remote_size) {
        return UM_PROTO_ERROR;
    }
    // A contiguous send staged through the arena goes as a packed one whose
    // packing is a copy (stages; in a window of large ones, UCX copies it as
    // it sends, as it packs others'); without a buffer, as it is.
    op->staged = nullptr;
    Packer copier; // set only for a staged send: nothing more on the common path
    bool in_window = false; // windowed(), asked once (under threads it takes the ring's lock)
    if (packer == nullptr && length <= stage_max_ && stages(*peer, length)) {
        copier = Packer{&copy_piece, const_cast<void *>(data), false, true};
        if ((in_window = windowed(*peer, length))) {
            packer = &copier; // UCX copies it as it sends
        } else if ((op->staged = take_staged(length)) != nullptr) {
            op->length = length;
            data = op->staged;
            packer = &copier;
        }
    }
    // To a peer no ring reaches, UCX packs as it sends (to another node from
    // kUcxPacksMin). So it does from kUcxPacksMin for a message no ring
    // carries (neither a pull nor eager: with pulls off, packed whole first,
    // windows of 1-4 MiB outgrew the pages the pool keeps and ran at 0.3-0.9
    // GB/s; below 1 MiB packing whole was faster, docs/message-path.md round
    // 24) and behind other pulls to the same peer (a window: see
    // kUcxPacksMin). Else the data needs a
    // buffer (taken here when the glue left it to us: a window's UCX-packed
    // sends took one each, never written, whose pages the pool then released,
    // docs/message-path.md round 23); packing streams into it only for a pull
    // from the arena, by the sender that has the ring's packing slot; anything
    // else is packed whole now.
    const bool pull = shm_pull_ && pull_size(length);
    const bool by_ring = pull || (!sync && length <= shm_limit_); // if a ring is up
    const Packer *ucx_packs = nullptr;
    if (packer != nullptr) {
        if (packer != &copier) { // a staged send's was asked above
            in_window = windowed(*peer, length);
        }
        const bool no_ring = __atomic_load_n(&peer->shm, __ATOMIC_RELAXED) == Peer::kNoRing;
        if (in_window || (send_pack_dt_ != 0 && ((no_ring && peer->local) ||
                                                 (length >= kUcxPacksMin && (no_ring || !by_ring))))) {
            ucx_packs = packer; // no path below touches data (kNoRing is for good)
            packer = nullptr;
        } else {
            if (data == nullptr && (data = *taken = send_buffer(length)) == nullptr) {
                return UM_PROTO_NOMEM;
            }
            if (!take_pack_slot(*peer, data, length)) {
                if (!pack_all(*packer, data, length)) {
                    return UM_PROTO_ERROR;
                }
                packer = nullptr;
            }
        }
    }
    op->owner = this;
    op->cookie = cookie;
    op->pending = sync ? 2 : 1;
    op->status = UM_PROTO_OK;
    op->hdr = WireHeader{comm->cid, comm->local_rank, tag, 0, hint.coll,
                         static_cast<uint16_t>(sync ? kFlagSync : 0), 0,
                         reinterpret_cast<uint64_t>(op)};
    bool numbered = false; // push_shared took the message's number
    if (ucx_packs != nullptr) {
        // UCX packs it as it sends: no ring path (each takes data as it is)
    } else if (thread_multiple_ && by_ring) {
        Push pushed = push_shared(comm, peer, dst, data, length, op, pull, packer);
        if (pushed == Push::kUnpacked) {
            give_pack_slot(*peer);
            if (!pack_all(*packer, data, length)) {
                return UM_PROTO_ERROR; // nothing numbered, nothing sent
            }
            packer = nullptr;
            pushed = push_shared(comm, peer, dst, data, length, op, pull, nullptr);
        }
        if (pushed == Push::kPushed) {
            return UM_PROTO_OK;
        }
        numbered = true;
        if (packer != nullptr) {
            // Not expected (push_shared saw room under the same lock), but the
            // number is taken: the message goes, and a failed packing fails
            // the send.
            give_pack_slot(*peer);
            if (!pack_all(*packer, data, length)) {
                op->status = UM_PROTO_ERROR;
            }
        }
    } else if (!sync && length <= shm_limit_ && !(pull && peer->pull)) {
        uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
        op->hdr.seq = seq;
        if (peer->ring != nullptr && peer->ring->push(op->hdr, data, length)) {
            ++seq;
            ++shm_counts_.sent;
            send_event(op, UM_PROTO_OK);
            return UM_PROTO_OK;
        }
        if (peer->shm == Peer::kWanted) {
            offer(*peer);
        }
    } else if (pull) {
        uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
        op->hdr.seq = seq;
        if (peer->pull && push_pull(*peer, op, data, length, packer != nullptr)) {
            ++seq;
            if (packer != nullptr) {
                stream(*peer, *peer->ring, op, data, length, *packer);
            }
            return UM_PROTO_OK;
        }
        if (packer != nullptr && !pack_all(*packer, data, length)) {
            return UM_PROTO_ERROR; // the record did not go: nothing was sent
        }
        if (peer->shm == Peer::kWanted) {
            offer(*peer);
        }
    }
    // With threads, an atomic increment instead of the core's lock, which
    // arrivals hold while they match: a sending thread need not wait for them
    // (push_shared may have taken the number already).
    uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
    if (!numbered) {
        op->hdr.seq = thread_multiple_ ? __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED) : seq++;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send = send_cb;
    param.user_data = op;
    param.flags = (sync ? UCP_AM_SEND_FLAG_REPLY : 0) |
                  (length >= kLocalRndv && peer->single_copy_rndv ? UCP_AM_SEND_FLAG_RNDV : 0);
    const void *buffer = data;
    size_t count = length;
    size_t header = header_length(sync, hint);
    if (ucx_packs != nullptr) {
        op->packer = *ucx_packs;
        op->length = length;
        op->hdr.flags = static_cast<uint16_t>(op->hdr.flags | kFlagUcxPacks);
        header = sizeof(WireHeader);
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype = send_pack_dt_;
        buffer = op;
        count = 1;
    }
    void *req = ucp_am_send_nbx(peer->ep, kAmMessage, &op->hdr, header, buffer, count, &param);
    if (UCS_PTR_IS_PTR(req)) {
        return UM_PROTO_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        op->pending = 1; // no acknowledgement can come: finish with the error
        send_event(op, UM_PROTO_ERROR);
        return UM_PROTO_OK;
    }
    send_event(op, UM_PROTO_OK);
    return UM_PROTO_OK;
}

// The send's SendOp is the "buffer" UCX hands to these; only sends use the
// type. A piece that fails to pack fails the send (UCX has no way to say so
// to the receiver, which gets the piece as it is).
const ucp_generic_dt_ops_t Protocol::kSendPackOps = {
    [](void *, const void *buffer, size_t) -> void * { return const_cast<void *>(buffer); },
    [](void *, void *, size_t) -> void * { return nullptr; },
    [](void *state) -> size_t { return static_cast<SendOp *>(state)->length; },
    [](void *state, size_t offset, void *dest, size_t max_length) -> size_t {
        auto *op = static_cast<SendOp *>(state);
        const size_t n = std::min(max_length, op->length - std::min(offset, op->length));
        if (n != 0 && op->packer.fn(op->packer.arg, offset, dest, n) != 0) {
            __atomic_store_n(&op->status, UM_PROTO_ERROR, __ATOMIC_RELAXED);
        }
        return n;
    },
    [](void *, size_t, const void *, size_t) -> ucs_status_t { return UCS_ERR_UNSUPPORTED; },
    [](void *) {},
};

// MPI_THREAD_MULTIPLE: a small message (or, with `pull`, a pull) through the
// peer's ring, pushed under the peer's ring lock (several threads may send to
// one peer). Its number is taken inside the lock, so a ring's records are in
// order; one that then goes through UCX (ring full, or not ready) keeps it, and
// the receiver holds whichever of the two paths brings a later number first
// (arrival.cc). A streamed pull is numbered only where its record will go
// (kUnpacked otherwise), as its data is not packed yet; it is packed after
// the lock, so that other threads' records to the peer do not wait for it.
Protocol::Push Protocol::push_shared(Comm *comm, Peer *peer, int32_t dst, const void *data,
                                     size_t length, SendOp *op, bool pull, const Packer *packer) {
    bool first = false;
    shm::Sender *streaming = nullptr;
    {
        std::lock_guard<SpinLock> lock(peer->ring_lock);
        if (packer != nullptr &&
            !(pull && peer->pull && peer->ring->may_stream() &&
              peer->ring->may_push_pull(reinterpret_cast<uint64_t>(op)))) {
            return Push::kUnpacked;
        }
        uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
        op->hdr.seq = __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED);
        if (pull && peer->pull) {
            if (push_pull(*peer, op, data, length, packer != nullptr)) {
                if (packer == nullptr) {
                    return Push::kPushed;
                }
                streaming = peer->ring;
            }
        } else if (length <= shm_limit_ && !(op->hdr.flags & kFlagSync) && peer->ring != nullptr &&
                   peer->ring->push(op->hdr, data, length)) {
            __atomic_fetch_add(&shm_counts_.sent, uint64_t{1}, __ATOMIC_RELAXED);
            send_event(op, UM_PROTO_OK);
            return Push::kPushed;
        }
        if (streaming == nullptr) {
            first = peer->shm == Peer::kWanted;
            if (first) {
                peer->shm = Peer::kOffered; // this thread offers; the others go on through UCX
            }
        }
    }
    if (streaming != nullptr) {
        stream(*peer, *streaming, op, data, length, *packer);
        return Push::kPushed;
    }
    if (first) {
        offer(*peer); // outside the lock: the reply's callback takes it inside UCX's
    }
    return Push::kNotPushed;
}

// MPI_THREAD_MULTIPLE: a small message through the peer's ring without a
// request (no SendOp, no completion to signal), as single-threaded send_now
// does; false, nothing numbered, when the ring is not up or has no room: the
// request path sends it. The room is checked before the number is taken, as
// a sender through UCX numbers without the ring lock.
bool Protocol::send_now_shared(Comm *comm, Peer *peer, int32_t dst, int32_t tag, const um_hint_t &hint,
                               const void *data, size_t length) {
    if (length > shm_limit_) {
        return false;
    }
    std::lock_guard<SpinLock> lock(peer->ring_lock);
    shm::Sender *ring = peer->ring;
    if (ring == nullptr || (pull_size(length) && peer->pull) || !ring->fits(length)) {
        return false;
    }
    uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
    const WireHeader hdr{comm->cid, comm->local_rank, tag, __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED),
                         hint.coll, 0, 0, 0};
    ring->push(hdr, data, length); // it fits: only this lock's holder pushes
    __atomic_fetch_add(&shm_counts_.sent, uint64_t{1}, __ATOMIC_RELAXED);
    return true;
}

// op, numbered, as a pull (with threads under the peer's ring lock): the
// receiver reads the message from `data` once matched and hands op back
// through the ring's return slots (reap_pulls), which is all that completes
// it, synchronous or not: it was matched. With threads the hand-back may be
// reaped as soon as the record is out, so op and the count are set first.
//
// Streamed (data in the arena, the packing slot this sender's), the record
// goes before the data: the receiver, once matched, unpacks each piece as the
// ring's packing slot says it is there, while stream() packs the next
// (docs/message-path.md round 13). op then waits for stream() as well: a
// receive shorter than the message may hand it back before all is packed.
bool Protocol::push_pull(Peer &peer, SendOp *op, const void *data, size_t length, bool streamed) {
    const int pending = op->pending;
    op->pending = streamed ? 2 : 1;
    pulls_out_.fetch_add(1, std::memory_order_relaxed);
    const auto address = reinterpret_cast<uint64_t>(data);
    if (arena_ != nullptr && arena_->holds(data, length)) {
        peer.ring->name_arena(*arena_);
    }
    if (streamed) {
        peer.ring->begin_packing(address);
    }
    if (!peer.ring->push_pull(op->hdr, data, length, reinterpret_cast<uint64_t>(op))) {
        pulls_out_.fetch_sub(1, std::memory_order_relaxed);
        op->pending = pending;
        if (streamed) {
            peer.ring->end_packing();
        }
        return false; // the ring or its return slots are full: UCX's rendezvous
    }
    __atomic_fetch_add(&shm_counts_.pulls_sent, uint64_t{1}, __ATOMIC_RELAXED);
    return true;
}

// Packing that fails marks the pull failed for the receiver and the send's
// status.
void Protocol::stream(Peer &peer, shm::Sender &ring, SendOp *op, const void *data, size_t length,
                      const Packer &packer) noexcept {
    auto *dest = static_cast<unsigned char *>(const_cast<void *>(data));
    const size_t each = pack_piece(length, packer.copy);
    // Rows the stage could take go through it or straight, as measured
    // (stage_choice.h) unless shm_pack_stage says which.
    const bool rows = stageable(packer, length);
    const bool measure = rows && stage_way_ == UM_PROTO_PACK_STAGE_MEASURE;
    unsigned char *const stage = !measure || stage_choice_.staged() ? take_stage(packer, length) : nullptr;
    const uint64_t start = measure ? StageChoice::now() : 0;
    int status = UM_PROTO_OK;
    for (size_t off = 0; off < length; off += each) {
        const size_t piece = std::min(each, length - off);
        if (!packer.pack(dest, off, piece, stage)) {
            status = UM_PROTO_ERROR;
            break;
        }
        ring.packed(off + piece);
    }
    if (measure && status == UM_PROTO_OK) {
        stage_choice_.measured(stage != nullptr, StageChoice::now() - start, length);
    }
    if (rows) {
        __atomic_fetch_add(stage != nullptr ? &shm_counts_.rows_staged : &shm_counts_.rows_straight, uint64_t{1},
                           __ATOMIC_RELAXED);
    }
    give_stage(stage);
    if (status == UM_PROTO_OK) {
        ring.end_packing();
        __atomic_fetch_add(&shm_counts_.pulls_streamed, uint64_t{1}, __ATOMIC_RELAXED);
    } else {
        ring.fail_packing();
    }
    give_pack_slot(peer);
    send_event(op, status);
}

// Under threads the ring is read under its lock.
bool Protocol::pulls_out(Peer &peer) noexcept {
    Guard ring(thread_multiple_ ? &peer.ring_lock : nullptr);
    return peer.pull && peer.ring != nullptr && peer.ring->pulls_out() != 0;
}

bool Protocol::take_pack_slot(Peer &peer, const void *data, size_t length) noexcept {
    if (!shm_pull_ || !pull_size(length) || arena_ == nullptr || !arena_->holds(data, length)) {
        return false;
    }
    if (thread_multiple_) {
        return peer.pack_slot.try_lock(); // the ring's state is read under its lock (push_shared)
    }
    return peer.pull && peer.ring != nullptr && peer.ring->may_stream();
}

// A word at a time, not memcpy (see kPackStage); volatile, so that the
// compiler neither widens the stores nor calls memcpy for the loop.
static void copy_words(unsigned char *dest, const unsigned char *src, size_t n) {
    auto *to = reinterpret_cast<volatile uint64_t *>(dest);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        std::memcpy(&word, src + i, 8);
        *to++ = word;
    }
    std::memcpy(dest + i, src + i, n - i);
}

bool Packer::pack(unsigned char *dest, size_t off, size_t length, unsigned char *stage) const {
    if (stage == nullptr) {
        return fn(arg, off, dest + off, length) == 0;
    }
    for (const size_t end = off + length; off < end;) {
        const size_t n = std::min(kPackStage, end - off);
        if (fn(arg, off, stage, n) != 0) {
            return false;
        }
        copy_words(dest + off, stage, n);
        off += n;
    }
    return true;
}

unsigned char *Protocol::take_stage(const Packer &packer, size_t length) noexcept {
    if (!stageable(packer, length) || stage_way_ == UM_PROTO_PACK_STAGE_NEVER ||
        (thread_multiple_ && !stage_lock_.try_lock())) {
        return nullptr;
    }
    if (pack_stage_ == nullptr) {
        pack_stage_.reset(new (std::nothrow) unsigned char[kPackStage]);
    }
    unsigned char *stage = pack_stage_.get();
    if (stage == nullptr && thread_multiple_) {
        stage_lock_.unlock();
    }
    return stage;
}

void Protocol::give_stage(unsigned char *stage) noexcept {
    if (stage != nullptr && thread_multiple_) {
        stage_lock_.unlock();
    }
}

bool Protocol::pack_all(const Packer &packer, const void *data, size_t length) noexcept {
    unsigned char *stage = take_stage(packer, length);
    const bool ok = packer.pack(static_cast<unsigned char *>(const_cast<void *>(data)), 0, length, stage);
    give_stage(stage);
    return ok;
}

bool Protocol::watch_pulls(shm::Sender &ring) noexcept {
    try {
        pull_rings_.push_back(&ring);
        return true;
    } catch (const std::bad_alloc &) {
        return false; // no pulls through this ring: UCX's rendezvous
    }
}

// Only the rings that carry pulls, not every peer: a large job has thousands
// of peers, a node a few dozen.
int Protocol::reap_pulls() noexcept {
    int n = 0;
    for (shm::Sender *ring : pull_rings_) {
        if (ring->pulls_out() != 0) {
            n += ring->reap([this](uint64_t sender, bool ok) {
                pulls_out_.fetch_sub(1, std::memory_order_relaxed);
                send_event(reinterpret_cast<SendOp *>(sender), ok ? UM_PROTO_OK : UM_PROTO_ERROR);
            });
        }
    }
    return n;
}

void Protocol::send_cb(void *request, ucs_status_t status, void *user_data) {
    auto *op = static_cast<SendOp *>(user_data);
    ucp_request_free(request);
    if (status != UCS_OK && (op->hdr.flags & kFlagSync)) {
        // The acknowledgement will not come.
        op->owner->send_event(op, UM_PROTO_ERROR);
    }
    op->owner->send_event(op, status == UCS_OK ? UM_PROTO_OK : UM_PROTO_ERROR);
}

void Protocol::send_event(SendOp *op, int status) {
    int left;
    if (thread_multiple_) {
        if (status != UM_PROTO_OK) {
            __atomic_store_n(&op->status, status, __ATOMIC_RELAXED);
        }
        left = __atomic_sub_fetch(&op->pending, 1, __ATOMIC_ACQ_REL);
    } else {
        if (status != UM_PROTO_OK) {
            op->status = status;
        }
        left = --op->pending;
    }
    if (left == 0) {
        if (op->staged != nullptr) {
            give_back_staged(op);
        }
        cb_.send_done(op->cookie, op->status);
    }
}

// A packed send of kUcxPacksMin or more behind other pulls to its receiver
// (kUcxPacksMin: a window) is packed by UCX as it sends.
bool Protocol::windowed(Peer &peer, size_t length) noexcept {
    return send_pack_dt_ != 0 && length >= kUcxPacksMin && pulls_out(peer);
}

// Round 20 (docs/message-path.md): on the machines measured a CMA read costs
// ~1 us a call and ~60 ns a page, more than a second copy through memory both
// processes map; staged and streamed, 12 KiB - 8 MiB took 0.3-0.6x the one-way
// time of a pull by CMA. Only to a peer whose ring carries pulls (the arena is
// named to it with the first), of a pull's size.
bool Protocol::stages(const Peer &peer, size_t length) const noexcept {
    return arena_ != nullptr && peer.local && pull_size(length) &&
           __atomic_load_n(&peer.pull, __ATOMIC_RELAXED);
}

// An arena buffer while kStagedInFlight bytes are not out already.
void *Protocol::take_staged(size_t length) noexcept {
    if (staged_bytes_.fetch_add(length, std::memory_order_relaxed) + length > kStagedInFlight) {
        staged_bytes_.fetch_sub(length, std::memory_order_relaxed);
        return nullptr;
    }
    void *buffer = send_buffer(length);
    if (buffer == nullptr || !arena_->holds(buffer, length)) { // past the arena: a CMA read anyway
        if (buffer != nullptr) {
            send_buffer_return(buffer, length);
        }
        staged_bytes_.fetch_sub(length, std::memory_order_relaxed);
        return nullptr;
    }
    __atomic_fetch_add(&shm_counts_.pulls_staged, uint64_t{1}, __ATOMIC_RELAXED);
    return buffer;
}

void Protocol::give_back_staged(SendOp *op) noexcept {
    send_buffer_return(op->staged, op->length);
    staged_bytes_.fetch_sub(op->length, std::memory_order_relaxed);
    op->staged = nullptr;
}

ucs_status_t Protocol::am_ack_cb(void *arg, const void *header, size_t header_length, void *,
                                 size_t, const ucp_am_recv_param_t *) {
    if (header_length != sizeof(uint64_t)) {
        return UCS_OK;
    }
    uint64_t sender;
    std::memcpy(&sender, header, sizeof sender);
    static_cast<Protocol *>(arg)->send_event(reinterpret_cast<SendOp *>(sender), UM_PROTO_OK);
    return UCS_OK;
}

} // namespace ubermatch::protocol

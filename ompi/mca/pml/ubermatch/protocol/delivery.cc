// Delivery: eager copies, rendezvous receives, truncation, and the
// acknowledgement of synchronous sends.
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ubermatch::protocol {

namespace {

// A rendezvous receive in flight.
struct RndvOp {
    Protocol *proto;
    um_proto_recv_t *recv;
    Message *msg;
    void *scratch; // the data lands here when the receive cannot take it directly
    bool unpack_failed; // the glue refused a piece: the rest are not passed, the receive fails
};

// An acknowledgement in flight: UCX reads the header until the send completes.
struct AckOp {
    uint64_t sender;
};

} // namespace

void Protocol::acknowledge(const Message &msg) noexcept {
    if (!(msg.hdr.flags & kFlagSync) || msg.reply_ep == nullptr) {
        return;
    }
    // Mostly done inside the call: then the header may live on the stack.
    AckHeader sender = msg.hdr.sender;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    if (ucp_am_send_nbx(msg.reply_ep, kAmAck, &sender, sizeof sender, nullptr, 0, &param) ==
        nullptr) {
        return;
    }
    auto *ack = new (std::nothrow) AckOp{msg.hdr.sender};
    if (ack == nullptr) {
        ++lost_; // the sender of this synchronous send waits; nothing else is affected
        return;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = ack_sent_cb;
    param.user_data = ack;
    void *req = ucp_am_send_nbx(msg.reply_ep, kAmAck, &ack->sender, sizeof ack->sender, nullptr, 0,
                                &param);
    if (!UCS_PTR_IS_PTR(req)) {
        delete ack; // done at once, or failed (the sender then waits: nothing better to do)
    }
}

void Protocol::ack_sent_cb(void *request, ucs_status_t, void *user_data) {
    delete static_cast<AckOp *>(user_data);
    ucp_request_free(request);
}

// False when the glue could not unpack the piece.
bool Protocol::copy_out(um_proto_recv_t *recv, const void *data, size_t n, size_t offset) {
    if (n == 0) {
        return true;
    }
    if (UM_LIKELY(recv->buffer != nullptr)) {
        copy_payload(static_cast<unsigned char *>(recv->buffer) + offset, data, n);
        return true;
    }
    return cb_.recv_unpack(recv->cookie, offset, data, n) == 0;
}

// n bytes of the pull at `address`, mapped at src, as its sender packs them:
// what is packed is unpacked while the sender packs the rest (all at once if
// it is done). A sender that died or failed while packing fails the receive;
// a piece the glue cannot unpack fails it too (kUnpackFailed), not the send.
int Protocol::copy_packing(um_proto_recv_t *recv, shm::Receiver &ring, uint64_t address,
                           const unsigned char *src, size_t n) noexcept {
    size_t done = 0;
    for (unsigned waits = 0; done < n;) {
        const uint64_t ready = ring.packed_of(address, n);
        if (ready == shm::kPackFailed) {
            return UM_PROTO_ERROR;
        }
        if (ready > done) {
            if (!copy_out(recv, src + done, static_cast<size_t>(ready) - done, done)) {
                return kUnpackFailed;
            }
            done = static_cast<size_t>(ready);
            waits = 0;
        } else if (++waits % 1024 == 0) {
            if (!ring.sender_alive()) {
                return UM_PROTO_ERROR;
            }
            std::this_thread::yield(); // an oversubscribed node: let the sender run
        } else {
            SpinLock::relax();
        }
    }
    return UM_PROTO_OK;
}

void Protocol::finish_recv(um_proto_recv_t *recv, int32_t source, int32_t tag, size_t length,
                           int status) {
    const size_t n = std::min(length, recv->capacity);
    if (status == UM_PROTO_OK && length > recv->capacity) {
        status = UM_PROTO_TRUNCATED;
    }
    // A failed receive took no data.
    const bool took = status == UM_PROTO_OK || status == UM_PROTO_TRUNCATED;
    cb_.recv_done(recv->cookie, source, tag, took ? n : 0, length, status);
}

// The descriptor goes back before the glue hears of the receive (its callback
// may post again and reuse it).
void Protocol::finish_and_free(um_proto_recv_t *recv, Message *msg, int status) {
    const int32_t source = msg->hdr.source;
    const int32_t tag = msg->hdr.tag;
    const size_t length = msg->length;
    free_message(msg);
    finish_recv(recv, source, tag, length, status);
}

void Protocol::deliver(um_proto_recv_t *recv, Message *msg) noexcept {
    if (UM_UNLIKELY(msg->rndv | msg->pull)) {
        if (msg->rndv) {
            deliver_rndv(recv, msg);
        } else {
            deliver_pull(recv, msg);
        }
        return;
    }
    if (UM_UNLIKELY(msg->lost)) {
        finish_and_free(recv, msg, UM_PROTO_NOMEM);
        return;
    }
    const bool ok = copy_out(recv, msg->data, std::min(msg->length, recv->capacity));
    finish_and_free(recv, msg, ok ? UM_PROTO_OK : UM_PROTO_ERROR);
}

// The receive's RndvOp is the "buffer" UCX hands to these; only receives use the type.
const ucp_generic_dt_ops_t Protocol::kRndvUnpackOps = {
    [](void *, const void *, size_t) -> void * { return nullptr; },
    [](void *, void *buffer, size_t) -> void * { return buffer; },
    [](void *state) -> size_t { return static_cast<RndvOp *>(state)->msg->length; },
    [](void *, size_t, void *, size_t) -> size_t { return 0; },
    [](void *state, size_t offset, const void *src, size_t length) -> ucs_status_t {
        // A refusal is kept for rndv_cb: what UCX 1.13 does with an error
        // returned here is not documented.
        auto *op = static_cast<RndvOp *>(state);
        if (!op->unpack_failed && op->proto->cb_.recv_unpack(op->recv->cookie, offset, src, length) != 0) {
            op->unpack_failed = true;
        }
        return UCS_OK;
    },
    [](void *) {},
};

// Rendezvous: straight into a contiguous buffer that can take it all; into a
// non-contiguous one through the unpack callback in the pieces UCX receives
// (up to kRndvUnpackMax, of any size that UCX packs at the sender, and past
// kRndvScratchInFlight of scratch out); else into scratch memory (larger, or
// truncated: UCX would abort on a receive smaller than the message), from
// rndv_scratch_. No memory for that: the receive fails with
// UM_PROTO_NOMEM and the sender's data is released. Not injected: with UCX
// 1.13.1, releasing a rendezvous descriptor unreceived was seen to complete the
// sender's next rendezvous send before its data was read (test alloc_faults,
// when this path was injected); a real failure here stays rare and reported.
void Protocol::deliver_rndv(um_proto_recv_t *recv, Message *msg) noexcept {
    auto *op = new (std::nothrow) RndvOp{this, recv, msg, nullptr, false};
    void *dest = recv->buffer;
    const size_t length = std::max<size_t>(msg->length, 1);
    bool unpack = false;
    if (op != nullptr && (dest == nullptr || msg->length > recv->capacity)) {
        Guard pool(pool_lock());
        unpack = dest == nullptr && msg->length <= recv->capacity && rndv_unpack_dt_ != 0 &&
                 (msg->length <= kRndvUnpackMax || (msg->hdr.flags & kFlagUcxPacks) ||
                  scratch_out_ + length > kRndvScratchInFlight);
        if (!unpack) {
            dest = op->scratch = rndv_scratch_.get(length);
            scratch_out_ += dest != nullptr ? length : 0;
        }
    }
    if (op != nullptr && !unpack && dest == nullptr) { // no memory for the scratch
        delete op;
        op = nullptr;
    }
    if (op == nullptr) {
        ++lost_;
        finish_and_free(recv, msg, UM_PROTO_NOMEM);
        return;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = rndv_cb;
    param.user_data = op;
    size_t count = msg->length;
    if (unpack) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype = rndv_unpack_dt_;
        dest = op;
        count = 1;
    }
    void *req = ucp_am_recv_data_nbx(worker_, msg->data, dest, count, &param);
    if (!UCS_PTR_IS_PTR(req)) {
        rndv_cb(nullptr, UCS_PTR_STATUS(req), msg->length, op);
    }
}

// The thread's scratch for pulls into non-contiguous receives: made on its
// first such pull, kept until the thread ends (pulls run in the progressing
// thread, or in one posting a receive: one piece at a time in each).
unsigned char *Protocol::pull_scratch() noexcept {
    thread_local std::unique_ptr<unsigned char[]> scratch;
    if (UM_UNLIKELY(!scratch)) {
        scratch.reset(new (std::nothrow) unsigned char[kPullPiece]);
    }
    return scratch.get();
}

// A pull: from the sender's arena where it is mapped here (a packed send),
// else straight from the sender's buffer into a contiguous receive (as
// much as it takes: truncation reads no more), else in pieces through this
// thread's pull scratch and the unpack callback: each piece is unpacked while
// it is still in the cache, and the scratch's pages stay mapped (a fresh
// allocation per message faulted its pages in every time). The sender gets
// its buffer back in every case; a failed read (the sender's memory gone)
// fails both.
void Protocol::deliver_pull(um_proto_recv_t *recv, Message *msg) noexcept {
    const PullRef ref = PullRef::of(*msg);
    const size_t n = std::min(msg->length, recv->capacity);
    int status = UM_PROTO_OK;
    if (const unsigned char *src = ref.ring->mapped(ref.address, n)) {
        // From the sender's arena: no CMA, no scratch.
        status = copy_packing(recv, *ref.ring, ref.address, src, n);
        __atomic_fetch_add(&shm_counts_.pulls_mapped, uint64_t{1}, __ATOMIC_RELAXED);
    } else if (recv->buffer != nullptr) {
        if (!ref.ring->read(recv->buffer, ref.address, n)) {
            status = UM_PROTO_ERROR;
        }
    } else if (n > 0) {
        unsigned char *const scratch = pull_scratch();
        if (scratch == nullptr) {
            ++lost_;
            status = UM_PROTO_NOMEM;
        }
        for (size_t off = 0; off < n && status == UM_PROTO_OK; off += kPullPiece) {
            const size_t piece = std::min(kPullPiece, n - off);
            if (!ref.ring->read(scratch, ref.address + off, piece)) {
                status = UM_PROTO_ERROR;
            } else if (cb_.recv_unpack(recv->cookie, off, scratch, piece) != 0) {
                status = kUnpackFailed;
            }
        }
    }
    PullRef::hand_back(*msg, status != UM_PROTO_ERROR);
    finish_and_free(recv, msg, status == kUnpackFailed ? UM_PROTO_ERROR : status);
}

void Protocol::rndv_cb(void *request, ucs_status_t status, size_t, void *user_data) {
    auto *op = static_cast<RndvOp *>(user_data);
    Protocol *self = op->proto;
    const int32_t source = op->msg->hdr.source;
    const int32_t tag = op->msg->hdr.tag;
    const size_t length = op->msg->length;
    um_proto_recv_t *recv = op->recv;
    self->recycle(op->msg); // UCX took the descriptor with the receive
    bool unpacked = !op->unpack_failed;
    if (op->scratch != nullptr) {
        if (status == UCS_OK) {
            unpacked = self->copy_out(recv, op->scratch, std::min(length, recv->capacity));
        }
        const size_t taken = std::max<size_t>(length, 1); // as deliver_rndv took it
        Guard pool(self->pool_lock());
        self->rndv_scratch_.put(op->scratch, taken);
        self->scratch_out_ -= taken;
    }
    if (request != nullptr) {
        ucp_request_free(request);
    }
    delete op;
    self->finish_recv(recv, source, tag, length, status == UCS_OK && unpacked ? UM_PROTO_OK : UM_PROTO_ERROR);
}

} // namespace ubermatch::protocol

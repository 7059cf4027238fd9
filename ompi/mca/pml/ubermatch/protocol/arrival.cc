// Arrivals: the active-message callback, per-peer sequence numbers, messages
// held out of sequence or for communicators not created yet, and the engine's
// arrive. Nothing here may throw into UCX.
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ubermatch::protocol {

namespace {

uint64_t early_key(int32_t source, uint32_t seq) {
    return (uint64_t{static_cast<uint32_t>(source)} << 32) | seq;
}

} // namespace

ucs_status_t Protocol::am_message_cb(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length, const ucp_am_recv_param_t *param) {
    if (header_length != sizeof(WireHeader) && header_length != kShortHeader) {
        return UCS_OK; // not ours: drop
    }
    return static_cast<Protocol *>(arg)->on_message(header, header_length, data, length, param);
}

// UCX's callback: nothing may throw through it. Every allocation here is
// nothrow; one that fails costs the message concerned its payload (its
// receive fails), never another message.
ucs_status_t Protocol::on_message(const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param) noexcept {
    Actions actions;
    bool kept;
    bool rndv;
    Message *msg;
    {
        Guard guard(*this);
        {
            Guard pool(pool_lock());
            msg = messages_.get(inject_failure());
        }
        if (UM_UNLIKELY(msg == nullptr)) {
            ++dropped_;
            return UCS_OK;
        }
        std::memcpy(&msg->hdr, header, kShortHeader);
        if (header_length == sizeof(WireHeader)) {
            std::memcpy(reinterpret_cast<char *>(&msg->hdr) + kShortHeader,
                        static_cast<const char *>(header) + kShortHeader,
                        sizeof(WireHeader) - kShortHeader);
        } else {
            msg->hdr.coll = 0;
            msg->hdr.flags = 0;
        }
        msg->length = length;
        msg->data = data;
        msg->reply_ep = nullptr;
        msg->stored = false;
        msg->lost = false;
        msg->pull = false;
        msg->rndv = rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
        if ((msg->hdr.flags & kFlagSync) && (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
            msg->reply_ep = param->reply_ep;
        }
        kept = route(msg, actions, true);
    }
    // Deliveries of this very message read UCX's data: it is valid until we return.
    // A kept message may be another thread's from here on: msg is not read again.
    run(actions);
    return (kept && rndv) ? UCS_INPROGRESS : UCS_OK;
}

bool Protocol::route(Message *msg, Actions &actions, bool ucx_owns) {
    Comm *comm = find_comm(msg->hdr.cid);
    return UM_LIKELY(comm != nullptr) ? accept(*comm, msg, actions, ucx_owns) : hold_unknown(msg);
}

// A record of a shared-memory ring: as an eager UCX arrival, with the
// payload valid until this returns. Unlike UCX's data, a record can wait:
// with no descriptor to hold it, it stays in the ring (false) and the sender
// is held back by the ring's space instead of the message being dropped. It
// leaves the reserve to UCX's arrivals, which cannot wait. A pull record's
// descriptor is kept in the message at once: the message's bytes stay in the
// sender until a receive takes them (deliver_pull).
bool Protocol::ring_arrival(const shm::RecordHeader &r, const void *payload, shm::Receiver *ring) noexcept {
    Actions actions;
    {
        Guard guard(*this);
        const bool fail = inject_failure();
        Message *msg = thread_multiple_ && in_gate() ? gate_cache_.take() : nullptr;
        if (msg == nullptr) {
            Guard pool(pool_lock());
            msg = messages_.get_unreserved(fail);
        }
        if (UM_UNLIKELY(msg == nullptr)) {
            return false;
        }
        msg->hdr = WireHeader{r.cid, r.source, r.tag, r.seq, r.coll, r.flags, 0, 0};
        msg->length = r.length;
        msg->data = const_cast<void *>(payload); // copied by store() if kept
        msg->reply_ep = nullptr;
        msg->stored = false;
        msg->lost = false;
        msg->rndv = false;
        msg->pull = false;
        if (UM_UNLIKELY(r.flags & kFlagPull) && ring != nullptr && r.length == sizeof(shm::PullDescriptor)) {
            shm::PullDescriptor d;
            std::memcpy(&d, payload, sizeof d);
            const PullRef ref{d.address, d.sender, ring};
            static_assert(sizeof ref <= sizeof msg->inline_data, "a PullRef fits the message");
            std::memcpy(msg->inline_data, &ref, sizeof ref);
            msg->data = msg->inline_data;
            msg->length = d.length;
            msg->stored = true;
            msg->pull = true;
            ++shm_counts_.pulls_read;
        }
        route(msg, actions, false);
    }
    run(actions);
    return true;
}

bool Protocol::hold_unknown(Message *msg) noexcept {
    store(msg);
    try {
        unknown_comm_[msg->hdr.cid].push_back(msg);
    } catch (const std::bad_alloc &) {
        drop(msg, true); // no memory even to remember it: counted, reported at the end
        return false;
    }
    ++held_;
    return true;
}

bool Protocol::accept(Comm &comm, Message *msg, Actions &actions, bool ucx_owns) {
    const int32_t src = msg->hdr.source;
    if (UM_UNLIKELY(src < 0 || src >= comm.remote_size)) {
        return false; // not a member: a corrupt or stray message
    }
    uint32_t &expected = comm.recv_seq[static_cast<size_t>(src)];
    if (UM_UNLIKELY(msg->hdr.seq != expected)) {
        return accept_out_of_turn(comm, msg, actions, ucx_owns);
    }
    const bool kept = arrive(comm, msg, actions, ucx_owns);
    ++expected;
    if (UM_UNLIKELY(!comm.early.empty())) {
        release_early(comm, src, actions);
    }
    return kept;
}

bool Protocol::accept_out_of_turn(Comm &comm, Message *msg, Actions &actions, bool ucx_owns) {
    const int32_t src = msg->hdr.source;
    if ((comm.relaxed & UM_PROTO_ASSERT_ALLOW_OVERTAKING) && msg->hdr.tag >= 0) {
        // The user allowed overtaking and its traffic has an engine that keeps no
        // order: matched now. A marker keeps its number for the count that Open
        // MPI's own (ordered) traffic of this peer still follows.
        try {
            comm.early.emplace(early_key(src, msg->hdr.seq), nullptr);
        } catch (const std::bad_alloc &) {
            drop(msg, ucx_owns);
            return false;
        }
        return arrive(comm, msg, actions, ucx_owns);
    }
    store(msg);
    try {
        comm.early.emplace(early_key(src, msg->hdr.seq), msg);
    } catch (const std::bad_alloc &) {
        drop(msg, ucx_owns);
        return false;
    }
    ++held_;
    return true;
}

void Protocol::accept_held(Comm &comm, Message *msg, Actions &actions) { accept(comm, msg, actions, false); }

// The arrivals from src that waited for the one just accepted.
void Protocol::release_early(Comm &comm, int32_t src, Actions &actions) {
    uint32_t &expected = comm.recv_seq[static_cast<size_t>(src)];
    while (!comm.early.empty()) {
        auto it = comm.early.find(early_key(src, expected));
        if (it == comm.early.end()) {
            break;
        }
        Message *next = it->second;
        comm.early.erase(it);
        if (next != nullptr) { // else matched already, out of turn
            --held_;
            arrive(comm, next, actions, false);
        }
        ++expected;
    }
}

bool Protocol::arrive(Comm &comm, Message *msg, Actions &actions, bool ucx_owns) {
    if (UM_UNLIKELY(comm.arrival_hook != nullptr) && !(msg->hdr.flags & kFlagSync) &&
        comm.arrival_hook(comm.arrival_arg, msg->hdr.source, msg->hdr.tag,
                          msg->rndv || msg->pull || msg->lost ? nullptr : msg->data, msg->length)) {
        free_message(msg); // taken: its data was copied (never a rendezvous one)
        return false;
    }
    const um_hint_t hint = message_hint(comm, *msg);
    um_match_t match{};
    try {
        if (comm.tailq) {
            // A receiving thread may take the message as soon as it is queued:
            // its data must be ours by then, and msg is not touched after.
            comm.tailq->arrive(msg->hdr.source, msg->hdr.tag, hint, msg, &match,
                               [](void *m, void *self) {
                                   static_cast<Protocol *>(self)->store(static_cast<Message *>(m));
                               },
                               this);
        } else {
            Engine &engine = comm.engine_for(msg->hdr.tag);
            // Refused: no receive awaits it under ubermatch_no_unexpected; queued all the same.
            if (UM_UNLIKELY(engine.arrive(msg->hdr.source, msg->hdr.tag, hint, msg, &match) ==
                            UM_ERR_ASSERTION) &&
                !keep_unexpected(comm, msg, hint, &match)) {
                drop(msg, ucx_owns);
                return false;
            }
        }
    } catch (const std::bad_alloc &) {
        drop(msg, ucx_owns); // the engine has no memory to queue it
        return false;
    }
    if (match.handle != nullptr) {
        actions.add(static_cast<um_proto_recv_t *>(match.handle), msg);
        return false;
    }
    if (!comm.tailq) {
        store(msg);
    }
    return true;
}

void Protocol::store(Message *msg) noexcept {
    if (msg->rndv || msg->stored) {
        return; // a rendezvous descriptor stays with UCX until received
    }
    msg->stored = true;
    void *copy = msg->inline_data;
    if (msg->length > sizeof msg->inline_data) {
        if (!inject_failure()) {
            Guard pool(pool_lock());
            copy = payloads_.get(msg->length);
        } else {
            copy = nullptr;
        }
        if (copy == nullptr) {
            msg->lost = true;
            msg->data = nullptr;
            ++lost_;
            return;
        }
    }
    copy_payload(copy, msg->data, msg->length);
    msg->data = copy;
}

void Protocol::drop(Message *msg, bool ucx_owns) {
    ++dropped_;
    if (!(msg->rndv && ucx_owns)) {
        release_data(msg);
    }
    Guard pool(pool_lock());
    messages_.put(msg);
}

void Protocol::release_data(Message *msg) {
    if (msg->rndv) {
        ucp_am_data_release(worker_, msg->data);
    } else if (msg->pull) {
        // Never received (its communicator went, or no memory to hold it): the
        // sender's buffer is free all the same.
        PullRef::hand_back(*msg, true);
    } else if (msg->on_heap()) {
        Guard pool(pool_lock());
        payloads_.put(msg->data, msg->length);
    }
}

} // namespace ubermatch::protocol

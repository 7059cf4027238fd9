// An arrived message's descriptor and the pools it comes from.
#ifndef UBERMATCH_PROTOCOL_MESSAGE_H
#define UBERMATCH_PROTOCOL_MESSAGE_H

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "ompi/mca/pml/ubermatch/protocol/shm.h"
#include "ompi/mca/pml/ubermatch/protocol/wire.h"

namespace ubermatch::protocol {

// An arrived message the core keeps: unexpected, out of sequence, for a
// communicator not created yet, or mprobe'd.
struct Message {
    WireHeader hdr;
    size_t length;
    void *data;         // see `stored`
    ucp_ep_h reply_ep;  // to acknowledge a synchronous send
    bool rndv;          // data is a UCX rendezvous descriptor
    bool pull;          // data is a PullRef: the message is read from the sender (shm.h)
    bool stored;        // eager data was copied (else it is UCX's, valid in the callback only)
    bool lost;          // no memory to keep the payload: the receive that takes it fails
                        // (UM_PROTO_NOMEM) and nothing else is affected
    // Where small unexpected payloads are copied: no allocation per message
    // (larger ones go to the heap).
    alignas(16) unsigned char inline_data[64];
    bool on_heap() const { return stored && data != nullptr && data != inline_data; }
};

// Where a pulled message is (Message::inline_data): in the sender at
// `address`, read through the ring it came by, which gets `sender` back.
struct PullRef {
    uint64_t address;
    uint64_t sender;
    shm::Receiver *ring;

    static PullRef of(const Message &msg) {
        PullRef ref;
        std::memcpy(&ref, msg.data, sizeof ref);
        return ref;
    }
    // The sender may reuse its buffer (ok: the read did not fail); msg holds
    // no pull any more.
    static void hand_back(Message &msg, bool ok) {
        const PullRef ref = of(msg);
        ref.ring->give_back(ref.sender, ok);
        msg.pull = false;
    }
};

// Messages are reused: an arrival that matches at once then costs no
// allocation. At most kKeep free ones are kept, so that a burst of unexpected
// messages does not hold its memory for the rest of the run. kReserve of them
// are set aside at start: an arrival that finds no memory for its descriptor
// takes one of those, so that a failed allocation never drops a message
// (UCX's data is gone when the callback returns).
class MessagePool {
public:
    MessagePool() {
        reserve_.reserve(kReserve);
        for (size_t i = 0; i < kReserve; ++i) {
            reserve_.push_back(new Message);
        }
        free_.reserve(kKeep);
    }
    MessagePool(const MessagePool &) = delete;
    MessagePool &operator=(const MessagePool &) = delete;
    ~MessagePool() {
        for (Message *m : free_) {
            delete m;
        }
        for (Message *m : reserve_) {
            delete m;
        }
    }
    // Without the reserve: for an arrival that can wait (a ring's record).
    Message *get_unreserved(bool fail) noexcept {
        if (!free_.empty()) {
            Message *m = free_.back();
            free_.pop_back();
            return m;
        }
        return fail ? nullptr : new (std::nothrow) Message;
    }
    // nullptr only when the heap and the reserve are both exhausted.
    Message *get(bool fail) noexcept {
        Message *m = get_unreserved(fail);
        if (m == nullptr && !reserve_.empty()) {
            m = reserve_.back();
            reserve_.pop_back();
            ++reserve_used_;
            dipped_.store(true, std::memory_order_relaxed);
        }
        return m;
    }
    void put(Message *m) noexcept {
        if (reserve_.size() < kReserve) {
            reserve_.push_back(m); // never reallocates: capacity kept from the start
        } else if (free_.size() < kKeep) {
            free_.push_back(m); // capacity reserved at start
        } else {
            delete m;
        }
    }
    uint64_t reserve_used() const { return reserve_used_; }
    bool short_of_reserve() const { return reserve_.size() < kReserve; }
    // Whether the reserve may need topping up: progress asks at every round
    // (with threads without the pool's lock) and takes the locks only then.
    bool dipped() const { return dipped_.load(std::memory_order_relaxed); }
    void topped_up() { dipped_.store(short_of_reserve(), std::memory_order_relaxed); }
    // One descriptor back into the reserve (outside UCX's callbacks, where
    // a burst of arrivals may have emptied it); false when none could be had.
    bool add_reserve(bool fail) noexcept {
        Message *m = get_unreserved(fail);
        if (m != nullptr) {
            reserve_.push_back(m);
        }
        return m != nullptr;
    }

private:
    static constexpr size_t kKeep = 1024;
    static constexpr size_t kReserve = 64;
    std::vector<Message *> free_;
    std::vector<Message *> reserve_;
    uint64_t reserve_used_ = 0;
    std::atomic<bool> dipped_{false}; // set when get() took from the reserve
};

// With threads, the thread inside the progress gate keeps a few descriptors
// of its own: a ring's record matched inside the gate takes one and gives it
// back without the pool's lock (two locked instructions a message; a thread
// outside the gate never touches them; docs/message-path.md round 18).
class GateCache {
public:
    GateCache() = default;
    GateCache(const GateCache &) = delete;
    GateCache &operator=(const GateCache &) = delete;
    ~GateCache() {
        while (Message *m = take()) {
            delete m;
        }
    }
    Message *take() { return n_ > 0 ? m_[--n_] : nullptr; }
    bool keep(Message *m) {
        if (n_ == kKeep) {
            return false;
        }
        m_[n_++] = m;
        return true;
    }

private:
    static constexpr unsigned kKeep = 16;
    Message *m_[kKeep];
    unsigned n_ = 0;
};

} // namespace ubermatch::protocol

#endif

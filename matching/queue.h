// Queue elements, intrusive queues and the element pool shared by the list-based backends.
#ifndef UBERMATCH_MATCHING_QUEUE_H
#define UBERMATCH_MATCHING_QUEUE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "matching/engine.h"
#include "matching/ubermatch_engine.h"

namespace ubermatch {

struct Entry;

struct Link {
    Entry *next = nullptr;
    Entry *prev = nullptr;
};

// One queued receive or message. `seq` orders elements across queues: the
// posting order of receives, the arrival order of messages.
struct Entry {
    Link q;      // the queue the backend searches first (bin, peer, list)
    Link order;  // a second, engine-wide order where a backend keeps one
    uint64_t seq;
    void *handle;
    int32_t source;
    int32_t tag;
};

// (source, tag) as one 64-bit key, the source in the high half: what the
// hashed backends index by. No real key has source 0xFFFFFFFF (UM_ANY_SOURCE)
// together with tag 0xFFFFFFFF (UM_ANY_TAG), so ~0 is free for "empty".
inline uint64_t pack_key(int32_t source, int32_t tag) {
    return (uint64_t{static_cast<uint32_t>(source)} << 32) | static_cast<uint32_t>(tag);
}

// Does a receive (rsrc, rtag), wildcards allowed, match a message (msrc, mtag)?
inline bool recv_matches(int32_t rsrc, int32_t rtag, int32_t msrc, int32_t mtag) {
    return (rsrc == msrc || rsrc == UM_ANY_SOURCE) &&
           (rtag == mtag || (rtag == UM_ANY_TAG && mtag >= 0));
}

// A doubly linked FIFO threaded through one Link of each Entry, so that an
// element can sit in two queues at once and leave either in O(1).
template <Link Entry::*L>
class Queue {
public:
    bool empty() const { return head_ == nullptr; }
    size_t size() const { return size_; }
    Entry *front() const { return head_; }
    Entry *back() const { return tail_; }
    static Entry *next(const Entry *e) { return (e->*L).next; }

    void push_back(Entry *e) {
        (e->*L).next = nullptr;
        (e->*L).prev = tail_;
        if (tail_ != nullptr) {
            (tail_->*L).next = e;
        } else {
            head_ = e;
        }
        tail_ = e;
        ++size_;
    }

    void remove(Entry *e) {
        Link &l = e->*L;
        if (l.prev != nullptr) {
            (l.prev->*L).next = l.next;
        } else {
            head_ = l.next;
        }
        if (l.next != nullptr) {
            (l.next->*L).prev = l.prev;
        } else {
            tail_ = l.prev;
        }
        --size_;
    }

    // The first element a receive (source, tag) matches; counts the elements compared.
    Entry *find_message(int32_t source, int32_t tag, uint32_t &inspected) const {
        for (Entry *e = head_; e != nullptr; e = (e->*L).next) {
            ++inspected;
            if (recv_matches(source, tag, e->source, e->tag)) {
                return e;
            }
        }
        return nullptr;
    }

    // The first receive that matches a message (source, tag).
    Entry *find_recv(int32_t source, int32_t tag, uint32_t &inspected) const {
        for (Entry *e = head_; e != nullptr; e = (e->*L).next) {
            ++inspected;
            if (recv_matches(e->source, e->tag, source, tag)) {
                return e;
            }
        }
        return nullptr;
    }

    Entry *find_handle(const void *handle) const {
        for (Entry *e = head_; e != nullptr; e = (e->*L).next) {
            if (e->handle == handle) {
                return e;
            }
        }
        return nullptr;
    }

    template <typename F>
    void for_each(F &&f) const {
        for (Entry *e = head_; e != nullptr; e = (e->*L).next) {
            f(*e);
        }
    }

private:
    Entry *head_ = nullptr;
    Entry *tail_ = nullptr;
    size_t size_ = 0;
};

using PeerQueue = Queue<&Entry::q>;
using OrderQueue = Queue<&Entry::order>;

// Reports every element of q to a snapshot visitor.
template <typename Q>
void visit_queue(const Q &q, bool posted, const std::function<void(bool, const QueuedElement &)> &f) {
    q.for_each([&](const Entry &e) { f(posted, QueuedElement{e.seq, e.handle, e.source, e.tag}); });
}

// Elements (Entry or a type derived from it) come from chunks kept on a free
// list: no allocation on the matching path once the queues have reached their
// working depth. A fresh element has its type's default values.
template <class T>
class Pool {
    static_assert(std::is_trivially_copyable_v<T>, "elements are reset by a copy");
    static constexpr T kFresh{};

public:
    T *get(int32_t source, int32_t tag, void *handle, uint64_t seq) {
        if (free_ == nullptr) {
            grow();
        }
        T *e = free_;
        free_ = static_cast<T *>(e->q.next);
        // A copy of a fresh element, not `*e = T{}`: GCC makes that a `rep
        // stos`, whose start-up alone was 60% of an unexpected message's push
        // in `auto` (perf); the copy is a few vector stores.
        std::memcpy(static_cast<void *>(e), &kFresh, sizeof(T));
        e->seq = seq;
        e->handle = handle;
        e->source = source;
        e->tag = tag;
        return e;
    }

    void put(Entry *e) {
        e->q.next = free_;
        free_ = static_cast<T *>(e);
    }

    // Returns e, out of every queue, to the pool; the search's result.
    Found release(Entry *e, uint32_t inspected) {
        void *handle = e->handle;
        put(e);
        return {handle, inspected};
    }

    // Removes e from q and returns it to the pool; the search's result.
    template <typename Q>
    Found take(Q &q, Entry *e, uint32_t inspected) {
        q.remove(e);
        return release(e, inspected);
    }

    // Removes the receive `handle` from q (a cancel); false: not in q.
    template <typename Q>
    bool take_handle(Q &q, const void *handle) {
        Entry *e = q.find_handle(handle);
        if (e == nullptr) {
            return false;
        }
        take(q, e, 0);
        return true;
    }

    size_t bytes() const { return chunks_.size() * sizeof(T) * kChunk; }

private:
    static constexpr size_t kChunk = 256;

    void grow() {
        chunks_.push_back(std::make_unique<T[]>(kChunk));
        T *chunk = chunks_.back().get();
        for (size_t i = 0; i < kChunk; ++i) {
            chunk[i].q.next = (i + 1 < kChunk) ? &chunk[i + 1] : free_;
        }
        free_ = chunk;
    }

    std::vector<std::unique_ptr<T[]>> chunks_;
    T *free_ = nullptr;
};

using EntryPool = Pool<Entry>;

} // namespace ubermatch

#endif

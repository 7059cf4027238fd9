// Queue elements of the seed-000 backends (pnp, col and their compositions):
// an Entry that also remembers the profiling bucket it was queued under, so
// that `col` can tell when the first call of a bucket is over.
#ifndef UBERMATCH_MATCHING_ELEMENT_H
#define UBERMATCH_MATCHING_ELEMENT_H

#include <cstdint>

#include "matching/queue.h"

namespace ubermatch {

constexpr uint32_t kNoBucket = UINT32_MAX;

struct Element : Entry {
    uint32_t bucket = kNoBucket; // col: the bucket being profiled when it was queued
};

inline Element *element(Entry *e) { return static_cast<Element *>(e); }

// The searches' results: the first element found and the queue holding it.
struct Candidate {
    Entry *e = nullptr;
    PeerQueue *q = nullptr;
    // Keeps the earlier of two candidates (sequence numbers order all queues).
    void keep_earlier(Entry *c, PeerQueue *in) {
        if (c != nullptr && (e == nullptr || c->seq < e->seq)) {
            e = c;
            q = in;
        }
    }
    uint64_t bound() const { return e != nullptr ? e->seq : UINT64_MAX; }
};

// The first message in q that a receive (source, tag) matches and that came
// before `bound`: queues are in sequence order, so the scan stops there.
inline Entry *first_message_before(const PeerQueue &q, int32_t source, int32_t tag, uint64_t bound,
                                   uint32_t &inspected) {
    for (Entry *e = q.front(); e != nullptr && e->seq < bound; e = PeerQueue::next(e)) {
        ++inspected;
        if (recv_matches(source, tag, e->source, e->tag)) {
            return e;
        }
    }
    return nullptr;
}

// The first receive in q that a message (source, tag) matches, before `bound`.
inline Entry *first_recv_before(const PeerQueue &q, int32_t source, int32_t tag, uint64_t bound,
                                uint32_t &inspected) {
    for (Entry *e = q.front(); e != nullptr && e->seq < bound; e = PeerQueue::next(e)) {
        ++inspected;
        if (recv_matches(e->source, e->tag, source, tag)) {
            return e;
        }
    }
    return nullptr;
}

using ElementPool = Pool<Element>;

} // namespace ubermatch

#endif

// Queue elements of the seed-000 backends (pnp, col and their compositions):
// an Entry that also remembers the profiling bucket it was queued under, so
// that `col` can tell when the first call of a bucket is over.
#ifndef UBERMATCH_MATCHING_ELEMENT_H
#define UBERMATCH_MATCHING_ELEMENT_H

#include <cstdint>
#include <memory>
#include <vector>

#include "matching/queue.h"

namespace ubermatch {

constexpr uint32_t kNoBucket = UINT32_MAX;

struct Element : Entry {
    uint32_t bucket; // col: the bucket being profiled when it was queued, else kNoBucket
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

// Elements come from chunks kept on a free list, as in EntryPool.
class ElementPool {
public:
    Element *get(int32_t source, int32_t tag, void *handle, uint64_t seq) {
        if (free_ == nullptr) {
            grow();
        }
        Element *e = free_;
        free_ = static_cast<Element *>(e->q.next);
        e->seq = seq;
        e->handle = handle;
        e->source = source;
        e->tag = tag;
        e->bucket = kNoBucket;
        return e;
    }

    void put(Entry *e) {
        e->q.next = free_;
        free_ = element(e);
    }

    size_t bytes() const { return chunks_.size() * sizeof(Element) * kChunk; }

private:
    static constexpr size_t kChunk = 256;

    void grow() {
        chunks_.push_back(std::make_unique<Element[]>(kChunk));
        Element *chunk = chunks_.back().get();
        for (size_t i = 0; i < kChunk; ++i) {
            chunk[i].q.next = (i + 1 < kChunk) ? &chunk[i + 1] : free_;
        }
        free_ = chunk;
    }

    std::vector<std::unique_ptr<Element[]>> chunks_;
    Element *free_ = nullptr;
};

} // namespace ubermatch

#endif

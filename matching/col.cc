#include "matching/col.h"

#include <algorithm>

namespace ubermatch {

Candidate ColSide::find_handle(uint16_t slot, int32_t source, const void *handle) {
    if (Entry *e = pq_.find_handle(handle)) {
        return {e, &pq_};
    }
    for (const Level &l : levels_[slot]) {
        PeerQueue &q = queues_[l.first + static_cast<uint32_t>(source) % l.count];
        if (Entry *e = q.find_handle(handle)) {
            return {e, &q};
        }
    }
    return {};
}

void ColSide::add_level(uint16_t slot, uint32_t queues) {
    levels_[slot].push_back(Level{static_cast<uint32_t>(queues_.size()), queues});
    queues_.resize(queues_.size() + queues);
}

std::vector<uint32_t> ColSide::level_queues(uint16_t slot) const {
    std::vector<uint32_t> counts;
    for (const Level &l : levels_[slot]) {
        counts.push_back(l.count);
    }
    return counts;
}

void ColSide::visit(bool posted, const std::function<void(bool, const QueuedElement &)> &f) const {
    visit_queue(pq_, posted, f);
    for (const PeerQueue &q : queues_) {
        visit_queue(q, posted, f);
    }
}

uint64_t ColSide::heap_bytes() const {
    uint64_t bytes = queues_.capacity() * sizeof(PeerQueue);
    for (const std::vector<Level> &levels : levels_) {
        bytes += levels.capacity() * sizeof(Level);
    }
    return bytes;
}

ColPart::ColPart(int32_t comm_size, int64_t k)
    : comm_size_(static_cast<uint32_t>(comm_size)),
      profile_window_(std::max<uint64_t>(16, 4 * static_cast<uint64_t>(comm_size))),
      budget_{queue_cap(k, comm_size), 0} {
    call_bucket_.fill(kNoBucket);
}

bool ColPart::cancel(int32_t source, int32_t tag, void *request, ElementPool &pool) {
    const TagSlot *ts = tags_.find(tag_key(tag));
    if (ts == nullptr) {
        return false;
    }
    const Candidate h = source == UM_ANY_SOURCE ? Candidate{posted_any_.find_handle(request), &posted_any_}
                                          : posted_.find_handle(ts->slot, source, request);
    if (h.e == nullptr) {
        return false;
    }
    h.q->remove(h.e);
    release(h.e, pool);
    return true;
}

// Algorithm 1, lines 7-15, once per bucket at its second call: the average
// traversal of the first call is the number of queues that brings a search
// down to about one element. A side whose searches the first call never made
// has nothing to size. Where the budget cannot give that many, the level gets
// what is left (the paper reports collectives "generating as many queues as
// they can" up to the cap).
void ColPart::decide(Bucket &b) {
    const OverheadScope overhead(timers_);
    b.phase = kDecided;
    const auto slot = static_cast<uint16_t>(b.key >> 16);
    ColSide *const sides[2] = {&posted_, &unexpected_};
    for (int s = 0; s < 2; ++s) {
        if (b.searches[s] == 0) {
            continue;
        }
        uint64_t nq = (b.inspected[s] + b.searches[s] - 1) / b.searches[s];
        nq = std::min(nq, budget_.left());
        if (nq > sides[s]->last_level_queues(slot)) {
            sides[s]->add_level(slot, static_cast<uint32_t>(nq));
            budget_.used += nq;
        }
    }
}

// An explicit call: its elements, whatever their own sizes, belong to the
// call's bucket, and the bucket's first call ends with it.
void ColPart::collective_begin(const um_hint_t &hint) {
    const uint16_t slot = slot_of(hint);
    const uint32_t b = bucket_index(bucket_key(slot, hint));
    Bucket &bucket = buckets_[b];
    if (bucket.phase == kProfiled) {
        decide(bucket);
    }
    if (bucket.phase == kProfiling) {
        bucket.explicit_calls = true;
    }
    ++bucket.open;
    ++open_calls_[slot];
    call_bucket_[slot] = b;
}

void ColPart::collective_end(const um_hint_t &hint) {
    const uint16_t slot = slot_of(hint);
    const uint32_t *b = index_.find(bucket_key(slot, hint));
    if (b == nullptr || buckets_[*b].open == 0) {
        return; // no such call begun
    }
    Bucket &bucket = buckets_[*b];
    if (--bucket.open == 0 && bucket.phase == kProfiling) {
        bucket.phase = kProfiled;
    }
    if (--open_calls_[slot] == 0) {
        call_bucket_[slot] = kNoBucket;
    }
}

ColPart::Phase ColPart::phase(const um_hint_t &hint) const {
    const uint32_t *b = index_.find(bucket_key(slot_of(hint), hint));
    return b != nullptr ? buckets_[*b].phase : kProfiling;
}

void ColPart::visit(const std::function<void(bool, const QueuedElement &)> &f) const {
    posted_.visit(true, f);
    visit_queue(posted_any_, true, f);
    unexpected_.visit(false, f);
}

uint64_t ColPart::heap_bytes() const {
    return posted_.heap_bytes() + unexpected_.heap_bytes() + buckets_.capacity() * sizeof(Bucket) +
           index_.bytes() + tags_.bytes();
}

} // namespace ubermatch

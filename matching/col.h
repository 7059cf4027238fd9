// `col`: queues for collective traffic after Ghazimirsaeed et al. (ParCo
// 2019, section 4.1, Algorithms 1 and 2). Each side (posted receives,
// unexpected messages) has one profiling queue pq shared by all collectives,
// and per collective c a list of levels, each a set of queues that elements
// enter hashed by rank (rank mod queues of the level). The first call of each
// bucket p = (collective, message-size range, communicator-size range) keeps
// its elements in pq and measures the average number of elements its searches
// traverse; at the bucket's next call that average is the number of queues
// the collective needs, and a new level with that many queues is opened when
// it is more than the last level has and the dedicated queues stay within
// floor(k_C * sqrt(n)) per communicator. Elements go to the collective's last
// level; a search covers pq, then the levels in order.
//
// Where the paper is silent or would break MPI order (README, "Seed 000
// backends"): a bucket's first call lasts until none of its elements is
// queued any more or it has made 4 searches per rank, unless the caller marks
// calls with collective_begin/end; a search keeps the earliest candidate of pq
// and the levels by sequence number (pq can hold elements newer than those of
// a level); ANY_SOURCE receives wait in a queue of their own; and all elements
// with one tag are kept under one collective (the one named by the first of
// them still queued), so that hints that disagree cannot hide a match.
#ifndef UBERMATCH_MATCHING_COL_H
#define UBERMATCH_MATCHING_COL_H

#include <array>
#include <cstdint>
#include <vector>

#include "matching/element.h"
#include "matching/pnp.h"
#include "matching/smallmap.h"

namespace ubermatch {

class ColSide {
public:
    // The earliest matching element under collective `slot`: kRecvs, the side
    // holds receives and (source, tag) is a message; else it holds messages.
    // pq first; then the levels, which hold elements in level order, so the
    // first level with a match earlier than pq's candidate ends the search.
    template <bool kRecvs>
    Candidate find(uint16_t slot, int32_t source, int32_t tag, uint32_t &inspected) {
        Candidate h;
        h.keep_earlier(first_before<kRecvs>(pq_, source, tag, UINT64_MAX, inspected), &pq_);
        for (const Level &l : levels_[slot]) {
            if (kRecvs || source != UM_ANY_SOURCE) {
                PeerQueue &q = queues_[l.first + static_cast<uint32_t>(source) % l.count];
                if (Entry *e = first_before<kRecvs>(q, source, tag, h.bound(), inspected)) {
                    return {e, &q};
                }
                continue;
            }
            // An ANY_SOURCE receive: every queue of the level.
            bool hit = false;
            for (uint32_t i = 0; i < l.count; ++i) {
                PeerQueue &q = queues_[l.first + i];
                if (Entry *e = first_before<kRecvs>(q, source, tag, h.bound(), inspected)) {
                    h = {e, &q};
                    hit = true;
                }
            }
            if (hit) {
                return h;
            }
        }
        return h;
    }

    // Into pq while the element's bucket is being profiled or the collective
    // has no level yet, else into its last level.
    void push(Entry *e, uint16_t slot, bool profiling) {
        const std::vector<Level> &levels = levels_[slot];
        if (profiling || levels.empty()) {
            pq_.push_back(e);
            return;
        }
        const Level &l = levels.back();
        queues_[l.first + static_cast<uint32_t>(e->source) % l.count].push_back(e);
    }

    Candidate find_handle(uint16_t slot, int32_t source, const void *handle);
    void add_level(uint16_t slot, uint32_t queues);
    // nq_c: the queues of the collective's last level, 0 without one.
    uint32_t last_level_queues(uint16_t slot) const {
        return levels_[slot].empty() ? 0 : levels_[slot].back().count;
    }
    // The queue count of each level of a collective, in order.
    std::vector<uint32_t> level_queues(uint16_t slot) const;
    size_t profiling_queue_length() const { return pq_.size(); }

    void visit(bool posted, const std::function<void(bool, const QueuedElement &)> &f) const;
    uint64_t queues() const { return 1 + queues_.size(); }
    uint64_t heap_bytes() const;

private:
    struct Level {
        uint32_t first; // its queues are queues_[first .. first + count)
        uint32_t count;
    };

    template <bool kRecvs>
    static Entry *first_before(const PeerQueue &q, int32_t source, int32_t tag, uint64_t bound,
                               uint32_t &inspected) {
        return kRecvs ? first_recv_before(q, source, tag, bound, inspected)
                      : first_message_before(q, source, tag, bound, inspected);
    }

    PeerQueue pq_;
    std::array<std::vector<Level>, UM_COLL_COUNT> levels_;
    std::vector<PeerQueue> queues_;
};

class ColPart {
public:
    enum Phase : uint8_t { kProfiling, kProfiled, kDecided };

    ColPart(int32_t comm_size, int64_t k);
    ColPart(const ColPart &) = delete;
    ColPart &operator=(const ColPart &) = delete;

    // The message a receive with a collective tag takes (removed when `remove`).
    Found take_message(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                       ElementPool &pool) {
        const TagSlot *ts = tags_.find(tag_key(tag));
        const uint16_t slot = ts != nullptr ? ts->slot : slot_of(hint);
        const uint32_t b = touch(slot, hint);
        uint32_t inspected = 0;
        Candidate h;
        if (ts != nullptr) { // else nothing with this tag is queued
            h = unexpected_.find<false>(slot, source, tag, inspected);
        }
        profile(b, kUnexpectedSide, inspected);
        if (h.e == nullptr) {
            return {nullptr, inspected};
        }
        void *handle = h.e->handle;
        if (remove) {
            h.q->remove(h.e);
            release(h.e, pool);
        }
        return {handle, inspected};
    }

    // The receive a message with a collective tag takes (removed).
    Found take_recv(int32_t source, int32_t tag, const um_hint_t &hint, ElementPool &pool) {
        const TagSlot *ts = tags_.find(tag_key(tag));
        const uint16_t slot = ts != nullptr ? ts->slot : slot_of(hint);
        const uint32_t b = touch(slot, hint);
        uint32_t inspected = 0;
        Candidate h;
        if (ts != nullptr) {
            h = posted_.find<true>(slot, source, tag, inspected);
            if (!posted_any_.empty()) {
                h.keep_earlier(first_recv_before(posted_any_, source, tag, h.bound(), inspected),
                               &posted_any_);
            }
        }
        profile(b, kPostedSide, inspected);
        if (h.e == nullptr) {
            return {nullptr, inspected};
        }
        void *handle = h.e->handle;
        h.q->remove(h.e);
        release(h.e, pool);
        return {handle, inspected};
    }

    // queue_* follow the take_* of the same operation (its bucket is current).
    void queue_recv(Element *e, const um_hint_t &hint) {
        const uint16_t slot = bind(e, hint);
        if (e->source == UM_ANY_SOURCE) {
            posted_any_.push_back(e);
        } else {
            posted_.push(e, slot, e->bucket != kNoBucket);
        }
    }
    void queue_message(Element *e, const um_hint_t &hint) {
        const uint16_t slot = bind(e, hint);
        unexpected_.push(e, slot, e->bucket != kNoBucket);
    }

    // End of an operation: maybe the end of its bucket's first call.
    void done() {
        if (cur_ != kNoBucket) {
            maybe_end(buckets_[cur_]);
            cur_ = kNoBucket;
        }
    }

    bool cancel(int32_t source, int32_t tag, void *request, ElementPool &pool);
    void collective_begin(const um_hint_t &hint);
    void collective_end(const um_hint_t &hint);

    void visit(const std::function<void(bool, const QueuedElement &)> &f) const;
    uint64_t queues() const { return posted_.queues() + unexpected_.queues() + 1; }
    uint64_t heap_bytes() const;

    // For tests and statistics.
    const ColSide &posted() const { return posted_; }
    const ColSide &unexpected() const { return unexpected_; }
    const QueueBudget &budget() const { return budget_; }
    // The engine's timers: level creation counts as overhead.
    void attach_timers(Timers *t) { timers_ = t; }
    // The phase of the bucket a hint falls in; kProfiling also when never seen.
    Phase phase(const um_hint_t &hint) const;
    size_t buckets() const { return buckets_.size(); }

private:
    enum Side { kPostedSide = 0, kUnexpectedSide = 1 };

    struct Bucket {
        uint32_t key;
        Phase phase = kProfiling;
        bool explicit_calls = false; // its first call ends at collective_end
        uint32_t open = 0;           // its calls begun and not yet ended
        uint64_t live = 0;           // its elements queued while profiling
        uint64_t searches[2] = {0, 0};
        uint64_t inspected[2] = {0, 0};
    };

    struct TagSlot {
        uint16_t slot;  // the collective whose queues hold this tag's elements
        uint32_t live;  // elements with this tag queued, both sides
    };

    static uint32_t tag_key(int32_t tag) { return static_cast<uint32_t>(tag); }
    static uint16_t slot_of(const um_hint_t &hint) {
        return hint.coll > UM_COLL_NONE && hint.coll < UM_COLL_COUNT ? hint.coll
                                                                       : uint16_t{UM_COLL_OTHER};
    }
    static uint32_t bits(uint32_t x) { return x == 0 ? 0 : 32 - static_cast<uint32_t>(__builtin_clz(x)); }
    uint32_t bucket_key(uint16_t slot, const um_hint_t &hint) const {
        const uint32_t n = hint.comm_size != 0 ? hint.comm_size : comm_size_;
        return uint32_t{slot} << 16 | bits(hint.msg_size) << 8 | bits(n);
    }

    // The bucket of an operation: the open explicit call of its collective,
    // else its own (collective, size range, communicator-size range). Starts
    // profiling a new bucket, or opens a level at the second call (Algorithm 1).
    uint32_t touch(uint16_t slot, const um_hint_t &hint) {
        const uint32_t call = call_bucket_[slot];
        cur_ = call != kNoBucket ? call : bucket_index(bucket_key(slot, hint));
        if (buckets_[cur_].phase == kProfiled) {
            decide(buckets_[cur_]);
        }
        return cur_;
    }

    uint32_t bucket_index(uint32_t key) {
        if (key == last_key_) {
            return last_index_;
        }
        uint32_t &index = index_.get(key, kNoBucket);
        if (index == kNoBucket) {
            index = static_cast<uint32_t>(buckets_.size());
            buckets_.push_back(Bucket{key});
        }
        last_key_ = key;
        last_index_ = index;
        return index;
    }

    void profile(uint32_t b, Side side, uint32_t inspected) {
        Bucket &bucket = buckets_[b];
        if (bucket.phase == kProfiling) {
            ++bucket.searches[side];
            bucket.inspected[side] += inspected;
        }
    }

    // Records the element's tag and, while its bucket is profiled, the bucket.
    uint16_t bind(Element *e, const um_hint_t &hint) {
        TagSlot &ts = tags_.get(tag_key(e->tag), TagSlot{slot_of(hint), 0});
        ++ts.live;
        Bucket &b = buckets_[cur_];
        if (b.phase == kProfiling) {
            e->bucket = cur_;
            ++b.live;
        }
        return ts.slot;
    }

    void release(Entry *e, ElementPool &pool) {
        const uint32_t key = tag_key(e->tag);
        TagSlot *ts = tags_.find(key);
        if (--ts->live == 0) {
            tags_.erase(key);
        }
        const uint32_t b = element(e)->bucket;
        if (b != kNoBucket) {
            --buckets_[b].live;
            if (b != cur_) {
                maybe_end(buckets_[b]);
            }
        }
        pool.put(e);
    }

    // Without explicit calls, a first call is over when none of its elements
    // is queued any more, or after 4 searches per rank (more than one call of
    // most algorithms makes; calls that overlap the next keep elements queued).
    void maybe_end(Bucket &b) const {
        if (b.phase == kProfiling && !b.explicit_calls &&
            (b.live == 0 || b.searches[0] + b.searches[1] >= profile_window_)) {
            b.phase = kProfiled;
        }
    }

    void decide(Bucket &b);

    const uint32_t comm_size_;
    const uint64_t profile_window_; // searches after which an implicit first call ends
    QueueBudget budget_;
    ColSide posted_;
    ColSide unexpected_;
    PeerQueue posted_any_; // ANY_SOURCE receives with a collective tag
    std::vector<Bucket> buckets_;
    SmallMap<uint32_t> index_; // bucket key -> index in buckets_
    SmallMap<TagSlot> tags_;   // collective tag -> its collective, while queued
    std::array<uint32_t, UM_COLL_COUNT> call_bucket_;  // open explicit call per collective
    std::array<uint32_t, UM_COLL_COUNT> open_calls_{}; // explicit calls in progress per collective
    uint32_t cur_ = kNoBucket; // the bucket of the operation in progress
    uint32_t last_key_ = UINT32_MAX;
    uint32_t last_index_ = kNoBucket;
    Timers *timers_ = nullptr;
};

} // namespace ubermatch

#endif

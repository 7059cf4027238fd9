// `pnp`: the partner/non-partner queues of Ghazimirsaeed et al. (ParCo 2019,
// section 4.2). One side (posted receives or unexpected messages) starts with
// a single initial queue. When the queue that non-partners are appended to
// reaches theta elements, the sources holding more than the average number of
// its elements (over the sources present in it) become partners of a new
// level: each gets a dedicated queue, and the other sources share the level's
// new non-partner queue. Elements never move, so a source's elements lie along
// its search path in sequence order: the initial queue, the non-partner
// queues that existed before it became a partner (all of them for a
// non-partner), then its own queue. A hash table maps a partner to its queue
// and level. Dedicated queues (partner and later non-partner queues) come out
// of a budget of floor(k_P * sqrt(n)) shared by both sides.
#ifndef UBERMATCH_MATCHING_PNP_H
#define UBERMATCH_MATCHING_PNP_H

#include <cstdint>
#include <vector>

#include "matching/element.h"
#include "matching/engine.h"
#include "matching/smallmap.h"

namespace ubermatch {

// floor(k * sqrt(n)): the dedicated queues one approach may allocate per communicator.
uint64_t queue_cap(int64_t k, int32_t comm_size);

struct QueueBudget {
    uint64_t cap = 0;
    uint64_t used = 0;
    uint64_t left() const { return cap - used; }
};

class PnpSide {
public:
    PnpSide(QueueBudget &budget, uint32_t theta) : budget_(&budget), theta_(theta) {}

    // The earliest element from `source` (exact) that matches: kRecvs, the
    // side holds receives and (source, tag) is a message; else the side holds
    // messages and (source, tag) a receive.
    template <bool kRecvs>
    Candidate find(int32_t source, int32_t tag, uint32_t &inspected) {
        const Partner *p = partners_.empty() ? nullptr : partners_.find(key(source));
        const size_t upto = p != nullptr ? p->upto : np_.size();
        if (Entry *e = scan<kRecvs>(initial_, source, tag, inspected)) {
            return {e, &initial_};
        }
        for (size_t l = 0; l < upto; ++l) {
            PeerQueue &q = queues_[np_[l]];
            if (Entry *e = scan<kRecvs>(q, source, tag, inspected)) {
                return {e, &q};
            }
        }
        if (p != nullptr) {
            PeerQueue &q = queues_[p->queue];
            return {scan<kRecvs>(q, source, tag, inspected), &q};
        }
        return {};
    }

    // The earliest message an ANY_SOURCE receive matches: every queue, by sequence number.
    Candidate find_any_source(int32_t tag, uint32_t &inspected);

    // Appends an element from an exact source; may open a level.
    void push(Entry *e) {
        if (!partners_.empty()) {
            if (const Partner *p = partners_.find(key(e->source))) {
                queues_[p->queue].push_back(e);
                return;
            }
        }
        PeerQueue &q = np_.empty() ? initial_ : queues_[np_.back()];
        q.push_back(e);
        // At theta; after a check that found no partner, again once the queue
        // has taken theta more (a quarter of its length when that is more: a
        // check costs a pass over the queue).
        if (++since_check_ >= theta_ && q.size() >= theta_ && !exhausted_ &&
            since_check_ >= q.size() / 4) {
            extract_partners();
        }
    }

    Candidate find_handle(int32_t source, const void *handle);
    void visit(bool posted, const std::function<void(bool, const QueuedElement &)> &f) const;
    uint64_t queues() const { return 1 + queues_.size(); }
    uint64_t heap_bytes() const;

    // For tests and statistics.
    size_t levels() const { return np_.size(); }
    size_t partners() const { return partners_.size(); }
    bool is_partner(int32_t source) const { return partners_.find(key(source)) != nullptr; }
    // The engine's timers: partner extraction counts as overhead.
    void attach_timers(Timers *t) { timers_ = t; }

private:
    struct Partner {
        uint32_t queue; // index in queues_
        uint32_t upto;  // non-partner queues that existed when it became a partner
    };

    static uint32_t key(int32_t source) { return static_cast<uint32_t>(source); }

    template <bool kRecvs>
    static Entry *scan(const PeerQueue &q, int32_t source, int32_t tag, uint32_t &inspected) {
        return kRecvs ? q.find_recv(source, tag, inspected) : q.find_message(source, tag, inspected);
    }

    void extract_partners();

    QueueBudget *budget_;
    const uint32_t theta_;
    PeerQueue initial_;
    std::vector<PeerQueue> queues_; // dedicated: partner queues and non-partner queues
    std::vector<uint32_t> np_;      // the non-partner queue of each level, in level order
    SmallMap<Partner> partners_;
    size_t since_check_ = 0;        // pushes to the non-partner queue since the last check
    bool exhausted_ = false;        // budget spent: no more levels
    Timers *timers_ = nullptr;
};

// Partner/non-partner queues for both sides, and ANY_SOURCE receives in a
// queue of their own (the paper leaves them out): posting sequence numbers
// decide between a source's receive and a wildcard one, arrival sequence
// numbers pick the message an ANY_SOURCE receive takes from all queues.
class PnpPart {
public:
    PnpPart(int32_t comm_size, int64_t theta, int64_t k)
        : budget_{queue_cap(k, comm_size), 0}, posted_(budget_, static_cast<uint32_t>(theta)),
          unexpected_(budget_, static_cast<uint32_t>(theta)) {}
    PnpPart(const PnpPart &) = delete;
    PnpPart &operator=(const PnpPart &) = delete;

    // The message a receive takes (removed when `remove`).
    Found take_message(int32_t source, int32_t tag, const um_hint_t &, bool remove, ElementPool &pool) {
        uint32_t inspected = 0;
        const Candidate h = source == UM_ANY_SOURCE ? unexpected_.find_any_source(tag, inspected)
                                              : unexpected_.find<false>(source, tag, inspected);
        if (h.e == nullptr) {
            return {nullptr, inspected};
        }
        void *handle = h.e->handle;
        if (remove) {
            h.q->remove(h.e);
            pool.put(h.e);
        }
        return {handle, inspected};
    }

    // The receive a message takes (removed).
    Found take_recv(int32_t source, int32_t tag, const um_hint_t &, ElementPool &pool) {
        uint32_t inspected = 0;
        Candidate h = posted_.find<true>(source, tag, inspected);
        if (!posted_any_.empty()) {
            h.keep_earlier(first_recv_before(posted_any_, source, tag, h.bound(), inspected), &posted_any_);
        }
        if (h.e == nullptr) {
            return {nullptr, inspected};
        }
        void *handle = h.e->handle;
        h.q->remove(h.e);
        pool.put(h.e);
        return {handle, inspected};
    }

    void queue_recv(Element *e, const um_hint_t &) {
        if (e->source == UM_ANY_SOURCE) {
            posted_any_.push_back(e);
        } else {
            posted_.push(e);
        }
    }
    void queue_message(Element *e, const um_hint_t &) { unexpected_.push(e); }
    void done() {}

    bool cancel(int32_t source, int32_t tag, void *request, ElementPool &pool);
    void visit(const std::function<void(bool, const QueuedElement &)> &f) const;
    uint64_t queues() const { return posted_.queues() + unexpected_.queues() + 1; }
    uint64_t heap_bytes() const { return posted_.heap_bytes() + unexpected_.heap_bytes(); }

    const PnpSide &posted() const { return posted_; }
    const PnpSide &unexpected() const { return unexpected_; }
    const QueueBudget &budget() const { return budget_; }
    void attach_timers(Timers *t) {
        posted_.attach_timers(t);
        unexpected_.attach_timers(t);
    }

private:
    QueueBudget budget_;
    PnpSide posted_;
    PnpSide unexpected_;
    PeerQueue posted_any_;
};

} // namespace ubermatch

#endif

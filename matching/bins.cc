#include "matching/bins.h"

namespace ubermatch {

BinsEngine::BinsEngine(int32_t comm_size, uint32_t bins)
    : Engine(comm_size), nbins_(bins), posted_(bins), unexpected_(bins) {}

Entry *BinsEngine::find_message(int32_t source, int32_t tag, uint32_t &inspected) {
    if (is_wild(source, tag)) {
        return arrival_.find_message(source, tag, inspected);
    }
    // A bin holds messages of several keys; its order is their arrival order.
    return unexpected_[bin_of(source, tag)].find_message(source, tag, inspected);
}

void BinsEngine::take_message(Entry *e) {
    unexpected_[bin_of(e->source, e->tag)].remove(e);
    arrival_.remove(e);
    pool_.put(e);
}

Found BinsEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    uint32_t inspected = 0;
    if (Entry *e = find_message(source, tag, inspected)) {
        void *handle = e->handle;
        take_message(e);
        return {handle, inspected};
    }
    PeerQueue &q = is_wild(source, tag) ? posted_wild_ : posted_[bin_of(source, tag)];
    q.push_back(pool_.get(source, tag, request, next_seq()));
    return {nullptr, inspected};
}

Found BinsEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    PeerQueue &bin = posted_[bin_of(source, tag)];
    Entry *exact = bin.find_recv(source, tag, inspected);
    Entry *wild = posted_wild_.empty() ? nullptr : posted_wild_.find_recv(source, tag, inspected);
    PeerQueue *from = &bin;
    if (wild != nullptr && (exact == nullptr || wild->seq < exact->seq)) {
        exact = wild;
        from = &posted_wild_;
    }
    if (exact != nullptr) {
        return pool_.take(*from, exact, inspected);
    }
    Entry *e = pool_.get(source, tag, message, next_seq());
    unexpected_[bin_of(source, tag)].push_back(e);
    arrival_.push_back(e);
    return {nullptr, inspected};
}

Found BinsEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    uint32_t inspected = 0;
    Entry *e = find_message(source, tag, inspected);
    if (e == nullptr) {
        return {nullptr, inspected};
    }
    void *handle = e->handle;
    if (remove) {
        take_message(e);
    }
    return {handle, inspected};
}

bool BinsEngine::do_cancel(int32_t source, int32_t tag, void *request) {
    PeerQueue &q = is_wild(source, tag) ? posted_wild_ : posted_[bin_of(source, tag)];
    return pool_.take_handle(q, request);
}

void BinsEngine::visit(const Visitor &f) const {
    for (const PeerQueue &q : posted_) {
        visit_queue(q, true, f);
    }
    visit_queue(posted_wild_, true, f);
    visit_queue(arrival_, false, f);
}

uint64_t BinsEngine::queues_allocated() const {
    return posted_.size() + unexpected_.size() + 2;
}

uint64_t BinsEngine::bytes_used() const {
    return sizeof(*this) + (posted_.capacity() + unexpected_.capacity()) * sizeof(PeerQueue) +
           pool_.bytes();
}

} // namespace ubermatch

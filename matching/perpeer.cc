#include "matching/perpeer.h"

namespace ubermatch {

PerPeerEngine::PerPeerEngine(int32_t comm_size)
    : Engine(comm_size), posted_(static_cast<size_t>(comm_size)),
      unexpected_(static_cast<size_t>(comm_size)) {}

Entry *PerPeerEngine::find_message(int32_t source, int32_t tag, uint32_t &inspected,
                                   PeerQueue *&where) {
    if (source != UM_ANY_SOURCE) {
        where = &unexpected_[static_cast<size_t>(source)];
        return where->find_message(source, tag, inspected);
    }
    // A wildcard receive looks at every peer and takes the earliest arrival.
    Entry *best = nullptr;
    if (unexpected_total_ == 0) {
        return best;
    }
    for (PeerQueue &q : unexpected_) {
        Entry *e = q.find_message(source, tag, inspected);
        if (e != nullptr && (best == nullptr || e->seq < best->seq)) {
            best = e;
            where = &q;
        }
    }
    return best;
}

Found PerPeerEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    uint32_t inspected = 0;
    PeerQueue *where = nullptr;
    if (Entry *e = find_message(source, tag, inspected, where)) {
        --unexpected_total_;
        return pool_.take(*where, e, inspected);
    }
    PeerQueue &q = source == UM_ANY_SOURCE ? posted_any_ : posted_[static_cast<size_t>(source)];
    q.push_back(pool_.get(source, tag, request, next_seq()));
    return {nullptr, inspected};
}

Found PerPeerEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    PeerQueue &peer = posted_[static_cast<size_t>(source)];
    Entry *exact = peer.find_recv(source, tag, inspected);
    Entry *wild = posted_any_.empty() ? nullptr : posted_any_.find_recv(source, tag, inspected);
    if (wild != nullptr && (exact == nullptr || wild->seq < exact->seq)) {
        return pool_.take(posted_any_, wild, inspected);
    }
    if (exact != nullptr) {
        return pool_.take(peer, exact, inspected);
    }
    unexpected_[static_cast<size_t>(source)].push_back(pool_.get(source, tag, message, next_seq()));
    ++unexpected_total_;
    return {nullptr, inspected};
}

Found PerPeerEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    uint32_t inspected = 0;
    PeerQueue *where = nullptr;
    Entry *e = find_message(source, tag, inspected, where);
    if (e == nullptr) {
        return {nullptr, inspected};
    }
    if (!remove) {
        return {e->handle, inspected};
    }
    --unexpected_total_;
    return pool_.take(*where, e, inspected);
}

bool PerPeerEngine::do_cancel(int32_t source, int32_t, void *request) {
    PeerQueue &q = source == UM_ANY_SOURCE ? posted_any_ : posted_[static_cast<size_t>(source)];
    return pool_.take_handle(q, request);
}

void PerPeerEngine::visit(const Visitor &f) const {
    for (const PeerQueue &q : posted_) {
        visit_queue(q, true, f);
    }
    visit_queue(posted_any_, true, f);
    for (const PeerQueue &q : unexpected_) {
        visit_queue(q, false, f);
    }
}

uint64_t PerPeerEngine::queues_allocated() const {
    return posted_.size() + unexpected_.size() + 1;
}

uint64_t PerPeerEngine::bytes_used() const {
    return sizeof(*this) + (posted_.capacity() + unexpected_.capacity()) * sizeof(PeerQueue) +
           pool_.bytes();
}

} // namespace ubermatch

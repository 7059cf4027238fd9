#include "matching/nosource.h"

namespace ubermatch {

NoSourceEngine::NoSourceEngine(int32_t comm_size, bool no_unexpected)
    : Engine(comm_size), posted_(static_cast<size_t>(comm_size)),
      unexpected_(static_cast<size_t>(comm_size)), no_unexpected_(no_unexpected) {}

Found NoSourceEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    if (source == UM_ANY_SOURCE) {
        return kRefused;
    }
    uint32_t inspected = 0;
    PeerQueue &msgs = unexpected_[static_cast<size_t>(source)];
    if (Entry *e = msgs.find_message(source, tag, inspected)) {
        return pool_.take(msgs, e, inspected);
    }
    posted_[static_cast<size_t>(source)].push_back(pool_.get(source, tag, request, next_seq()));
    return {nullptr, inspected};
}

Found NoSourceEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    PeerQueue &recvs = posted_[static_cast<size_t>(source)];
    if (Entry *e = recvs.find_recv(source, tag, inspected)) {
        return pool_.take(recvs, e, inspected);
    }
    if (no_unexpected_) {
        return {nullptr, inspected, UM_ERR_ASSERTION};
    }
    unexpected_[static_cast<size_t>(source)].push_back(pool_.get(source, tag, message, next_seq()));
    return {nullptr, inspected};
}

Found NoSourceEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    if (source == UM_ANY_SOURCE) {
        return kRefused;
    }
    uint32_t inspected = 0;
    PeerQueue &msgs = unexpected_[static_cast<size_t>(source)];
    Entry *e = msgs.find_message(source, tag, inspected);
    if (e == nullptr || !remove) {
        return {e != nullptr ? e->handle : nullptr, inspected};
    }
    return pool_.take(msgs, e, inspected);
}

bool NoSourceEngine::do_cancel(int32_t source, int32_t, void *request) {
    if (source == UM_ANY_SOURCE) {
        return false; // never queued here
    }
    PeerQueue &q = posted_[static_cast<size_t>(source)];
    return pool_.take_handle(q, request);
}

void NoSourceEngine::visit(const Visitor &f) const {
    for (const PeerQueue &q : posted_) {
        visit_queue(q, true, f);
    }
    for (const PeerQueue &q : unexpected_) {
        visit_queue(q, false, f);
    }
}

uint64_t NoSourceEngine::bytes_used() const {
    return sizeof(*this) + (posted_.capacity() + unexpected_.capacity()) * sizeof(PeerQueue) +
           pool_.bytes();
}

} // namespace ubermatch

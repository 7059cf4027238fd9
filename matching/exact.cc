#include "matching/exact.h"

namespace ubermatch {

Found ExactEngine::take_head(KeyIndex &index, int32_t source, int32_t tag) {
    PeerQueue *q = index.find(source, tag);
    if (q == nullptr) {
        return {nullptr, 0};
    }
    Entry *e = q->front();
    index.remove(*q, e);
    return pool_.release(e, 1);
}

Found ExactEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return kRefused;
    }
    const Found f = take_head(unexpected_, source, tag);
    if (f.handle == nullptr) {
        posted_.insert(source, tag).push_back(pool_.get(source, tag, request, next_seq()));
    }
    return f;
}

Found ExactEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    const Found f = take_head(posted_, source, tag);
    if (f.handle != nullptr) {
        return f;
    }
    if (no_unexpected_) {
        return kRefused;
    }
    unexpected_.insert(source, tag).push_back(pool_.get(source, tag, message, next_seq()));
    return f;
}

Found ExactEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return kRefused;
    }
    if (remove) {
        return take_head(unexpected_, source, tag);
    }
    const PeerQueue *q = unexpected_.find(source, tag);
    return q != nullptr ? Found{q->front()->handle, 1} : Found{nullptr, 0};
}

bool ExactEngine::do_cancel(int32_t source, int32_t tag, void *request) {
    return take_keyed_handle(posted_, pool_, source, tag, request);
}

void ExactEngine::visit(const Visitor &f) const {
    posted_.for_each([&f](const PeerQueue &q) { visit_queue(q, true, f); });
    unexpected_.for_each([&f](const PeerQueue &q) { visit_queue(q, false, f); });
}

uint64_t ExactEngine::bytes_used() const {
    return sizeof(*this) + posted_.bytes() + unexpected_.bytes() + pool_.bytes();
}

} // namespace ubermatch

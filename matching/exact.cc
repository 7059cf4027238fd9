#include "matching/exact.h"

namespace ubermatch {

Found ExactEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return kRefused;
    }
    Slot &s = slots_[pack_key(source, tag)];
    if (Entry *e = s.unexpected.front()) {
        return pool_.take(s.unexpected, e, 1);
    }
    s.posted.push_back(pool_.get(source, tag, request, next_seq()));
    return {nullptr, 0};
}

Found ExactEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    Slot &s = slots_[pack_key(source, tag)];
    if (Entry *e = s.posted.front()) {
        return pool_.take(s.posted, e, 1);
    }
    if (no_unexpected_) {
        return kRefused;
    }
    s.unexpected.push_back(pool_.get(source, tag, message, next_seq()));
    return {nullptr, 0};
}

Found ExactEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return kRefused;
    }
    const auto it = slots_.find(pack_key(source, tag));
    Entry *e = it != slots_.end() ? it->second.unexpected.front() : nullptr;
    if (e == nullptr) {
        return {nullptr, 0};
    }
    return remove ? pool_.take(it->second.unexpected, e, 1) : Found{e->handle, 1};
}

bool ExactEngine::do_cancel(int32_t source, int32_t tag, void *request) {
    const auto it = slots_.find(pack_key(source, tag));
    return it != slots_.end() && pool_.take_handle(it->second.posted, request);
}

void ExactEngine::visit(const Visitor &f) const {
    for (const auto &kv : slots_) {
        visit_queue(kv.second.posted, true, f);
        visit_queue(kv.second.unexpected, false, f);
    }
}

uint64_t ExactEngine::bytes_used() const {
    return sizeof(*this) + slots_.size() * (sizeof(Slot) + sizeof(uint64_t) + 2 * sizeof(void *)) +
           slots_.bucket_count() * sizeof(void *) + pool_.bytes();
}

} // namespace ubermatch

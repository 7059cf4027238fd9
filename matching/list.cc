#include "matching/list.h"

namespace ubermatch {

ListEngine::~ListEngine() = default; // entries live in the pool

Found ListEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    uint32_t inspected = 0;
    if (Entry *e = unexpected_.find_message(source, tag, inspected)) {
        return pool_.take(unexpected_, e, inspected);
    }
    posted_.push_back(pool_.get(source, tag, request, next_seq()));
    return {nullptr, inspected};
}

Found ListEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    if (Entry *e = posted_.find_recv(source, tag, inspected)) {
        return pool_.take(posted_, e, inspected);
    }
    unexpected_.push_back(pool_.get(source, tag, message, next_seq()));
    return {nullptr, inspected};
}

Found ListEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    uint32_t inspected = 0;
    Entry *e = unexpected_.find_message(source, tag, inspected);
    if (e == nullptr) {
        return {nullptr, inspected};
    }
    return remove ? pool_.take(unexpected_, e, inspected) : Found{e->handle, inspected};
}

bool ListEngine::do_cancel(int32_t, int32_t, void *request) {
    return pool_.take_handle(posted_, request);
}

void ListEngine::visit(const Visitor &f) const {
    visit_queue(posted_, true, f);
    visit_queue(unexpected_, false, f);
}

} // namespace ubermatch

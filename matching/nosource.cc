#include "matching/nosource.h"

namespace ubermatch {

NoSourceEngine::NoSourceEngine(int32_t comm_size, bool no_unexpected)
    : Engine(comm_size), posted_any_(static_cast<size_t>(comm_size)),
      arrivals_(static_cast<size_t>(comm_size)), no_unexpected_(no_unexpected) {}

Entry *NoSourceEngine::message_for(int32_t source, int32_t tag, uint32_t &inspected, PeerQueue *&fifo) {
    fifo = nullptr;
    if (tag == UM_ANY_TAG) {
        Entry *e = arrivals_[static_cast<size_t>(source)].front();
        inspected += e != nullptr ? 1 : 0;
        return e;
    }
    fifo = unexpected_.find(source, tag);
    if (fifo == nullptr) {
        return nullptr;
    }
    ++inspected;
    return fifo->front();
}

Found NoSourceEngine::take_message(Entry *e, uint32_t inspected, PeerQueue *fifo) {
    const int32_t source = e->source;
    const int32_t tag = e->tag;
    if (tag >= 0) {
        arrivals_[static_cast<size_t>(source)].remove(e);
    }
    if (fifo != nullptr) {
        unexpected_.remove(*fifo, e);
    } else {
        unexpected_.remove(source, tag, e); // found through arrivals_: its key is looked up
    }
    return pool_.release(e, inspected);
}

Found NoSourceEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    if (source == UM_ANY_SOURCE) {
        return kRefused;
    }
    uint32_t inspected = 0;
    PeerQueue *fifo;
    if (Entry *e = message_for(source, tag, inspected, fifo)) {
        return take_message(e, inspected, fifo);
    }
    Entry *r = pool_.get(source, tag, request, next_seq());
    (tag == UM_ANY_TAG ? posted_any_[static_cast<size_t>(source)] : posted_.insert(source, tag))
        .push_back(r);
    return {nullptr, inspected};
}

Found NoSourceEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    PeerQueue *exact = posted_.find(source, tag);
    Entry *e = exact != nullptr ? exact->front() : nullptr;
    PeerQueue &any = posted_any_[static_cast<size_t>(source)];
    Entry *w = tag >= 0 ? any.front() : nullptr;
    inspected += (e != nullptr ? 1 : 0) + (w != nullptr ? 1 : 0);
    if (w != nullptr && (e == nullptr || w->seq < e->seq)) {
        return pool_.take(any, w, inspected); // the ANY_TAG receive was posted first
    }
    if (e != nullptr) {
        posted_.remove(*exact, e);
        return pool_.release(e, inspected);
    }
    if (no_unexpected_) {
        return {nullptr, inspected, UM_ERR_ASSERTION};
    }
    Entry *m = pool_.get(source, tag, message, next_seq());
    unexpected_.insert(source, tag).push_back(m);
    if (tag >= 0) {
        arrivals_[static_cast<size_t>(source)].push_back(m);
    }
    return {nullptr, inspected};
}

Found NoSourceEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    if (source == UM_ANY_SOURCE) {
        return kRefused;
    }
    uint32_t inspected = 0;
    PeerQueue *fifo;
    Entry *e = message_for(source, tag, inspected, fifo);
    if (e == nullptr || !remove) {
        return {e != nullptr ? e->handle : nullptr, inspected};
    }
    return take_message(e, inspected, fifo);
}

bool NoSourceEngine::do_cancel(int32_t source, int32_t tag, void *request) {
    if (source == UM_ANY_SOURCE) {
        return false; // never queued here
    }
    if (tag == UM_ANY_TAG) {
        return pool_.take_handle(posted_any_[static_cast<size_t>(source)], request);
    }
    return take_keyed_handle(posted_, pool_, source, tag, request);
}

void NoSourceEngine::visit(const Visitor &f) const {
    posted_.for_each([&f](const PeerQueue &q) { visit_queue(q, true, f); });
    for (const PeerQueue &q : posted_any_) {
        visit_queue(q, true, f);
    }
    unexpected_.for_each([&f](const PeerQueue &q) { visit_queue(q, false, f); });
}

uint64_t NoSourceEngine::bytes_used() const {
    return sizeof(*this) + posted_.bytes() + unexpected_.bytes() +
           posted_any_.capacity() * sizeof(PeerQueue) + arrivals_.capacity() * sizeof(OrderQueue) +
           pool_.bytes();
}

} // namespace ubermatch

#include "matching/tailq.h"

#include "matching/queue.h"
#include "matching/registry.h"

namespace ubermatch {

namespace {
using Lock = std::lock_guard<std::mutex>;

bool valid_source(int32_t source, int32_t comm_size, bool wildcard_ok) {
    return (source >= 0 && source < comm_size) || (wildcard_ok && source == UM_ANY_SOURCE);
}
} // namespace

TailQueues::TailQueues(const std::string &backend, int32_t comm_size, const um_params_t &params)
    : prq_(make_engine(backend, comm_size, params)), umq_(make_engine(backend, comm_size, params)),
      comm_size_(comm_size) {}

std::deque<TailQueues::Tail>::iterator TailQueues::find_message(std::deque<Tail> &tail,
                                                                int32_t source, int32_t tag) {
    auto it = tail.begin();
    while (it != tail.end() && !recv_matches(source, tag, it->source, it->tag)) {
        ++it;
    }
    return it;
}

std::deque<TailQueues::Tail>::iterator TailQueues::find_recv(std::deque<Tail> &tail,
                                                             int32_t source, int32_t tag) {
    auto it = tail.begin();
    while (it != tail.end() && !recv_matches(it->source, it->tag, source, tag)) {
        ++it;
    }
    return it;
}

// The UMQ instance never holds a receive, so arrive() there only queues.
void TailQueues::drain_umqt() {
    um_match_t m{};
    for (const Tail &t : umqt_) {
        umq_->arrive(t.source, t.tag, t.hint, t.handle, &m);
    }
    umqt_.clear();
}

// The PRQ instance never keeps a message, so post_recv() there only queues.
void TailQueues::drain_prqt() {
    um_match_t m{};
    for (const Tail &t : prqt_) {
        prq_->post_recv(t.source, t.tag, t.hint, t.handle, &m);
    }
    prqt_.clear();
}

// Everything in UMQT arrived after everything in the UMQ, so after a miss in
// the UMQ its first match is the earliest eligible message.
void *TailQueues::search_unexpected(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                                    void *post, uint32_t &inspected) {
    Lock umql(umql_);
    um_match_t m{};
    if (remove) {
        umq_->mprobe(source, tag, hint, &m);
    } else {
        umq_->probe(source, tag, hint, &m);
    }
    inspected = m.inspected;
    if (m.handle != nullptr) {
        return m.handle;
    }
    Lock tl(tl_);
    const auto it = find_message(umqt_, source, tag);
    inspected += static_cast<uint32_t>(it - umqt_.begin());
    void *found = it != umqt_.end() ? it->handle : nullptr;
    if (found != nullptr && remove) {
        umqt_.erase(it);
    } else if (found == nullptr && post != nullptr) {
        prqt_.push_back({source, tag, hint, post});
    }
    drain_umqt();
    return found;
}

int TailQueues::post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                          um_match_t *out) {
    if (!valid_source(source, comm_size_, true)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    uint32_t inspected = 0;
    void *found = search_unexpected(source, tag, hint, true, request, inspected);
    *out = {found, inspected};
    return UM_OK;
}

int TailQueues::arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                       um_match_t *out) {
    if (!valid_source(source, comm_size_, false)) {
        return UM_ERR_SOURCE;
    }
    if (tag == UM_ANY_TAG) {
        return UM_ERR_TAG;
    }
    if (message == nullptr) {
        return UM_ERR_ARG;
    }
    Lock prql(prql_);
    um_match_t m{};
    prq_->arrive(source, tag, hint, message, &m);
    uint32_t inspected = m.inspected;
    void *found = m.handle;
    if (found == nullptr) {
        // The backend queued the message on its unexpected side, the only
        // message there: take it back out (the PRQ instance holds receives only).
        um_match_t back{};
        prq_->mprobe(source, tag, hint, &back);
        Lock tl(tl_);
        const auto it = find_recv(prqt_, source, tag);
        inspected += static_cast<uint32_t>(it - prqt_.begin());
        if (it != prqt_.end()) {
            found = it->handle;
            prqt_.erase(it);
        } else {
            umqt_.push_back({source, tag, hint, message});
        }
        drain_prqt();
    }
    *out = {found, inspected};
    return UM_OK;
}

int TailQueues::probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    return search_only(source, tag, hint, false, out);
}

int TailQueues::mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    return search_only(source, tag, hint, true, out);
}

int TailQueues::search_only(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                            um_match_t *out) {
    if (!valid_source(source, comm_size_, true)) {
        return UM_ERR_SOURCE;
    }
    uint32_t inspected = 0;
    void *found = search_unexpected(source, tag, hint, remove, nullptr, inspected);
    *out = {found, inspected};
    return UM_OK;
}

int TailQueues::cancel(int32_t source, int32_t tag, void *request, bool *removed) {
    if (!valid_source(source, comm_size_, true)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    Lock prql(prql_);
    prq_->cancel(source, tag, request, removed);
    if (!*removed) {
        Lock tl(tl_);
        for (auto it = prqt_.begin(); it != prqt_.end(); ++it) {
            if (it->handle == request) {
                prqt_.erase(it);
                *removed = true;
                break;
            }
        }
    }
    return UM_OK;
}

Snapshot TailQueues::snapshot() const {
    Lock prql(prql_);
    Lock umql(umql_);
    Lock tl(tl_);
    Snapshot snap;
    const auto add = [](std::vector<QueuedElement> &to, void *handle, int32_t source, int32_t tag) {
        to.push_back({to.size(), handle, source, tag});
    };
    for (const QueuedElement &e : prq_->snapshot().posted) {
        add(snap.posted, e.handle, e.source, e.tag);
    }
    for (const Tail &t : prqt_) {
        add(snap.posted, t.handle, t.source, t.tag);
    }
    for (const QueuedElement &e : umq_->snapshot().unexpected) {
        add(snap.unexpected, e.handle, e.source, e.tag);
    }
    for (const Tail &t : umqt_) {
        add(snap.unexpected, t.handle, t.source, t.tag);
    }
    return snap;
}

} // namespace ubermatch

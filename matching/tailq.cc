#include "matching/tailq.h"

#include <algorithm>
#include <iterator>

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

void TailQueues::count_internal(um_class_stats_t (&to)[2], const um_hint_t &hint,
                                const um_match_t &m) {
    um_class_stats_t &c = to[hint.coll == UM_COLL_NONE ? 0 : 1];
    ++c.searches;
    c.inspected += m.inspected;
    c.matches += m.handle != nullptr ? 1 : 0;
}

// The UMQ instance never holds a receive, so arrive() there only queues.
void TailQueues::drain_umqt() {
    um_match_t m{};
    umqt_max_ = std::max<uint64_t>(umqt_max_, umqt_.size());
    for (const Tail &t : umqt_) {
        umq_->arrive(t.source, t.tag, t.hint, t.handle, &m);
        count_internal(umq_internal_, t.hint, m);
    }
    umqt_.clear();
}

// The PRQ instance never keeps a message, so post_recv() there only queues.
void TailQueues::drain_prqt() {
    um_match_t m{};
    prqt_max_ = std::max<uint64_t>(prqt_max_, prqt_.size());
    for (const Tail &t : prqt_) {
        prq_->post_recv(t.source, t.tag, t.hint, t.handle, &m);
        count_internal(prq_internal_, t.hint, m);
    }
    prqt_.clear();
}

// Everything in UMQT arrived after everything in the UMQ, so after a miss in
// the UMQ its first match is the earliest eligible message.
void *TailQueues::search_unexpected(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                                    void *post, uint32_t &inspected, Hook peek, void *ctx) {
    Lock umql(umql_);
    um_match_t m{};
    if (remove) {
        umq_->mprobe(source, tag, hint, &m);
    } else {
        umq_->probe(source, tag, hint, &m);
    }
    inspected = m.inspected;
    if (m.handle != nullptr) {
        if (peek != nullptr) {
            peek(m.handle, ctx);
        }
        return m.handle;
    }
    Lock tl(tl_);
    const auto it = find_message(umqt_, source, tag);
    inspected += static_cast<uint32_t>(it - umqt_.begin());
    void *found = it != umqt_.end() ? it->handle : nullptr;
    if (found != nullptr && peek != nullptr) {
        peek(found, ctx);
    }
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
    void *found = search_unexpected(source, tag, hint, true, request, inspected, nullptr, nullptr);
    *out = {found, inspected};
    return UM_OK;
}

int TailQueues::arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                       um_match_t *out, Hook before_queue, void *ctx) {
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
        count_internal(prq_internal_, hint, back);
        // Still invisible to receiving threads (they search the UMQ side only).
        if (before_queue != nullptr) {
            before_queue(message, ctx);
        }
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

int TailQueues::probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out,
                      Hook peek, void *ctx) {
    return search_only(source, tag, hint, false, out, peek, ctx);
}

int TailQueues::mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    return search_only(source, tag, hint, true, out, nullptr, nullptr);
}

int TailQueues::search_only(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                            um_match_t *out, Hook peek, void *ctx) {
    if (!valid_source(source, comm_size_, true)) {
        return UM_ERR_SOURCE;
    }
    uint32_t inspected = 0;
    void *found = search_unexpected(source, tag, hint, remove, nullptr, inspected, peek, ctx);
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
                ++prqt_cancels_;
                break;
            }
        }
    }
    return UM_OK;
}

int TailQueues::collective(const um_hint_t &hint, bool begin) {
    {
        Lock prql(prql_);
        const int rc = begin ? prq_->collective_begin(hint) : prq_->collective_end(hint);
        if (rc != UM_OK) {
            return rc;
        }
    }
    Lock umql(umql_);
    return begin ? umq_->collective_begin(hint) : umq_->collective_end(hint);
}

namespace {
// What an instance's searches counted, less those made only to move entries.
um_class_stats_t net_of(const um_class_stats_t &a, const um_class_stats_t &internal) {
    um_class_stats_t net = a;
    net.searches -= internal.searches;
    net.matches -= internal.matches;
    net.inspected -= internal.inspected;
    return net;
}
} // namespace

// The pair counted as one engine: the receives' and probes' searches (of the
// UMQ instance) and the arrivals' (of the PRQ instance), less what the
// instances did only to move entries (the inboxes drained into them, the
// PRQ's take-back of a missed arrival). Lengths include the inboxes; a
// high-water mark is the main queue's plus its inbox's: an upper bound.
// Timers, queues, bytes and backend counters are the two instances' sums.
um_stats_t TailQueues::stats() const {
    um_stats_t p{}, u{};
    um_class_stats_t pi[2], ui[2];
    {
        Lock prql(prql_);
        p = prq_->stats();
        std::copy(std::begin(prq_internal_), std::end(prq_internal_), pi);
    }
    {
        Lock umql(umql_);
        u = umq_->stats();
        std::copy(std::begin(umq_internal_), std::end(umq_internal_), ui);
    }
    Lock tl(tl_);
    um_stats_t s = u; // kernel and its fallback: the same in both
    add_stats(s, p);  // then searches without the internal ones, lengths with the inboxes
    s.p2p = {};
    s.coll = {};
    add_class_stats(s.p2p, net_of(p.p2p, pi[0]));
    add_class_stats(s.p2p, net_of(u.p2p, ui[0]));
    add_class_stats(s.coll, net_of(p.coll, pi[1]));
    add_class_stats(s.coll, net_of(u.coll, ui[1]));
    s.posted_len = p.posted_len + prqt_.size();
    s.unexpected_len = u.unexpected_len + umqt_.size();
    s.posted_max = p.posted_max + prqt_max_;
    s.unexpected_max = u.unexpected_max + umqt_max_;
    s.cancels = p.cancels + prqt_cancels_;
    return s;
}

void TailQueues::dump(std::ostream &out) const {
    out << "tail queues around " << prq_->name() << "; PRQ (receives):\n";
    {
        Lock prql(prql_);
        prq_->dump(out);
    }
    out << "UMQ (messages):\n";
    {
        Lock umql(umql_);
        umq_->dump(out);
    }
    Lock tl(tl_);
    out << "inboxes: PRQT " << prqt_.size() << " receives, UMQT " << umqt_.size() << " messages\n";
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

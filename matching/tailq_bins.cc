#include "matching/tailq_bins.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "matching/queue.h"
#include "matching/registry.h"

namespace ubermatch {

namespace {
using Shared = std::shared_lock<std::shared_mutex>;

bool exact(int32_t source, int32_t tag) { return source != UM_ANY_SOURCE && tag != UM_ANY_TAG; }
} // namespace

// Every gate, in bin order (so two holders cannot deadlock): nothing else
// runs but exact probes, which remove nothing.
class TailBins::Ordered {
public:
    explicit Ordered(const TailBins &t) : t_(t) {
        for (const auto &b : t_.bins_) {
            b->gate.lock();
        }
    }
    ~Ordered() {
        for (auto b = t_.bins_.rbegin(); b != t_.bins_.rend(); ++b) {
            (*b)->gate.unlock();
        }
    }
    Ordered(const Ordered &) = delete;
    Ordered &operator=(const Ordered &) = delete;

private:
    const TailBins &t_;
};

struct TailBins::StampCtx {
    TailBins *self;
    Bin *bin;
    Hook user;
    void *user_ctx;
    bool queued;
};

TailBins::TailBins(const std::string &backend, int32_t comm_size, const um_params_t &params, int bins)
    : comm_size_(comm_size) {
    if (bins < 1 || bins > kMaxBins) {
        throw std::invalid_argument("tail-queue bins = " + std::to_string(bins) +
                                    " is out of range; valid values are 1 .. " + std::to_string(kMaxBins));
    }
    for (int i = 0; i < bins; ++i) {
        bins_.push_back(std::make_unique<Bin>(backend, comm_size, params));
    }
    wait_ = make_engine(backend, comm_size, params);
}

// Sources and tags of one thread's traffic are often consecutive: mix them so
// that neighbours land in different bins.
TailBins::Bin &TailBins::bin_of(int32_t source, int32_t tag) const {
    uint32_t h = static_cast<uint32_t>(source) * 0x9E3779B1u ^ static_cast<uint32_t>(tag) * 0x85EBCA77u;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return *bins_[(static_cast<uint64_t>(h) * bins_.size()) >> 32];
}

// Runs before the message becomes visible to receiving threads (TailQueues'
// before_queue): the stamp is in place before anyone can take the message.
void TailBins::stamp_hook(void *message, void *ctx) {
    StampCtx &c = *static_cast<StampCtx *>(ctx);
    if (c.user != nullptr) {
        c.user(message, c.user_ctx);
    }
    const uint64_t stamp = c.self->clock_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(c.bin->stamp_mu);
    c.bin->stamps[message] = stamp;
    c.queued = true;
}

// Every queued message has one (stamp_hook); none would sort it last.
uint64_t TailBins::stamp_of(Bin &b, void *message) {
    std::lock_guard<std::mutex> lock(b.stamp_mu);
    const auto it = b.stamps.find(message);
    return it != b.stamps.end() ? it->second : std::numeric_limits<uint64_t>::max();
}

void TailBins::forget(Bin &b, void *message) {
    std::lock_guard<std::mutex> lock(b.stamp_mu);
    b.stamps.erase(message);
}

int TailBins::arrive_in(Bin &b, int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                        um_match_t *out, Hook before_queue, void *ctx) {
    StampCtx c{this, &b, before_queue, ctx, false};
    const int rc = b.q.arrive(source, tag, hint, message, out, &TailBins::stamp_hook, &c);
    if (rc == UM_OK && out->handle != nullptr && c.queued) {
        forget(b, message); // its hook ran, then a receive in the bin's PRQT took it
    }
    return rc;
}

int TailBins::post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                        um_match_t *out) {
    if (bins_.size() == 1) {
        return bins_[0]->q.post_recv(source, tag, hint, request, out);
    }
    if (exact(source, tag)) {
        Bin &b = bin_of(source, tag);
        Shared gate(b.gate);
        if (waiting_ == 0) {
            const int rc = b.q.post_recv(source, tag, hint, request, out);
            if (rc == UM_OK && out->handle != nullptr) {
                forget(b, out->handle);
            }
            return rc;
        }
    }
    return post_ordered(source, tag, hint, request, out);
}

int TailBins::arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                     um_match_t *out, Hook before_queue, void *ctx) {
    if (bins_.size() == 1) {
        return bins_[0]->q.arrive(source, tag, hint, message, out, before_queue, ctx);
    }
    Bin &b = bin_of(source, tag); // a wildcard here is refused by the bin's arrive
    {
        Shared gate(b.gate);
        if (waiting_ == 0) {
            return arrive_in(b, source, tag, hint, message, out, before_queue, ctx);
        }
    }
    return arrive_ordered(source, tag, hint, message, out, before_queue, ctx);
}

int TailBins::probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out, Hook peek,
                    void *ctx) {
    if (bins_.size() == 1 || exact(source, tag)) {
        return bin_of(source, tag).q.probe(source, tag, hint, out, peek, ctx);
    }
    return search_ordered(source, tag, hint, false, out, peek, ctx);
}

int TailBins::mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    if (bins_.size() == 1) {
        return bins_[0]->q.mprobe(source, tag, hint, out);
    }
    if (exact(source, tag)) {
        Bin &b = bin_of(source, tag);
        Shared gate(b.gate);
        const int rc = b.q.mprobe(source, tag, hint, out);
        if (rc == UM_OK && out->handle != nullptr) {
            forget(b, out->handle);
        }
        return rc;
    }
    return search_ordered(source, tag, hint, true, out, nullptr, nullptr);
}

int TailBins::cancel(int32_t source, int32_t tag, void *request, bool *removed) {
    if (bins_.size() == 1) {
        return bins_[0]->q.cancel(source, tag, request, removed);
    }
    if (!valid_source(source)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    // A wildcard receive is queued only in W; an exact one in its bin or in W.
    Bin &b = bin_of(source, exact(source, tag) ? tag : 0);
    {
        Shared gate(b.gate);
        if (waiting_ == 0) {
            *removed = false;
            return exact(source, tag) ? b.q.cancel(source, tag, request, removed) : UM_OK;
        }
    }
    Ordered all(*this);
    ++ordered_calls_;
    *removed = false;
    wait_->cancel(source, tag, request, removed);
    if (*removed) {
        --waiting_;
        ++wait_cancels_;
        return UM_OK;
    }
    return exact(source, tag) ? b.q.cancel(source, tag, request, removed) : UM_OK;
}

int TailBins::collective(const um_hint_t &hint, bool begin) {
    for (const auto &b : bins_) {
        const int rc = b->q.collective(hint, begin);
        if (rc != UM_OK) {
            return rc;
        }
    }
    return UM_OK;
}

// Each bin keeps its messages in arrival order, so its first match is its
// earliest; the stamps order the bins' candidates.
TailBins::Bin *TailBins::earliest(int32_t source, int32_t tag, const um_hint_t &hint, uint32_t &inspected) {
    Bin *best = nullptr;
    uint64_t best_stamp = std::numeric_limits<uint64_t>::max();
    const auto consider = [&](Bin &b) {
        um_match_t m{};
        b.q.probe(source, tag, hint, &m);
        inspected += m.inspected;
        if (m.handle != nullptr) {
            const uint64_t stamp = stamp_of(b, m.handle);
            if (stamp < best_stamp) {
                best_stamp = stamp;
                best = &b;
            }
        }
    };
    if (exact(source, tag)) {
        consider(bin_of(source, tag));
    } else {
        for (const auto &b : bins_) {
            consider(*b);
        }
    }
    return best;
}

int TailBins::post_ordered(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                           um_match_t *out) {
    if (!valid_source(source)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    Ordered all(*this);
    ++ordered_calls_;
    uint32_t inspected = 0;
    if (Bin *b = earliest(source, tag, hint, inspected)) {
        um_match_t m{};
        const int rc = b->q.post_recv(source, tag, hint, request, &m); // takes the message probed
        if (rc == UM_OK) {
            forget(*b, m.handle);
            *out = {m.handle, inspected + m.inspected};
        }
        return rc;
    }
    um_match_t queued{};
    wait_->post_recv(source, tag, hint, request, &queued); // W holds no message: this queues
    ++waiting_;
    wait_max_ = std::max<uint64_t>(wait_max_, waiting_);
    *out = {nullptr, inspected};
    return UM_OK;
}

// Every receive in the bin was posted before every receive in W, so the bin's
// match, if any, is the earliest; else W's first match. No queued message
// matches a receive in W, so the bin's first (source, tag) message, taken
// back for it, is this one.
int TailBins::arrive_ordered(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                             um_match_t *out, Hook before_queue, void *ctx) {
    Ordered all(*this);
    ++ordered_calls_;
    Bin &b = bin_of(source, tag);
    const int rc = arrive_in(b, source, tag, hint, message, out, before_queue, ctx);
    if (rc != UM_OK || out->handle != nullptr) {
        return rc;
    }
    um_match_t w{};
    wait_->arrive(source, tag, hint, message, &w);
    out->inspected += w.inspected;
    if (w.handle == nullptr) {
        um_match_t none{};
        wait_->mprobe(source, tag, hint, &none); // W keeps receives only: take the message back out
        return UM_OK;
    }
    um_match_t back{};
    b.q.mprobe(source, tag, hint, &back); // back.handle == message (see above)
    forget(b, message);
    out->handle = w.handle;
    --waiting_;
    return UM_OK;
}

int TailBins::search_ordered(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                             um_match_t *out, Hook peek, void *ctx) {
    if (!valid_source(source)) {
        return UM_ERR_SOURCE;
    }
    Ordered all(*this);
    ++ordered_calls_;
    uint32_t inspected = 0;
    Bin *b = earliest(source, tag, hint, inspected);
    *out = {nullptr, inspected};
    if (b == nullptr) {
        return UM_OK;
    }
    um_match_t m{};
    const int rc = remove ? b->q.mprobe(source, tag, hint, &m) : b->q.probe(source, tag, hint, &m);
    if (rc != UM_OK) {
        return rc;
    }
    if (peek != nullptr) {
        peek(m.handle, ctx); // no other call can take it: every gate is held
    }
    if (remove) {
        forget(*b, m.handle);
    }
    out->handle = m.handle;
    return UM_OK;
}

uint64_t TailBins::ordered_calls() const {
    Shared gate(bins_[0]->gate);
    return ordered_calls_;
}

um_stats_t TailBins::stats() const {
    um_stats_t s = bins_[0]->q.stats();
    for (size_t i = 1; i < bins_.size(); ++i) {
        add_stats(s, bins_[i]->q.stats());
    }
    Shared gate(bins_[0]->gate);
    s.posted_len += waiting_;
    s.posted_max += wait_max_;
    s.cancels += wait_cancels_;
    return s;
}

void TailBins::dump(std::ostream &out) const {
    if (bins_.size() == 1) {
        bins_[0]->q.dump(out);
        return;
    }
    Ordered all(*this);
    out << "tail queues in " << bins_.size() << " bins around " << backend_name() << "; receives waiting behind a wildcard (W): "
        << waiting_ << " (most " << wait_max_ << "), calls under every bin's gate: " << ordered_calls_ << "\n";
    for (size_t i = 0; i < bins_.size(); ++i) {
        const um_stats_t s = bins_[i]->q.stats();
        out << "  bin " << i << ": " << s.posted_len << " receives, " << s.unexpected_len << " messages, "
            << s.p2p.searches << " searches\n";
    }
}

Snapshot TailBins::snapshot() const {
    if (bins_.size() == 1) {
        return bins_[0]->q.snapshot();
    }
    Ordered all(*this);
    Snapshot snap;
    std::vector<std::pair<uint64_t, QueuedElement>> messages;
    for (const auto &b : bins_) {
        Snapshot one = b->q.snapshot();
        for (const QueuedElement &e : one.posted) {
            snap.posted.push_back({snap.posted.size(), e.handle, e.source, e.tag});
        }
        for (const QueuedElement &e : one.unexpected) {
            messages.emplace_back(stamp_of(*b, e.handle), e);
        }
    }
    for (const QueuedElement &w : wait_->snapshot().posted) {
        snap.posted.push_back({snap.posted.size(), w.handle, w.source, w.tag});
    }
    std::sort(messages.begin(), messages.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &m : messages) {
        snap.unexpected.push_back({snap.unexpected.size(), m.second.handle, m.second.source, m.second.tag});
    }
    return snap;
}

} // namespace ubermatch

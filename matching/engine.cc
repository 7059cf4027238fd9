#include "matching/engine.h"

#include <algorithm>

namespace ubermatch {

uint64_t Timers::floor_ns() {
    static const uint64_t floor = [] {
        uint64_t least = UINT64_MAX;
        for (int i = 0; i < 256; ++i) {
            const uint64_t a = now_ns();
            least = std::min(least, now_ns() - a);
        }
        return least;
    }();
    return floor;
}

void Timers::enable(bool on, uint64_t cutoff_ns) {
    on_ = on;
    cutoff_ = cutoff_ns;
    floor_ = on ? floor_ns() : 0;
}

int Engine::post_recv_traced(int32_t source, int32_t tag, const um_hint_t &hint, void *request, um_match_t *out) {
    return post_recv_as<true>(source, tag, hint, request, out);
}

int Engine::arrive_traced(int32_t source, int32_t tag, const um_hint_t &hint, void *message, um_match_t *out) {
    return arrive_as<true>(source, tag, hint, message, out);
}

template <bool kPost>
int Engine::batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out, size_t *done) {
    size_t ran = 0;
    int rc = UM_OK;
    if (trace_ != nullptr || timers_.on()) {
        try { // the single calls throw where each() returns UM_ERR_NOMEM
            for (; ran < n; ++ran) {
                const um_elem_t &e = elems[ran];
                rc = kPost ? post_recv(e.source, e.tag, hint, e.handle, &out[ran])
                           : arrive(e.source, e.tag, hint, e.handle, &out[ran]);
                if (rc != UM_OK) {
                    break;
                }
            }
        } catch (const std::bad_alloc &) {
            rc = UM_ERR_NOMEM;
        }
    } else {
        ran = kPost ? do_post_recv_batch(elems, n, hint, out, &rc) : do_arrive_batch(elems, n, hint, out, &rc);
    }
    if (done != nullptr) {
        *done = ran;
    }
    return ran == n ? UM_OK : rc;
}

int Engine::post_recv_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out,
                            size_t *done) {
    return batch<true>(elems, n, hint, out, done);
}

int Engine::arrive_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out,
                         size_t *done) {
    return batch<false>(elems, n, hint, out, done);
}

int Engine::probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    if (!valid_source(source, true)) {
        return UM_ERR_SOURCE;
    }
    um_class_stats_t &c = class_of(hint);
    const Found f = timed_search(c, false, [&] { return do_probe(source, tag, hint, false); });
    if (trace_ != nullptr) {
        traced(trace::TraceOp::probe, f, source, tag, hint, nullptr);
    }
    if (f.status != UM_OK) {
        return f.status;
    }
    account(c, f);
    *out = {f.handle, f.inspected};
    return UM_OK;
}

int Engine::mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    if (!valid_source(source, true)) {
        return UM_ERR_SOURCE;
    }
    um_class_stats_t &c = class_of(hint);
    const Found f = timed_search(c, false, [&] { return do_probe(source, tag, hint, true); });
    if (trace_ != nullptr) {
        traced(trace::TraceOp::mprobe, f, source, tag, hint, nullptr);
    }
    if (f.status != UM_OK) {
        return f.status;
    }
    account(c, f);
    if (f.handle != nullptr) {
        --stats_.unexpected_len;
    }
    *out = {f.handle, f.inspected};
    return UM_OK;
}

int Engine::cancel(int32_t source, int32_t tag, void *request, bool *removed) {
    if (!valid_source(source, true)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    *removed = do_cancel(source, tag, request);
    if (trace_ != nullptr) {
        trace_->add(trace_cid_, um_hint_t{},
                    {trace::TraceOp::cancel, *removed, source, tag, reinterpret_cast<uintptr_t>(request), 0});
    }
    if (*removed) {
        --stats_.posted_len;
        ++stats_.cancels;
    }
    return UM_OK;
}

um_stats_t Engine::stats() const {
    um_stats_t s = stats_;
    s.queues = queues_allocated();
    s.bytes = bytes_used();
    s.overhead_ns = timers_.overhead_ns();
    s.timer_outliers = timers_.outliers();
    backend_stats(s);
    return s;
}

Snapshot Engine::snapshot() const {
    Snapshot snap;
    visit([&snap](bool posted, const QueuedElement &e) {
        (posted ? snap.posted : snap.unexpected).push_back(e);
    });
    const auto by_seq = [](const QueuedElement &a, const QueuedElement &b) { return a.seq < b.seq; };
    std::sort(snap.posted.begin(), snap.posted.end(), by_seq);
    std::sort(snap.unexpected.begin(), snap.unexpected.end(), by_seq);
    return snap;
}

namespace {

void print_class(std::ostream &out, const char *label, const um_class_stats_t &c) {
    out << "  " << label << ": searches " << c.searches << ", matches " << c.matches
        << ", inspected " << c.inspected << " (mean "
        << (c.searches != 0 ? static_cast<double>(c.inspected) / static_cast<double>(c.searches) : 0.0)
        << ", max " << c.max_inspected << ")\n";
}

void print_queue(std::ostream &out, const char *label, const std::vector<QueuedElement> &q) {
    out << "  " << label << " (" << q.size() << "):";
    for (const QueuedElement &e : q) {
        out << " [src " << e.source << " tag " << e.tag << " seq " << e.seq << "]";
    }
    out << "\n";
}

} // namespace

void Engine::dump(std::ostream &out) const {
    const um_stats_t s = stats();
    out << "engine " << name() << ", communicator size " << comm_size_ << "\n"
        << "  posted " << s.posted_len << " (max " << s.posted_max << "), unexpected "
        << s.unexpected_len << " (max " << s.unexpected_max << "), queues " << s.queues
        << ", bytes " << s.bytes << ", cancels " << s.cancels << "\n";
    if (s.kernel != UM_KERNEL_NONE) {
        out << "  kernel " << um_kernel_name(static_cast<um_kernel_t>(s.kernel))
            << (s.kernel_fallback != 0 ? " (fallback)" : "") << ", blocks " << s.blocks
            << ", holes " << s.holes << ", compactions " << s.compactions << ", false positives "
            << s.false_positives << "\n";
    }
    print_class(out, "point-to-point", s.p2p);
    print_class(out, "collective", s.coll);
    if (timers_.on()) {
        out << "  timers: search ns point-to-point " << s.p2p.search_ns << " (posted queue "
            << s.p2p.posted_search_ns << "), collective " << s.coll.search_ns << " (posted queue "
            << s.coll.posted_search_ns << "), overhead ns " << s.overhead_ns << ", outliers "
            << s.timer_outliers << "\n";
    }
    if (s.dedicated_p2p + s.dedicated_coll != 0) {
        out << "  dedicated queues: point-to-point " << s.dedicated_p2p << ", collective "
            << s.dedicated_coll << "\n";
    }
    const Snapshot snap = snapshot();
    print_queue(out, "posted", snap.posted);
    print_queue(out, "unexpected", snap.unexpected);
}

} // namespace ubermatch

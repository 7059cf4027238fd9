#include "matching/engine.h"

#include <algorithm>

namespace ubermatch {

void Engine::account(um_class_stats_t &c, const Found &f) {
    ++c.searches;
    c.inspected += f.inspected;
    c.max_inspected = std::max<uint64_t>(c.max_inspected, f.inspected);
    if (f.handle != nullptr) {
        ++c.matches;
    }
}

int Engine::post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                      um_match_t *out) {
    if (!valid_source(source, true)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    const Found f = do_post_recv(source, tag, hint, request);
    account(class_of(hint), f);
    if (f.handle != nullptr) {
        --stats_.unexpected_len;
    } else {
        stats_.posted_max = std::max(stats_.posted_max, ++stats_.posted_len);
    }
    *out = {f.handle, f.inspected};
    return UM_OK;
}

int Engine::arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                   um_match_t *out) {
    if (!valid_source(source, false)) {
        return UM_ERR_SOURCE;
    }
    if (tag == UM_ANY_TAG) {
        return UM_ERR_TAG;
    }
    if (message == nullptr) {
        return UM_ERR_ARG;
    }
    const Found f = do_arrive(source, tag, hint, message);
    account(class_of(hint), f);
    if (f.handle != nullptr) {
        --stats_.posted_len;
    } else {
        stats_.unexpected_max = std::max(stats_.unexpected_max, ++stats_.unexpected_len);
    }
    *out = {f.handle, f.inspected};
    return UM_OK;
}

int Engine::probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    if (!valid_source(source, true)) {
        return UM_ERR_SOURCE;
    }
    const Found f = do_probe(source, tag, hint, false);
    account(class_of(hint), f);
    *out = {f.handle, f.inspected};
    return UM_OK;
}

int Engine::mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out) {
    if (!valid_source(source, true)) {
        return UM_ERR_SOURCE;
    }
    const Found f = do_probe(source, tag, hint, true);
    account(class_of(hint), f);
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
    const Snapshot snap = snapshot();
    print_queue(out, "posted", snap.posted);
    print_queue(out, "unexpected", snap.unexpected);
}

} // namespace ubermatch

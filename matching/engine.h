// The matching engine's C++ interface: one instance per communicator.
//
// The public calls check their arguments and keep the statistics; a backend
// implements only the searches and the queueing (the do_* hooks), one backend
// per file pair, registered by name in registry.cc.
#ifndef UBERMATCH_MATCHING_ENGINE_H
#define UBERMATCH_MATCHING_ENGINE_H

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <new>
#include <ostream>
#include <vector>

#include "matching/trace_sink.h"
#include "matching/ubermatch_engine.h"

namespace ubermatch {

// What a backend's search returns: the element's handle (nullptr: none) and
// the number of elements it compared. A relaxed backend refuses an operation
// its assertion excludes with status UM_ERR_ASSERTION, queueing nothing.
struct Found {
    void *handle = nullptr;
    uint32_t inspected = 0;
    int status = UM_OK;
};

// What a relaxed backend returns for an operation its assertion excludes.
inline constexpr Found kRefused{nullptr, 0, UM_ERR_ASSERTION};

// A queued element, as snapshot() reports it.
struct QueuedElement {
    uint64_t seq;
    void *handle;
    int32_t source;
    int32_t tag;
};

struct Snapshot {
    std::vector<QueuedElement> posted;     // in posting order
    std::vector<QueuedElement> unexpected; // in arrival order
};

// The engine's timers (um_params_t.timers, timer_cutoff_ns), read only when
// they are on: wall-clock nanoseconds from CLOCK_MONOTONIC (the vDSO, about
// 20 ns a reading), less the smallest interval two readings give (measured
// once per process), so an empty interval counts about 0.
//
//  search_ns (um_class_stats_t, per class of traffic): post_recv, arrive,
//    probe and mprobe from the backend's search to its return, including, on a
//    miss, queueing the element; not the argument checks or the statistics,
//    and not the restructuring below. posted_search_ns is the part spent in
//    arrive, whose search is of the posted-receive queue (the paper's PRQ);
//    the rest searched the unexpected-message queue (UMQ).
//  overhead_ns (um_stats_t): time the adaptive backends spend restructuring
//    their queues, Ghazimirsaeed et al.'s "runtime overhead" (section 5.6):
//    PNP's partner extraction (the pass over the non-partner queue, the
//    choice of partners, their queues and hash-table entries, the new level)
//    and COL's level creation (the queue count from the profile and the
//    level's queues), whether an operation or collective_begin triggers it.
//    Per-search bookkeeping (the profile counters of a bucket, hash look-ups
//    of partners, tags and buckets) is part of finding the element and stays
//    in search_ns. Backends time such steps with OverheadScope.
//  timer_outliers (um_stats_t): intervals longer than timer_cutoff_ns (when
//    not 0), left out of both sums: on an oversubscribed node a process
//    descheduled inside a search adds milliseconds to a microsecond search.
class Timers {
public:
    static uint64_t now_ns() {
        timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
    }
    // The smallest interval two back-to-back readings give, measured once.
    static uint64_t floor_ns();

    bool on() const { return on_; }
    void enable(bool on, uint64_t cutoff_ns);

    // One restructuring step that began at `start` (now_ns()).
    void add_overhead(uint64_t start) {
        const uint64_t elapsed = now_ns() - start;
        inner_ += elapsed;
        if (keep(elapsed)) {
            overhead_ns_ += net(elapsed);
        }
    }
    uint64_t overhead_ns() const { return overhead_ns_; }
    uint64_t outliers() const { return outliers_; }

private:
    friend class Engine;
    bool keep(uint64_t elapsed) {
        if (cutoff_ != 0 && net(elapsed) > cutoff_) {
            ++outliers_;
            return false;
        }
        return true;
    }
    uint64_t net(uint64_t elapsed) const { return elapsed > floor_ ? elapsed - floor_ : 0; }

    bool on_ = false;
    uint64_t cutoff_ = 0;      // 0: keep every interval
    uint64_t floor_ = 0;
    uint64_t overhead_ns_ = 0;
    uint64_t inner_ = 0;       // every restructuring interval, kept or not: taken out of the
                               // search around it
    uint64_t outliers_ = 0;
};

// Times one restructuring step into Timers' overhead_ns; nothing when the
// timers are off (or t is nullptr).
class OverheadScope {
public:
    explicit OverheadScope(Timers *t)
        : t_(t != nullptr && t->on() ? t : nullptr), start_(t_ != nullptr ? Timers::now_ns() : 0) {}
    ~OverheadScope() {
        if (t_ != nullptr) {
            t_->add_overhead(start_);
        }
    }
    OverheadScope(const OverheadScope &) = delete;
    OverheadScope &operator=(const OverheadScope &) = delete;

private:
    Timers *const t_;
    const uint64_t start_;
};

class Engine {
public:
    explicit Engine(int32_t comm_size) : comm_size_(comm_size) {}
    virtual ~Engine() = default;
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    virtual const char *name() const = 0;
    int32_t comm_size() const { return comm_size_; }

    int post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                  um_match_t *out);
    int arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
               um_match_t *out);
    // n receives posted (messages arrived) in order, as n post_recv (arrive)
    // calls with one hint would: out[i] is element i's result. *done (unless
    // nullptr): how many were done; an error stops the batch at its element,
    // whose status is returned (those before it stay done). A recorded or
    // timed engine makes one call per element (its records and timings are
    // per call).
    int post_recv_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out,
                        size_t *done);
    int arrive_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out,
                     size_t *done);
    int probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out);
    int mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out);
    // *removed: the receive was queued and is now removed (false: already matched).
    int cancel(int32_t source, int32_t tag, void *request, bool *removed);
    // A collective call begins or ends (col backends' profiling; others ignore it).
    int collective_begin(const um_hint_t &hint) { return collective_call(hint, true); }
    int collective_end(const um_hint_t &hint) { return collective_call(hint, false); }

    um_stats_t stats() const;
    Snapshot snapshot() const;
    void dump(std::ostream &out) const;

    // Timers on or off, and their cutoff in ns (0: none); make_engine() applies
    // um_params_t.timers and timer_cutoff_ns. Counts so far are kept.
    void set_timers(bool on, uint64_t cutoff_ns) { timers_.enable(on, cutoff_ns); }
    bool timers_on() const { return timers_.on(); }

    // Every call from now on is recorded into sink as communicator cid's
    // (matching/trace.h, record()); the last engine to let its sink go writes
    // the file.
    void attach_trace(std::shared_ptr<trace::Sink> sink, uint32_t cid) {
        trace_owner_ = std::move(sink);
        trace_ = trace_owner_.get();
        trace_cid_ = cid;
    }

protected:
    // Search the unexpected queue; on a miss queue the receive.
    virtual Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint,
                               void *request) = 0;
    // Search the posted queue; on a miss queue the message.
    virtual Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint,
                            void *message) = 0;
    // Search the unexpected queue, removing the element found when `remove`.
    virtual Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) = 0;
    virtual bool do_cancel(int32_t source, int32_t tag, void *request) = 0;
    // The batches' searches: elements [0, n) in order, each checked and then
    // searched as its do_* call would; out[i] its result. Returns how many
    // were done; an error or a refusal stops the batch at its element, its
    // status in *status. Default: one virtual call per element; a backend
    // whose search is short overrides them with each() over its own search,
    // which then inlines into one loop.
    virtual size_t do_post_recv_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint,
                                      um_match_t *out, int *status) {
        return each<true>(elems, n, hint, out, status,
                          [&](const um_elem_t &e) { return do_post_recv(e.source, e.tag, hint, e.handle); });
    }
    virtual size_t do_arrive_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint,
                                   um_match_t *out, int *status) {
        return each<false>(elems, n, hint, out, status,
                           [&](const um_elem_t &e) { return do_arrive(e.source, e.tag, hint, e.handle); });
    }
    // One loop over a batch of receives (kPost) or messages: each element
    // checked, searched (search(e): a Found) and counted as counted()
    // would, the counts kept in registers and stored once.
    template <bool kPost, class F>
    size_t each(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *__restrict out, int *status,
                F &&search) {
        um_class_stats_t &c = class_of(hint);
        uint64_t &len = kPost ? stats_.posted_len : stats_.unexpected_len;
        uint64_t &high = kPost ? stats_.posted_max : stats_.unexpected_max;
        uint64_t matches = 0, inspected = 0, deepest = c.max_inspected, queued = len, highest = high;
        size_t i = 0;
        try { // what was done before a failed allocation stays done and counted
            for (; i < n; ++i) {
                const um_elem_t &e = elems[i];
                int rc = kPost ? post_check(e.source, e.handle) : arrive_check(e.source, e.tag, e.handle);
                Found f;
                if (__builtin_expect(rc == UM_OK, 1)) {
                    f = search(e);
                    rc = f.status;
                }
                if (__builtin_expect(rc != UM_OK, 0)) {
                    *status = rc;
                    break;
                }
                inspected += f.inspected;
                deepest = std::max<uint64_t>(deepest, f.inspected);
                if (f.handle != nullptr) {
                    ++matches;
                } else {
                    highest = std::max(highest, ++queued);
                }
                out[i] = {f.handle, f.inspected};
            }
        } catch (const std::bad_alloc &) {
            *status = UM_ERR_NOMEM;
        }
        c.searches += i;
        c.matches += matches;
        c.inspected += inspected;
        c.max_inspected = deepest;
        len = queued;
        high = highest;
        (kPost ? stats_.unexpected_len : stats_.posted_len) -= matches; // each match took one of the other queue's
        return i;
    }
    // Calls f(is_posted, element) for every queued element, in any order.
    using Visitor = std::function<void(bool posted, const QueuedElement &e)>;
    virtual void visit(const Visitor &f) const = 0;
    virtual uint64_t queues_allocated() const = 0;
    virtual uint64_t bytes_used() const = 0;
    // Counters only some backends have (um_stats_t's SIMD fields); default: none.
    virtual void backend_stats(um_stats_t &) const {}

    // Collective calls begun and ended (collective_begin/end); default: ignored.
    virtual void do_collective_begin(const um_hint_t &) {}
    virtual void do_collective_end(const um_hint_t &) {}

    // Sequence numbers for posting and arrival order, shared by all queues.
    uint64_t next_seq() { return ++seq_; }

    // For backends that restructure their queues: OverheadScope(&timers()).
    Timers &timers() { return timers_; }

private:
    bool valid_source(int32_t source, bool wildcard_ok) const {
        return (source >= 0 && source < comm_size_) || (wildcard_ok && source == UM_ANY_SOURCE);
    }
    um_class_stats_t &class_of(const um_hint_t &hint) {
        return hint.coll == UM_COLL_NONE ? stats_.p2p : stats_.coll;
    }
    static inline void account(um_class_stats_t &c, const Found &f);
    // The arguments' checks and the statistics of one receive posted (message
    // arrived), shared by the single calls and the batches.
    int post_check(int32_t source, const void *request) const {
        if (__builtin_expect(!valid_source(source, true), 0)) {
            return UM_ERR_SOURCE;
        }
        return __builtin_expect(request == nullptr, 0) ? UM_ERR_ARG : UM_OK;
    }
    int arrive_check(int32_t source, int32_t tag, const void *message) const {
        if (!valid_source(source, false)) {
            return UM_ERR_SOURCE;
        }
        if (tag == UM_ANY_TAG) {
            return UM_ERR_TAG;
        }
        return message == nullptr ? UM_ERR_ARG : UM_OK;
    }
    // A receive posted (kPost) or a message arrived, counted: a match took an
    // element of the other queue, else this one grew.
    template <bool kPost>
    void counted(um_class_stats_t &c, const Found &f) {
        account(c, f);
        if (f.handle != nullptr) {
            --(kPost ? stats_.unexpected_len : stats_.posted_len);
        } else {
            uint64_t &len = kPost ? stats_.posted_len : stats_.unexpected_len;
            uint64_t &high = kPost ? stats_.posted_max : stats_.unexpected_max;
            high = std::max(high, ++len);
        }
    }
    template <bool kPost>
    int batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out, size_t *done);
    // post_recv and arrive, recording (kTraced) or not. The trace is tested
    // once, before the search; a recorded call goes out of line to its own
    // copy (*_traced, engine.cc; the append inline there). Tested after the
    // search, the untraced calls kept their arguments live across it, and
    // with both copies inline in the caller the untraced one spilled more:
    // each cost 1-2 ns a message with the trace off (docs/traces.md).
    template <bool kTraced>
    int post_recv_as(int32_t source, int32_t tag, const um_hint_t &hint, void *request, um_match_t *out);
    template <bool kTraced>
    int arrive_as(int32_t source, int32_t tag, const um_hint_t &hint, void *message, um_match_t *out);
    int post_recv_traced(int32_t source, int32_t tag, const um_hint_t &hint, void *request, um_match_t *out);
    int arrive_traced(int32_t source, int32_t tag, const um_hint_t &hint, void *message, um_match_t *out);
    // A search's record (a trace attached); a refusal (a relaxed backend's
    // assertion) is recorded too, with result 2.
    void traced(trace::TraceOp op, const Found &f, int32_t source, int32_t tag, const um_hint_t &hint,
                const void *id) {
        const uint8_t result = f.status != UM_OK ? 2 : f.handle != nullptr;
        trace_->add(trace_cid_, hint,
                    {op, result, source, tag, reinterpret_cast<uintptr_t>(id), reinterpret_cast<uintptr_t>(f.handle)});
    }

    // Runs one search (op: the do_* call), timed when the timers are on.
    template <class F>
    Found timed_search(um_class_stats_t &c, bool posted_queue, F &&op) {
        if (__builtin_expect(!timers_.on(), 1)) {
            return op();
        }
        const uint64_t inner = timers_.inner_;
        const uint64_t start = Timers::now_ns();
        const Found f = op();
        const uint64_t elapsed = Timers::now_ns() - start - (timers_.inner_ - inner);
        if (timers_.keep(elapsed)) {
            const uint64_t ns = timers_.net(elapsed);
            c.search_ns += ns;
            if (posted_queue) {
                c.posted_search_ns += ns;
            }
        }
        return f;
    }

    int collective_call(const um_hint_t &hint, bool begin) {
        if (hint.coll == UM_COLL_NONE || hint.coll >= UM_COLL_COUNT) {
            return UM_ERR_ARG;
        }
        begin ? do_collective_begin(hint) : do_collective_end(hint);
        if (trace_ != nullptr) {
            trace_->add(trace_cid_, hint, {begin ? trace::TraceOp::coll_begin : trace::TraceOp::coll_end, 0, 0, 0, 0, 0});
        }
        return UM_OK;
    }

    const int32_t comm_size_;
    uint32_t trace_cid_ = 0;
    trace::Sink *trace_ = nullptr; // recording: trace_owner_, without the shared_ptr's indirection
    uint64_t seq_ = 0;
    um_stats_t stats_{};
    Timers timers_;
    std::shared_ptr<trace::Sink> trace_owner_;
};

// Two engines counted as one (a communicator's two engines, the two instances
// inside tail queues): every count summed, the deepest search the deeper one's,
// a high-water mark the sum of both (an upper bound: the peaks may not
// coincide). The kernel fields stay `to`'s.
inline void add_class_stats(um_class_stats_t &to, const um_class_stats_t &from) {
    to.searches += from.searches;
    to.matches += from.matches;
    to.inspected += from.inspected;
    to.max_inspected = std::max(to.max_inspected, from.max_inspected);
    to.search_ns += from.search_ns;
    to.posted_search_ns += from.posted_search_ns;
}

inline void add_stats(um_stats_t &to, const um_stats_t &from) {
    add_class_stats(to.p2p, from.p2p);
    add_class_stats(to.coll, from.coll);
    for (uint64_t um_stats_t::*f :
         {&um_stats_t::posted_len, &um_stats_t::unexpected_len, &um_stats_t::posted_max,
          &um_stats_t::unexpected_max, &um_stats_t::queues, &um_stats_t::bytes, &um_stats_t::cancels,
          &um_stats_t::false_positives, &um_stats_t::blocks, &um_stats_t::holes,
          &um_stats_t::compactions, &um_stats_t::indexed, &um_stats_t::reshapes,
          &um_stats_t::index_bytes, &um_stats_t::memory_limited, &um_stats_t::overhead_ns,
          &um_stats_t::timer_outliers, &um_stats_t::dedicated_p2p, &um_stats_t::dedicated_coll}) {
        to.*f += from.*f;
    }
}

// The two calls of every message, inline: their checks and statistics cost
// less than the calls would.
inline void Engine::account(um_class_stats_t &c, const Found &f) {
    ++c.searches;
    c.inspected += f.inspected;
    c.max_inspected = std::max<uint64_t>(c.max_inspected, f.inspected);
    if (f.handle != nullptr) {
        ++c.matches;
    }
}

inline int Engine::post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                      um_match_t *out) {
    return __builtin_expect(trace_ != nullptr, 0) ? post_recv_traced(source, tag, hint, request, out)
                                                  : post_recv_as<false>(source, tag, hint, request, out);
}

inline int Engine::arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                   um_match_t *out) {
    return __builtin_expect(trace_ != nullptr, 0) ? arrive_traced(source, tag, hint, message, out)
                                                  : arrive_as<false>(source, tag, hint, message, out);
}

template <bool kTraced>
inline int Engine::post_recv_as(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                      um_match_t *out) {
    const int rc = post_check(source, request);
    if (__builtin_expect(rc != UM_OK, 0)) {
        return rc;
    }
    um_class_stats_t &c = class_of(hint);
    const Found f = timed_search(c, false, [&] { return do_post_recv(source, tag, hint, request); });
    if (kTraced) {
        traced(trace::TraceOp::post_recv, f, source, tag, hint, request);
    }
    if (__builtin_expect(f.status != UM_OK, 0)) {
        return f.status; // refused (a relaxed backend's assertion): nothing queued, nothing counted
    }
    counted<true>(c, f);
    *out = {f.handle, f.inspected};
    return UM_OK;
}

template <bool kTraced>
inline int Engine::arrive_as(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                   um_match_t *out) {
    const int rc = arrive_check(source, tag, message);
    if (rc != UM_OK) {
        return rc;
    }
    um_class_stats_t &c = class_of(hint);
    const Found f = timed_search(c, true, [&] { return do_arrive(source, tag, hint, message); });
    if (kTraced) {
        traced(trace::TraceOp::arrive, f, source, tag, hint, message);
    }
    if (__builtin_expect(f.status != UM_OK, 0)) {
        return f.status;
    }
    counted<false>(c, f);
    *out = {f.handle, f.inspected};
    return UM_OK;
}

} // namespace ubermatch

#endif

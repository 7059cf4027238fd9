// The matching engine's C++ interface: one instance per communicator.
//
// The public calls check their arguments and keep the statistics; a backend
// implements only the searches and the queueing (the do_* hooks), one backend
// per file pair, registered by name in registry.cc.
#ifndef UBERMATCH_MATCHING_ENGINE_H
#define UBERMATCH_MATCHING_ENGINE_H

#include <cstdint>
#include <functional>
#include <ostream>
#include <vector>

#include "matching/ubermatch_engine.h"

namespace ubermatch {

// What a backend's search returns: the element's handle (nullptr: none) and
// the number of elements it compared.
struct Found {
    void *handle = nullptr;
    uint32_t inspected = 0;
};

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

private:
    bool valid_source(int32_t source, bool wildcard_ok) const {
        return (source >= 0 && source < comm_size_) || (wildcard_ok && source == UM_ANY_SOURCE);
    }
    um_class_stats_t &class_of(const um_hint_t &hint) {
        return hint.coll == UM_COLL_NONE ? stats_.p2p : stats_.coll;
    }
    static void account(um_class_stats_t &c, const Found &f);

    int collective_call(const um_hint_t &hint, bool begin) {
        if (hint.coll == UM_COLL_NONE || hint.coll >= UM_COLL_COUNT) {
            return UM_ERR_ARG;
        }
        begin ? do_collective_begin(hint) : do_collective_end(hint);
        return UM_OK;
    }

    const int32_t comm_size_;
    uint64_t seq_ = 0;
    um_stats_t stats_{};
};

} // namespace ubermatch

#endif

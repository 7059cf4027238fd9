// Binned tail queues: the tail-queue paper's secondary parallelism (seed 002,
// Section 3: "binning"), so that threads matching different (source, tag)
// keys do not share a lock at all.
//
// The queues are split into bins by a hash of (source, tag); each bin is a
// whole TailQueues (its own PRQ and UMQ of the chosen backend, inboxes and
// three locks), so exact receives and messages of different keys match in
// parallel, and a receive and a message of one key still overlap as in plain
// tail queues. Wildcards are kept in MPI's order across bins:
//  - a receive with MPI_ANY_SOURCE or MPI_ANY_TAG takes every bin's gate (a
//    reader-writer lock per bin, read by the exact calls of that bin) and
//    takes the earliest matching message of all bins, by an arrival stamp
//    that each queued message gets (taken only when a message is queued);
//  - one that finds none is queued in W, one more instance of the backend
//    that only ever holds receives (searched as the backend searches, not
//    walked), and while W holds a receive, every receive goes to W behind it
//    (so every receive in a bin was posted before every receive in W) and
//    every arrival, after its bin's receives, searches W under all gates: the
//    "ordered mode". An application that keeps a wildcard receive posted all
//    the time runs in it and gains nothing from bins (docs/tail-queues.md,
//    "Bins").
// An exact probe needs no gate (it removes nothing); a wildcard probe or
// mprobe takes them all. With one bin every call goes straight to the one
// TailQueues.
#ifndef UBERMATCH_MATCHING_TAILQ_BINS_H
#define UBERMATCH_MATCHING_TAILQ_BINS_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "matching/tailq.h"

namespace ubermatch {

class TailBins {
public:
    static constexpr int kMaxBins = 256;
    using Hook = TailQueues::Hook;

    // bins: 1 (plain tail queues) .. kMaxBins. Throws std::invalid_argument
    // as make_engine() does, and naming the range for bins out of it.
    TailBins(const std::string &backend, int32_t comm_size, const um_params_t &params, int bins);

    // TailQueues' calls and contracts (matching/tailq.h).
    int post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                  um_match_t *out);
    int arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
               um_match_t *out, Hook before_queue = nullptr, void *ctx = nullptr);
    int probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out,
              Hook peek = nullptr, void *ctx = nullptr);
    int mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out);
    int cancel(int32_t source, int32_t tag, void *request, bool *removed);
    int collective(const um_hint_t &hint, bool begin);

    // The bins' statistics summed, W counted with the posted receives.
    um_stats_t stats() const;
    void dump(std::ostream &out) const;
    // Receives: each bin's, then W's; messages in stamp order.
    Snapshot snapshot() const;
    const char *backend_name() const { return bins_[0]->q.backend_name(); }
    int bins() const { return static_cast<int>(bins_.size()); }
    // Calls that took every gate (ordered mode and wildcards), for the tests.
    uint64_t ordered_calls() const;

private:
    struct alignas(64) Bin {
        Bin(const std::string &backend, int32_t comm_size, const um_params_t &params)
            : q(backend, comm_size, params) {}
        mutable std::shared_mutex gate; // shared: this bin's exact calls; every gate: W's
        TailQueues q;
        std::mutex stamp_mu; // the stamps of this bin's queued messages
        std::unordered_map<void *, uint64_t> stamps;
    };
    class Ordered; // holds every gate
    struct StampCtx;

    Bin &bin_of(int32_t source, int32_t tag) const;
    bool valid_source(int32_t source) const {
        return source == UM_ANY_SOURCE || (source >= 0 && source < comm_size_);
    }
    int arrive_in(Bin &b, int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                  um_match_t *out, Hook before_queue, void *ctx);
    static void stamp_hook(void *message, void *ctx);
    static void forget(Bin &b, void *message);
    static uint64_t stamp_of(Bin &b, void *message);
    // Under every gate: the bin holding the earliest message (source, tag)
    // matches, nullptr if none.
    Bin *earliest(int32_t source, int32_t tag, const um_hint_t &hint, uint32_t &inspected);
    int post_ordered(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                     um_match_t *out);
    int arrive_ordered(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
                       um_match_t *out, Hook before_queue, void *ctx);
    int search_ordered(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                       um_match_t *out, Hook peek, void *ctx);

    std::vector<std::unique_ptr<Bin>> bins_;
    const int32_t comm_size_;
    std::atomic<uint64_t> clock_{0}; // arrival stamps
    // Changed only under every gate, so read under any one.
    std::unique_ptr<Engine> wait_; // W: receives only
    size_t waiting_ = 0;           // receives in W
    uint64_t wait_max_ = 0, wait_cancels_ = 0, ordered_calls_ = 0;
};

} // namespace ubermatch

#endif

// Tail queues (Dosanjh et al., seed 002, Algorithm 2): matching that lets one
// thread search the posted-receive queue (PRQ) while another searches the
// unexpected-message queue (UMQ), around any backend.
//
// The PRQ and the UMQ are each one instance of the chosen backend: the PRQ
// instance only ever holds receives, the UMQ instance only messages. A backend
// keeps state shared by its two sides (the sequence counter, statistics, pnp's
// budget, col's buckets, auto's mode); with one instance per side nothing is
// shared, each instance is touched only under its own lock (PRQL, UMQL), and
// no backend needed changing. The inboxes PRQT and UMQT take entries that the
// other side's thread queues; TL guards them and closes the race between a
// receive that found no message and a message that found no receive.
//
// Lock order: PRQL or UMQL, then TL (never both queue locks), so no cycle.
// Every public call may run on several threads at once.
#ifndef UBERMATCH_MATCHING_TAILQ_H
#define UBERMATCH_MATCHING_TAILQ_H

#include <cstdint>
#include <deque>
#include <ostream>
#include <memory>
#include <mutex>
#include <string>

#include "matching/engine.h"

namespace ubermatch {

class TailQueues {
public:
    // Throws std::invalid_argument as make_engine() does.
    TailQueues(const std::string &backend, int32_t comm_size, const um_params_t &params);

    // Called on a handle while no other thread can take it (see arrive, probe).
    using Hook = void (*)(void *handle, void *ctx);

    // Same contracts as Engine's calls of the same names. arrive: when the
    // PRQ had no receive for the message, before_queue(message, ctx) runs
    // before it can become visible to receiving threads (a caller whose data
    // is only borrowed copies it there); outside TL, so the message may still
    // match a receive in PRQT after it ran. probe: peek(found, ctx) runs while the found
    // message is still queued and cannot be taken by another thread.
    int post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request,
                  um_match_t *out);
    int arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message,
               um_match_t *out, Hook before_queue = nullptr, void *ctx = nullptr);
    int probe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out,
              Hook peek = nullptr, void *ctx = nullptr);
    int mprobe(int32_t source, int32_t tag, const um_hint_t &hint, um_match_t *out);
    int cancel(int32_t source, int32_t tag, void *request, bool *removed);
    // Engine::collective_begin/end, given to both instances (col's profiles).
    int collective(const um_hint_t &hint, bool begin);

    // One engine's statistics for the pair (tailq.cc says how they are counted).
    um_stats_t stats() const;
    void dump(std::ostream &out) const;

    // Queued receives and messages, main queue then tail, in their order
    // (sequence numbers are positions in that order, not the backend's).
    Snapshot snapshot() const;
    const char *backend_name() const { return prq_->name(); }

private:
    struct Tail {
        int32_t source;
        int32_t tag;
        um_hint_t hint;
        void *handle;
    };
    // First entry of `tail` a receive (source, tag) matches (message inbox), or
    // that matches a message (source, tag) (receive inbox); tail.end() if none.
    static std::deque<Tail>::iterator find_message(std::deque<Tail> &tail, int32_t source,
                                                   int32_t tag);
    static std::deque<Tail>::iterator find_recv(std::deque<Tail> &tail, int32_t source,
                                                int32_t tag);
    // Under the side's lock and TL: move the inbox into its main queue.
    void drain_umqt();
    void drain_prqt();
    // The UMQ, then UMQT, search of post_recv and mprobe (remove) or probe;
    // post_recv's receive (post) goes to PRQT on a miss. Takes UMQL, then TL.
    void *search_unexpected(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                            void *post, uint32_t &inspected, Hook peek, void *ctx);
    int search_only(int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                    um_match_t *out, Hook peek, void *ctx);
    // Searches an instance made that were not the caller's (see stats()).
    static void count_internal(um_class_stats_t (&to)[2], const um_hint_t &hint,
                               const um_match_t &m);

    std::unique_ptr<Engine> prq_; // receives only
    std::unique_ptr<Engine> umq_; // messages only
    std::deque<Tail> prqt_;       // receives posted while the PRQ was busy
    std::deque<Tail> umqt_;       // messages that found no receive
    mutable std::mutex prql_;
    mutable std::mutex umql_;
    mutable std::mutex tl_;
    const int32_t comm_size_;
    um_class_stats_t prq_internal_[2]{}; // under PRQL, by class (0: point-to-point)
    um_class_stats_t umq_internal_[2]{}; // under UMQL
    uint64_t prqt_max_ = 0, umqt_max_ = 0, prqt_cancels_ = 0; // under TL
};

} // namespace ubermatch

#endif

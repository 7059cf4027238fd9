// `perpeer`: Open MPI ob1's design. Every peer has its own posted and
// unexpected queue, in arrays sized to the communicator, and ANY_SOURCE
// receives wait in one more queue. Posting sequence numbers decide between a
// peer's receive and a wildcard one; arrival sequence numbers decide which
// peer's message an ANY_SOURCE receive takes. Fast for exact receives spread
// over peers, O(n) memory per communicator.
#ifndef UBERMATCH_MATCHING_PERPEER_H
#define UBERMATCH_MATCHING_PERPEER_H

#include <vector>

#include "matching/engine.h"
#include "matching/queue.h"

namespace ubermatch {

class PerPeerEngine final : public Engine {
public:
    explicit PerPeerEngine(int32_t comm_size);
    const char *name() const override { return "perpeer"; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override;
    uint64_t bytes_used() const override;

private:
    // The earliest-arrived message a receive matches, and the queue holding it.
    Entry *find_message(int32_t source, int32_t tag, uint32_t &inspected, PeerQueue *&where);

    std::vector<PeerQueue> posted_;     // per peer, exact-source receives
    PeerQueue posted_any_;              // ANY_SOURCE receives
    std::vector<PeerQueue> unexpected_; // per peer
    uint64_t unexpected_total_ = 0;
    EntryPool pool_;
};

} // namespace ubermatch

#endif

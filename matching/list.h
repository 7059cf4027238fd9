// `list`: one posted and one unexpected queue per communicator, searched
// front to back (MPICH's design). Smallest memory, cost grows with depth.
#ifndef UBERMATCH_MATCHING_LIST_H
#define UBERMATCH_MATCHING_LIST_H

#include "matching/engine.h"
#include "matching/queue.h"

namespace ubermatch {

class ListEngine final : public Engine {
public:
    explicit ListEngine(int32_t comm_size) : Engine(comm_size) {}
    ~ListEngine() override;
    const char *name() const override { return "list"; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override { return 2; }
    uint64_t bytes_used() const override { return sizeof(*this) + pool_.bytes(); }

private:

    PeerQueue posted_;
    PeerQueue unexpected_;
    EntryPool pool_;
};

} // namespace ubermatch

#endif

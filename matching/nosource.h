// `nosource`: for communicators asserting mpi_assert_no_any_source. Every
// source has its own posted and unexpected queue and there is no wildcard
// queue, so an arrival searches one short queue and never compares sequence
// numbers across sources. ANY_TAG receives still work (within their source).
// An ANY_SOURCE receive or probe is refused with UM_ERR_ASSERTION.
//
// `nosource-nounexp` adds the paper's no-unexpected relaxation (our info key
// ubermatch_no_unexpected): an arrival that finds no receive is refused,
// not queued.
#ifndef UBERMATCH_MATCHING_NOSOURCE_H
#define UBERMATCH_MATCHING_NOSOURCE_H

#include <vector>

#include "matching/engine.h"
#include "matching/queue.h"

namespace ubermatch {

class NoSourceEngine final : public Engine {
public:
    NoSourceEngine(int32_t comm_size, bool no_unexpected);
    const char *name() const override { return no_unexpected_ ? "nosource-nounexp" : "nosource"; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override { return posted_.size() + unexpected_.size(); }
    uint64_t bytes_used() const override;

private:
    std::vector<PeerQueue> posted_;     // per source
    std::vector<PeerQueue> unexpected_; // per source
    EntryPool pool_;
    const bool no_unexpected_;
};

} // namespace ubermatch

#endif

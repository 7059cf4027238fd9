// `exact`: for communicators asserting both mpi_assert_no_any_source and
// mpi_assert_no_any_tag. A receive and a message match only on an equal
// (source, tag), so each queue is a hash index from that key to its FIFO
// (receives, messages): one look-up, no wildcard path. A key leaves its index
// when its FIFO empties, so memory follows what is queued, not every key
// seen. Order within a key is MPI's (non-overtaking). A wildcard receive or
// probe is refused with UM_ERR_ASSERTION.
//
// `exact-nounexp` also refuses (does not queue) an arrival no receive awaits.
#ifndef UBERMATCH_MATCHING_EXACT_H
#define UBERMATCH_MATCHING_EXACT_H

#include "matching/engine.h"
#include "matching/key_index.h"
#include "matching/queue.h"

namespace ubermatch {

class ExactEngine final : public Engine {
public:
    ExactEngine(int32_t comm_size, bool no_unexpected)
        : Engine(comm_size), no_unexpected_(no_unexpected) {}
    const char *name() const override { return no_unexpected_ ? "exact-nounexp" : "exact"; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override { return posted_.keys() + unexpected_.keys(); }
    uint64_t bytes_used() const override;

private:
    // Takes the head of `index`'s FIFO of the key, if any; the key leaves when it empties.
    Found take_head(KeyIndex &index, int32_t source, int32_t tag);

    KeyIndex posted_;
    KeyIndex unexpected_;
    EntryPool pool_;
    const bool no_unexpected_;
};

} // namespace ubermatch

#endif

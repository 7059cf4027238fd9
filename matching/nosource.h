// `nosource`: for communicators asserting mpi_assert_no_any_source. With no
// ANY_SOURCE receive there is no wildcard-source queue and no sequence
// comparison across sources; ANY_TAG receives still work within their source.
// Each side is indexed by (source, tag), so a search costs a look-up however
// deep one peer's queue is:
//  - posted: exact receives in a key index (FIFO per key), ANY_TAG receives in
//    a FIFO per source; an arrival takes the older of the two heads it meets
//    (the posting order, `seq`), which is MPI's choice;
//  - unexpected: messages in a key index and, for ANY_TAG receives, in a FIFO
//    per source in arrival order (the entry's second link): an exact receive
//    takes its key's head, an ANY_TAG receive its source's head, and either
//    leaves both queues in O(1). Open MPI's negative tags never meet ANY_TAG,
//    so they stay out of the source FIFO.
// An ANY_SOURCE receive or probe is refused with UM_ERR_ASSERTION.
//
// `nosource-nounexp` adds the paper's no-unexpected relaxation (our info key
// ubermatch_no_unexpected): an arrival that finds no receive is refused,
// not queued.
#ifndef UBERMATCH_MATCHING_NOSOURCE_H
#define UBERMATCH_MATCHING_NOSOURCE_H

#include <vector>

#include "matching/engine.h"
#include "matching/key_index.h"
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
    uint64_t queues_allocated() const override {
        return posted_.keys() + unexpected_.keys() + posted_any_.size() + arrivals_.size();
    }
    uint64_t bytes_used() const override;

private:
    // The oldest message a receive (source, tag) takes, or nullptr; fifo: its
    // FIFO in unexpected_ when the search went through it (else nullptr).
    Entry *message_for(int32_t source, int32_t tag, uint32_t &inspected, PeerQueue *&fifo);
    // Takes message e out of both its queues (fifo: as message_for gave it).
    Found take_message(Entry *e, uint32_t inspected, PeerQueue *fifo);

    KeyIndex posted_;                   // exact receives
    std::vector<PeerQueue> posted_any_; // ANY_TAG receives, per source
    KeyIndex unexpected_;               // messages, by key (link q)
    std::vector<OrderQueue> arrivals_;  // messages with tags >= 0, per source (link order)
    EntryPool pool_;
    const bool no_unexpected_;
};

} // namespace ubermatch

#endif

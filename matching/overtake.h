// `overtake`: for communicators asserting mpi_assert_allow_overtaking with
// mpi_assert_no_any_source and mpi_assert_no_any_tag (seed 001's third
// relaxation: no wildcards, no order). A receive and a message match only on
// an equal (source, tag), and any element of that key may be taken, so both
// queues are one hash table from the key to its elements, receives or
// messages (never both: one would have taken the other): one probe sequence
// per operation, which on a miss ends where the new element goes. Elements of
// one key beyond the first form a FIFO off its slot, so a deep queue of one
// key costs no probing. A wildcard receive or probe is refused with
// UM_ERR_ASSERTION; `overtake-nounexp` also refuses an arrival no receive
// awaits.
//
// `overtake-anytag` (-nounexp) drops mpi_assert_no_any_tag from the contract:
// an ANY_TAG receive may take any message of its source. Such receives wait
// in a queue per source; each source keeps the tags under which its messages
// wait, so an ANY_TAG receive finds one in a probe or two, not a scan.
//
// The engine is a template over the table (overtake_table.h); the registry's
// `overtake` uses the two-level table (kOvertakeTable, chosen by
// measurement), the other stays for the benchmark and the tests
// (make_overtake_engine).
#ifndef UBERMATCH_MATCHING_OVERTAKE_H
#define UBERMATCH_MATCHING_OVERTAKE_H

#include <memory>
#include <vector>

#include "matching/engine.h"
#include "matching/overtake_table.h"
#include "matching/queue.h"

namespace ubermatch {

template <class Table>
class OvertakeEngine final : public Engine {
public:
    OvertakeEngine(int32_t comm_size, bool no_unexpected, bool any_tag, const char *name)
        : Engine(comm_size), any_tag_recvs_(any_tag ? static_cast<size_t>(comm_size) : 0),
          msg_tags_(any_tag ? static_cast<size_t>(comm_size) : 0), no_unexpected_(no_unexpected),
          any_tag_(any_tag), name_(name) {}
    const char *name() const override { return name_; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    // A batch in one loop: the search inline, no virtual call per element.
    size_t do_post_recv_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out,
                              int *status) override;
    size_t do_arrive_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint, um_match_t *out,
                           int *status) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override { return 1 + any_tag_recvs_.size(); }
    uint64_t bytes_used() const override;

private:
    // Takes an element of `want` (a key with its kind bit) or, when queue is
    // set, queues `handle` under `put` (the same key, the other kind).
    // match() and take() are forced inline into the do_* calls: GCC kept them
    // as calls, and their frames cost 1-1.5 ns of a 16-19 ns random-key match.
    [[gnu::always_inline]] inline Found match(uint64_t want, uint64_t put, void *handle, bool queue);
    // do_post_recv and do_arrive, inline into them and into the batch loops
    // (an ANY_TAG receive out of line: the rare case).
    [[gnu::always_inline]] inline Found post_one(int32_t source, int32_t tag, void *request);
    [[gnu::always_inline]] inline Found arrive_one(int32_t source, int32_t tag, void *message);
    Found post_any_tag(int32_t source, void *request);
    // The element take() would remove next.
    static void *top(const overtake::Slot &s) { return s.handle; }
    [[gnu::always_inline]] inline void *take(overtake::Slot *s);
    // A message key an ANY_TAG receive may take (any_tag_; not Open MPI's
    // negative tags, which ANY_TAG never matches).
    bool for_any_tag(uint64_t key) const {
        return any_tag_ && (key & overtake::kMessage) != 0 && overtake::tag_of(key) >= 0;
    }
    // The slot of key k (no kMessage) if messages wait under it, or nullptr.
    overtake::Slot *messages(uint64_t k, uint32_t &inspected) {
        typename Table::Pos pos{};
        overtake::Slot *s = table_.find(k, inspected, pos);
        return s != nullptr && s->key == (k | overtake::kMessage) ? s : nullptr;
    }
    // any_tag_ only: a slot of messages of `source`, or nullptr.
    overtake::Slot *message_of(int32_t source, uint32_t &inspected);
    // any_tag_ only: a message key of `source` entered the table.
    void add_message_key(int32_t source, int32_t tag);

    // Tags of one source's message keys, for ANY_TAG receives, kept from the
    // source's first ANY_TAG search on (a program that never uses ANY_TAG
    // pays nothing). Entries go stale when a key empties and are dropped when
    // met (message_of) or when they outnumber the live keys twice
    // (add_message_key), so upkeep is amortised O(1) without a back pointer
    // from the table's moving slots.
    struct SourceTags {
        std::vector<int32_t> tags;
        uint32_t live = 0;    // this source's message keys in the table (once indexed)
        bool indexed = false; // tags and live are kept
    };

    Table table_;
    EntryPool pool_; // the elements of a key beyond its first; ANY_TAG receives
    std::vector<PeerQueue> any_tag_recvs_; // per source (any_tag_)
    std::vector<SourceTags> msg_tags_;     // per source (any_tag_)
    const bool no_unexpected_;
    const bool any_tag_;
    const char *const name_;
};

// The table of the registry's overtake backends (docs/relaxed.md): the
// two-level table, 1.6x linear probing's matches/s on 16-1024 random keys and
// 1.1-1.25x at 8192, as fast on one key matched and posted again; 1.5-3x its
// memory.
inline constexpr const char *kOvertakeTable = "two-level";

// "open" or "two-level" (overtake_table.h); nullptr for another name.
// any_tag: ANY_TAG receives and probes allowed (overtake-anytag).
std::unique_ptr<Engine> make_overtake_engine(const char *table, int32_t comm_size,
                                             bool no_unexpected, const char *name,
                                             bool any_tag = false);

} // namespace ubermatch

#endif

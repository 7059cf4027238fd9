// `overtake`: for communicators asserting mpi_assert_allow_overtaking with
// mpi_assert_no_any_source and mpi_assert_no_any_tag (seed 001's third
// relaxation: no wildcards, no order). A receive and a message match only on
// an equal (source, tag), and any element of that key may be taken, so both
// queues are one hash table from the key to its elements, receives or
// messages (never both: one would have taken the other): one probe sequence
// per operation, which on a miss ends where the new element goes. Elements of
// one key beyond the first form a stack off its slot, so a deep queue of one
// key costs no probing. A wildcard receive or probe is refused with
// UM_ERR_ASSERTION; `overtake-nounexp` also refuses an arrival no receive
// awaits.
//
// The engine is a template over the table (overtake_table.h); the registry's
// `overtake` uses linear probing (kOvertakeTable, chosen by measurement), the
// other stays for the benchmark and the tests (make_overtake_engine).
#ifndef UBERMATCH_MATCHING_OVERTAKE_H
#define UBERMATCH_MATCHING_OVERTAKE_H

#include <memory>

#include "matching/engine.h"
#include "matching/overtake_table.h"
#include "matching/queue.h"

namespace ubermatch {

template <class Table>
class OvertakeEngine final : public Engine {
public:
    OvertakeEngine(int32_t comm_size, bool no_unexpected, const char *name)
        : Engine(comm_size), no_unexpected_(no_unexpected), name_(name) {}
    const char *name() const override { return name_; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override { return 1; }
    uint64_t bytes_used() const override { return sizeof(*this) + table_.bytes() + pool_.bytes(); }

private:
    // Takes an element of `want` (a key with its kind bit) or, when queue is
    // set, queues `handle` under `put` (the same key, the other kind).
    Found match(uint64_t want, uint64_t put, void *handle, bool queue);
    // The element take() would remove next.
    static void *top(const overtake::Slot &s) { return s.handle; }
    void *take(overtake::Slot *s);

    Table table_;
    EntryPool pool_; // the elements of a key beyond its first
    const bool no_unexpected_;
    const char *const name_;
};

// The table of the registry's overtake backends (docs/relaxed.md): linear
// probing, flat from 16 to 8192 random keys in a third of the memory. The
// two-level table is ahead up to 1024 keys (within 4-11 % on a loaded core,
// 1.4x on an idle one) and behind at 8192 (1.4-2.3x: its stash grows).
inline constexpr const char *kOvertakeTable = "open";

// "open" or "two-level" (overtake_table.h); nullptr for another name.
std::unique_ptr<Engine> make_overtake_engine(const char *table, int32_t comm_size,
                                             bool no_unexpected, const char *name);

} // namespace ubermatch

#endif

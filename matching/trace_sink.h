// The append of a matching trace: the engine's own calls (engine.h) record
// into a Sink, inline, when a trace is on. Recording's cost is this path's,
// twice per message, so the common event is one 8-byte store behind one
// branch: the clock, the context (cid and hint), an address's high bits and
// what the event's word cannot hold go into records of their own before the
// event, only when due (every kTimeEvery events) or needed, through the
// out-of-line prefix(); that branch also covers the buffer's end (room is
// kept for the extra records).
// Until 2026-11-28 an engine wrapping the backend recorded: its second call
// through the Engine interface cost about half of what recording cost
// (docs/traces.md, "Recording inside the engine").
//
// The file side (the buffer's owner, the clock, the writes) is the Recorder in
// trace_record.cc.
#ifndef UBERMATCH_MATCHING_TRACE_SINK_H
#define UBERMATCH_MATCHING_TRACE_SINK_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "matching/trace_format.h"
#include "matching/ubermatch_engine.h"

namespace ubermatch {
namespace trace {

// An event as an engine call sees it: what one record of the file says.
struct Event {
    TraceOp op;
    uint8_t result; // searches: 1 matched, 0 not, 2 refused; cancel: 1 removed
    int32_t source, tag;
    uint64_t id, matched; // addresses
};

class Sink {
public:
    virtual ~Sink() = default;
    Sink(const Sink &) = delete;
    Sink &operator=(const Sink &) = delete;

    void add(uint32_t cid, const um_hint_t &hint, const Event &e) {
        if (__builtin_expect(threads_, 0)) { // MPI_THREAD_MULTIPLE: engines of several comms
            // As scalars: by reference the event would be stored to memory
            // on every call for this rare one.
            add_locked(cid, hint, e.op, e.result, e.source, e.tag, e.id, e.matched);
        } else {
            put(cid, hint, e);
        }
    }

protected:
    explicit Sink(bool threads) : threads_(threads) {}

    // Whether the event's source and tag fit its word (trace_format.h): 0 when they do.
    static uint32_t wide(int32_t source, int32_t tag) {
        using namespace v4;
        return ((static_cast<uint32_t>(source) + (1u << (kSourceBits - 1))) >> kSourceBits) |
               ((static_cast<uint32_t>(tag) + (1u << (kTagBits - 1))) >> kTagBits);
    }
    // The one address an event's word holds: the element it matched, else its own.
    static uint64_t address_of(const Event &e) { return e.matched != 0 ? e.matched : e.id; }
    // Whether the address a needs a base record first (base: its kind's high
    // bits in force): 0 when it does not. 0 itself always fits.
    static uint64_t needs_base(uint64_t a, uint64_t base) {
        using namespace v5;
        const uint64_t bad = ((a >> kBaseShift) ^ base) | (a & 7) | static_cast<uint64_t>((a & kFieldMask) == 0);
        return a != 0 ? bad : 0;
    }
    // The context as two words: the hint's coll and msg_size as the hint holds
    // them (one load, its reserved half-word left out), and cid with comm_size.
    static uint64_t hint_word(const um_hint_t &hint) {
        static_assert(offsetof(um_hint_t, coll) == 0 && offsetof(um_hint_t, msg_size) == 4 &&
                          __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                      "hint_word reads coll and msg_size as one word");
        uint64_t w;
        std::memcpy(&w, &hint, sizeof w);
        return w & 0xffffffff0000ffffull;
    }
    static uint64_t cid_word(uint32_t cid, const um_hint_t &hint) { return uint64_t{cid} << 32 | hint.comm_size; }

    void put(uint32_t cid, const um_hint_t &hint, const Event &e) {
        using namespace v4;
        const uint64_t hw = hint_word(hint), cw = cid_word(cid, hint);
        const uint64_t address = address_of(e);
        const unsigned kind = v5::kind_of(static_cast<uint8_t>(e.op), e.result);
        const uint64_t changed =
            (hw ^ hint_word_) | (cw ^ cid_word_) | wide(e.source, e.tag) | needs_base(address, base_[kind]);
        if (__builtin_expect((changed | (n_ >= due_)) != 0, 0)) {
            prefix(hw, cw, e.source, e.tag, address, kind);
        }
        // A wide event's bits that spill into the source and tag fields are
        // ignored by the reader (the wide record has them whole).
        const uint64_t source = static_cast<uint32_t>(e.source) & ((1u << kSourceBits) - 1);
        const uint64_t tag = static_cast<uint32_t>(e.tag) & ((1u << kTagBits) - 1);
        buf_[n_++] = (address & v5::kFieldMask) << (v5::kAddressShift - 3) | tag << v5::kTagShift | source << 6 |
                     static_cast<uint64_t>(e.result) << 4 | static_cast<uint8_t>(e.op);
    }
    // The records due before an event (time, context, base, wide), after
    // flushing a full buffer; sets due_. The event comes as scalars: by
    // reference the caller would store it to memory on every event for this
    // rare call.
    virtual void prefix(uint64_t hw, uint64_t cw, int32_t source, int32_t tag, uint64_t address, unsigned kind) = 0;
    __attribute__((noinline)) void add_locked(uint32_t cid, const um_hint_t &hint, TraceOp op, uint8_t result,
                                              int32_t source, int32_t tag, uint64_t id, uint64_t matched) {
        std::lock_guard<std::mutex> lock(mu_);
        put(cid, hint, {op, result, source, tag, id, matched});
    }

    // The append's state first, together (one cache line).
    size_t n_ = 0;            // words at buf_
    size_t due_ = 0;          // at this n_ the next event takes prefix()
    uint64_t *buf_ = nullptr; // where records go, in words (the Recorder's writer's area)
    uint64_t hint_word_ = 0, cid_word_ = 0; // the context in force (hint_word(), cid_word())
    uint64_t base_[2] = {0, 0};             // each kind's address bits 29..63 in force
    const bool threads_;
    std::mutex mu_; // threads_: every append and the Recorder's writes
};

} // namespace trace
} // namespace ubermatch

#endif

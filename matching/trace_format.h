// The records of a matching trace file (version 4) as the recorder writes
// them: what engine.h's inline append (trace_sink.h) needs, apart from the
// reading side's types in trace.h.
#ifndef UBERMATCH_MATCHING_TRACE_FORMAT_H
#define UBERMATCH_MATCHING_TRACE_FORMAT_H

#include <cstddef>
#include <cstdint>

namespace ubermatch {
namespace trace {

enum class TraceOp : uint8_t {
    comm_create = 1, // source: this rank in the communicator, tag: its size, result: the
                     // engine's relaxations (registry.h) | kInternalEngine (in the file:
                     // matched = result << 3)
    post_recv = 2,
    arrive = 3,
    probe = 4,
    mprobe = 5,
    cancel = 6,       // result: 1 when removed
    coll_begin = 7,
    coll_end = 8,
    end = 9,          // last record; t_ns: events dropped
    // Only in version 3 and 4 files, never in TraceFile::records:
    context = 10, // the cid, msg_size and hint_comm_size (version 4: and coll) of the events after it
    time = 11,    // clock ticks now; the events between two time records are interpolated
    high = 12,    // version 3: bits 48..63 of the next event's id and matched (addresses above 2^48)
    wide = 13,    // version 4: what the next event's 16 bytes cannot hold (see PackedRecord)
};

// An operation of the events (comm_create .. coll_end), not a record of the file's own.
inline bool is_event(uint8_t op) {
    return op >= static_cast<uint8_t>(TraceOp::comm_create) && op < static_cast<uint8_t>(TraceOp::end);
}

// Version 4's record in the file: two words, the TraceOp in the low 4 bits of
// a; the rest depends on it:
//   events (comm_create .. coll_end), 8-aligned addresses below 2^48 and
//   source, tag in 13 and 19 signed bits (comm_create: this rank, the size):
//     a = id[3..47] << 19 | source << 6 | result << 4 | op
//     b = matched[3..47] << 19 | tag
//     cid, msg_size, hint_comm_size, coll: the last context record's
//   wide, before an event that does not fit: its full source and tag, and its
//     addresses' bits 0..2 and 48..63 (the event's own fields hold the rest):
//     a = matched[48..63] << 42 | matched[0..2] << 39 | id[48..63] << 23 | id[0..2] << 20 | op
//     b = tag << 32 | source (as uint32)
//   context: a = cid << 32 | coll << 4 | op, b = msg_size << 32 | hint_comm_size
//   time:    b = clock ticks since t0_ns
//   end:     b = events dropped
// Every buffer written starts with a time and a context record. A write that
// fails twice ends the file at the last whole record before it (trace_writer.h).
struct PackedRecord {
    uint64_t a;
    uint64_t b;
};
static_assert(sizeof(PackedRecord) == 16, "packed trace record layout");
namespace v4 {
constexpr unsigned kSourceBits = 13, kTagBits = 19, kIdShift = 16; // id[3..47] << 19 = (id << 16)'s bits 19..63
constexpr uint64_t kOpMask = 0xf;
// Address bits an event's own record cannot hold (then a wide record goes first).
constexpr uint64_t kWideAddress = ~((uint64_t{1} << 48) - 1) | 7;
} // namespace v4
inline uint8_t op_of(const PackedRecord &p) { return static_cast<uint8_t>(p.a & v4::kOpMask); }

// One time record per this many records: the clock read is the largest part
// of a record's cost otherwise (docs/traces.md, "What a record costs").
constexpr size_t kTimeEvery = 64;

} // namespace trace
} // namespace ubermatch

#endif

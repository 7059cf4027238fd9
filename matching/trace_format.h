// The records of a matching trace file (version 5) as the recorder writes
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
    // Only in version 3 to 5 files, never in TraceFile::records:
    context = 10, // the cid, msg_size and hint_comm_size (version 4: and coll) of the events after it
    time = 11,    // clock ticks now; the events between two time records are interpolated
    high = 12,    // version 3: bits 48..63 of the next event's id and matched (addresses above 2^48)
    wide = 13,    // version 4 and 5: what the next event's record cannot hold (see PackedRecord)
    base = 14,    // version 5: an address's high bits (see PackedRecord)
};

// An operation of the events (comm_create .. coll_end), not a record of the file's own.
inline bool is_event(uint8_t op) {
    return op >= static_cast<uint8_t>(TraceOp::comm_create) && op < static_cast<uint8_t>(TraceOp::end);
}

// The file is a sequence of 16-byte units (PackedRecord), the TraceOp of
// each in the low 4 bits of its a.
//
// Version 5 (since 2026-12-03): an event is one 8-byte word, two to a unit
// (a unit whose a is an event holds a second event in b, or 0: none). What
// the engine's call needs is at most one address (the element it matched,
// else its own), so a word holds the operation, the result, source and tag
// in 13 and 19 signed bits, and that address's bits 3..28; its bits 29..63
// are those of the last base record of its kind (kind_of). Half the bytes of
// version 4 for the buffer and the kernel's copy (docs/traces.md, "Version 5").
//   event word: op | result << 4 | source << 6 | tag << 19 | address[3..28] << 38
//   base, before an event whose address does not fit the word:
//     a = low3 << 8 | exact << 7 | kind << 4 | op, b = address >> 29
//     (low3: the address's bits 0..2 and exact: the address is not 0 though
//     its bits 3..28 are; both for the next event only)
//   wide, before an event whose source or tag does not fit: a = tag << 32 | op,
//     b = source (as uint32)
// Version 4: every event a unit of its own, with both addresses:
//     a = id[3..47] << 19 | source << 6 | result << 4 | op
//     b = matched[3..47] << 19 | tag
//   and its wide record: a = matched[48..63] << 42 | matched[0..2] << 39 |
//     id[48..63] << 23 | id[0..2] << 20 | op, b = tag << 32 | source.
// Both versions:
//   context: a = cid << 32 | coll << 4 | op, b = msg_size << 32 | hint_comm_size
//   time:    b = clock ticks since t0_ns
//   end:     b = events dropped
// Every buffer written starts with a time and a context record. A write that
// fails twice ends the file at the last whole unit before it (trace_writer.h).
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
namespace v5 {
constexpr unsigned kTagShift = 19, kAddressShift = 38, kBaseShift = 29;
constexpr uint64_t kFieldMask = ((uint64_t{1} << kBaseShift) - 1) & ~uint64_t{7}; // address bits 3..28
// The kind of an event's address, each with its own base: a receive's, or a
// message's (either may be matched or queued: which follows from op and result).
inline unsigned kind_of(uint8_t op, uint8_t result) {
    return static_cast<unsigned>(op == static_cast<uint8_t>(TraceOp::arrive)) ^ static_cast<unsigned>(result == 1);
}
} // namespace v5
inline uint8_t op_of(const PackedRecord &p) { return static_cast<uint8_t>(p.a & v4::kOpMask); }
// The events a version 5 unit holds: 0, 1 or 2.
inline unsigned events_in(const PackedRecord &p) {
    return is_event(op_of(p)) ? 1u + static_cast<unsigned>(p.b != 0) : 0u;
}

// One time record per this many words of the buffer (an event one, a record
// two): the clock read is the largest part of a record's cost otherwise
// (docs/traces.md, "What a record costs").
constexpr size_t kTimeEvery = 64;

} // namespace trace
} // namespace ubermatch

#endif

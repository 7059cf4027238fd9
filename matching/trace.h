// Matching traces: what each rank's engines saw, recorded at the engine
// interface and replayed offline through every backend (replay/).
//
// File format (version 2), one file per rank, TRACE_DIR/rank-R.umt, little
// endian: a 56-byte TraceHeader, then 48-byte TraceRecords in call order, the
// last one TraceOp::end (its t_ns holds the events dropped). docs/traces.md
// documents the fields and why this is not OTF2. Version 2 records addresses
// and clock ticks, which read_file turns into ids and ns: the recording side
// then needs no look-up and no clock_gettime per event.
#ifndef UBERMATCH_MATCHING_TRACE_H
#define UBERMATCH_MATCHING_TRACE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "matching/engine.h"

namespace ubermatch {
namespace trace {

constexpr char kMagic[8] = {'U', 'M', 'T', 'R', 'A', 'C', 'E', '\0'};
constexpr uint32_t kVersion = 2;

enum class TraceOp : uint8_t {
    comm_create = 1, // source: this rank in the communicator, tag: its size
    post_recv = 2,
    arrive = 3,
    probe = 4,
    mprobe = 5,
    cancel = 6,       // result: 1 when removed
    coll_begin = 7,
    coll_end = 8,
    end = 9,          // last record; t_ns: events dropped
};

struct TraceHeader {
    char magic[8];
    uint32_t version;
    uint32_t record_size; // sizeof(TraceRecord)
    int32_t rank;         // in MPI_COMM_WORLD (-1: unknown)
    uint32_t reserved;
    uint64_t t0_ns;       // CLOCK_MONOTONIC at the start
    double ns_per_tick;   // records' t_ns in the file: clock ticks since the start; written at the end
    char backend[16];     // the recorded run's backend, NUL-padded
};
static_assert(sizeof(TraceHeader) == 56, "trace header layout");

// In the file, id and matched are the addresses the engine was given (unique
// among the elements queued at one time) and t_ns is in ticks; read_file
// replaces them by ids 1, 2, ... (per file) and ns since t0_ns.
struct TraceRecord {
    uint64_t t_ns;     // since t0_ns
    uint32_t cid;
    uint8_t op;        // TraceOp
    uint8_t result;    // searches: 1 matched, 0 not, 2 error; cancel: 1 removed
    uint16_t coll;     // hint.coll
    int32_t source;    // or UM_ANY_SOURCE
    int32_t tag;       // or UM_ANY_TAG
    uint32_t msg_size; // hint.msg_size
    uint32_t hint_comm_size;
    uint64_t id;       // the posted receive's / arrived message's id; cancel: the receive's
    uint64_t matched;  // the id of the element it matched, 0: none, kUnknownId: not queued
};
static_assert(sizeof(TraceRecord) == 48, "trace record layout");

// A recorded match of an element that was not queued (a damaged trace, or one
// with dropped events): never equal to an id, so a replay reports it.
constexpr uint64_t kUnknownId = UINT64_MAX;

// Starts recording into dir (created if missing); "" or nullptr: off (for the
// engines created from then on).
// threads: engines may be called from several threads at once (a lock per
// record; without it none). Returns false with a message in err when dir
// cannot be used.
bool start(const char *dir, bool threads, std::string &err);
bool on();

// The engine-creation hook: while recording, wraps e in an engine that records
// every call (rank: this process's rank in the communicator); else returns e.
std::unique_ptr<Engine> record(std::unique_ptr<Engine> e, uint32_t cid, int32_t rank);

// A whole trace file, checked. Throws std::runtime_error naming the file and
// what is wrong (truncated, not a trace, another version, corrupt record).
// The records come back with ids and ns (see TraceRecord).
struct TraceFile {
    std::string path;
    TraceHeader header{};
    std::vector<TraceRecord> records; // without the end record
    uint64_t dropped = 0;
};
TraceFile read_file(const std::string &path);
const char *op_name(uint8_t op);

} // namespace trace
} // namespace ubermatch

#endif

// Matching traces: what each rank's engines saw, recorded at the engine
// interface and replayed offline through every backend (replay/).
//
// File format (version 5), one file per rank, TRACE_DIR/rank-R.umt, little
// endian: a 56-byte TraceHeader, then 16-byte units (PackedRecord) in call
// order, two events to a unit, the last one TraceOp::end. docs/traces.md documents the fields and why this is
// not OTF2. The file records addresses, clock ticks every kTimeEvery records
// and the communicator and hint only when they change; read_file turns them
// into one TraceRecord per event with ids and ns. Versions 2 (48-byte records,
// each with every field and its own tick), 3 (24-byte records) and 4 (an
// event a unit) are still read.
#ifndef UBERMATCH_MATCHING_TRACE_H
#define UBERMATCH_MATCHING_TRACE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "matching/engine.h"
#include "matching/trace_format.h"

namespace ubermatch {
namespace trace {

constexpr char kMagic[8] = {'U', 'M', 'T', 'R', 'A', 'C', 'E', '\0'};
constexpr uint32_t kVersion = 5;
constexpr uint32_t kOldestVersion = 2; // read_file reads kOldestVersion .. kVersion

struct TraceHeader {
    char magic[8];
    uint32_t version;
    uint32_t record_size; // sizeof(PackedRecord) (version 3: PackedRecordV3, 2: TraceRecord)
    int32_t rank;         // in MPI_COMM_WORLD (-1: unknown)
    uint32_t job;         // the recording run's job id, the same in each of its files (0: unknown)
    uint64_t t0_ns;       // CLOCK_MONOTONIC at the start
    double ns_per_tick;   // records' t_ns in the file: clock ticks since the start; written at the end
    char backend[16];     // the recorded run's backend, NUL-padded
};
static_assert(sizeof(TraceHeader) == 56, "trace header layout");

// One event as read_file returns it (and version 2's record in the file, with
// id and matched the addresses the engine was given, unique among the elements
// queued at one time, and t_ns in ticks; read_file replaces them by ids 1, 2,
// ... per file and ns since t0_ns).
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

// Version 3's record (read only). The low byte of b is the TraceOp:
//   events: a = id << 16 | coll, b = matched << 16 | result << 8 | op (addresses' low 48 bits),
//     source, tag; cid, msg_size, hint_comm_size: the last context record's
//   context: a = msg_size << 32 | hint_comm_size, source = cid
//   time: a = clock ticks; high: a = bits 48..63 of the next id, source = those of its matched
//   end: a = events dropped
struct PackedRecordV3 {
    uint64_t a;
    uint64_t b;
    int32_t source;
    int32_t tag;
};
static_assert(sizeof(PackedRecordV3) == 24, "version 3 trace record layout");
inline uint8_t op_of(const PackedRecordV3 &p) { return static_cast<uint8_t>(p.b); }
// A recorded match of an element that was not queued (a damaged trace, or one
// with dropped events): never equal to an id, so a replay reports it.
constexpr uint64_t kUnknownId = UINT64_MAX;

// How a trace file is written (trace_writer.h; pml_ubermatch_trace_direct).
enum class WriteMode : int {
    buffered = 0,  // always through the page cache
    direct = 1,    // direct I/O where the file system takes it, else buffered
    automatic = 2, // buffered until the page cache is slow, then direct
};

// Starts recording into dir (created if missing); "" or nullptr: off (for the
// engines created from then on).
// threads: engines may be called from several threads at once (a lock per
// record; without it none). mode: how the files are written. Returns false
// with a message in err when dir cannot be used.
bool start(const char *dir, bool threads, std::string &err, WriteMode mode = WriteMode::automatic);
// The run's job id for the files' headers, and the tag of its file names
// (TAG-rank-R.umt; empty: rank-R.umt), for the files created from now on:
// a spawned job's ranks count from 0 too, and must not write its parent's files.
void set_job(uint32_t job, const std::string &tag);
bool on();
// While recording: writes what is recorded when nothing was since the last
// call (the PML calls it every few million idle progress rounds), so that the
// files of a job killed in a hang hold all it recorded.
void idle();

// comm_create's result bit for the engine of Open MPI's own traffic (negative
// tags) that a communicator with a relaxed engine keeps beside it: the two
// record under one cid, and a replay keeps them apart as the PML does.
constexpr uint8_t kInternalEngine = 16;

// The engine-creation hook: while recording, has e record every call from
// now on (Engine::attach_trace; rank: this process's rank in the
// communicator; internal: the engine of Open MPI's traffic beside a relaxed
// one), with a first record of its creation; returns e.
std::unique_ptr<Engine> record(std::unique_ptr<Engine> e, uint32_t cid, int32_t rank, bool internal = false);

// A whole trace file, checked. Throws std::runtime_error naming the file and
// what is wrong (truncated, not a trace, another version, corrupt record).
// The records come back with ids and ns (see TraceRecord), one per event.
// partial: a file cut short (its run died before MPI_Finalize: no end record)
// is read up to where its records stop, and marked cut; the events recorded
// after its last write are not in it, and its times are clock ticks where
// the run had not yet written their rate (header.ns_per_tick 1).
struct TraceFile {
    std::string path;
    TraceHeader header{};
    std::vector<TraceRecord> records; // without the end record
    uint64_t dropped = 0;
    bool cut = false;
};
TraceFile read_file(const std::string &path, bool partial = false);
const char *op_name(uint8_t op);

} // namespace trace
} // namespace ubermatch

#endif

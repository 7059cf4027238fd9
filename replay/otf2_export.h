// ubermatch-replay --otf2 DIR: a matching trace as an OTF2 archive, the format
// Score-P writes and Vampir, otf2-print and the other tools of the field read.
// Our own format stays what is recorded and replayed (docs/traces.md, "Why not
// OTF2"); this converter takes its records to those tools: a location per rank,
// every engine call an instant region (post_recv, arrive, probe, mprobe, cancel,
// comm_create) whose attributes hold what OTF2's MPI events cannot (wildcards,
// the communicator, the result, the matched element), each collective a region
// from its begin to its end, and the queues' lengths as two metrics per rank.
#ifndef UBERMATCH_REPLAY_OTF2_EXPORT_H
#define UBERMATCH_REPLAY_OTF2_EXPORT_H

#include <string>
#include <vector>

#include "matching/trace.h"

namespace ubermatch {
namespace replay {

struct Otf2Summary {
    std::string anchor; // the archive's anchor file (DIR/matching.otf2)
    uint64_t events = 0;
};

// Writes files as an OTF2 archive in dir, which must not exist yet or be empty.
// Throws std::runtime_error naming dir and what failed.
Otf2Summary export_otf2(const std::vector<trace::TraceFile> &files, const std::string &dir);

} // namespace replay
} // namespace ubermatch

#endif

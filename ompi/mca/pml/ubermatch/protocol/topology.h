// hwloc's part: how large the shared-memory rings of shm.h are.
//
// A process writes a ring to each other process of its node and reads one
// from each: 2 (n - 1) rings with n processes there. Their cells cycle
// through whole laps, so a ring larger than its share of the core's L2 cache
// sends each message's lines through L3 or memory at both ends, and the rings
// of a full node grow as n^2 (256 KiB each: 4 GiB of /dev/shm at 128
// processes). So a ring gets an equal share of the L2 cache of the core the
// process runs on: L2 / (2 (n - 1)), a power of two, between what four of the
// largest records need (the eager limit) and 256 KiB, the size before: larger
// rings measured no faster, smaller ones faster once 2 (n - 1) rings of 256 KiB
// outgrow the L2 (bench/protocol/ring_footprint, README "hwloc").
#ifndef UBERMATCH_PROTOCOL_TOPOLOGY_H
#define UBERMATCH_PROTOCOL_TOPOLOGY_H

#include <hwloc.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ompi/mca/pml/ubermatch/protocol/shm.h"

namespace ubermatch::protocol {

struct RingPlan {
    uint32_t cells;  // of shm::kCell bytes
    std::string why; // one line for verbose output
};

// 512 KiB: a window of 64 records of 8 KiB (the default eager limit) nearly
// fits, where 256 KiB rings sent half of it through UCX (docs/message-path.md).
constexpr uint32_t kMaxRingCells = 2 * shm::kDefaultCells;

// `where`: the PUs this process may run on (nullptr: the whole machine);
// `local_procs`: processes of the job on this node, this one included.
// Throws std::bad_alloc only.
RingPlan plan_rings(hwloc_topology_t topology, hwloc_const_cpuset_t where, unsigned local_procs,
                    size_t eager_limit);

// The same for this process on this machine (its binding, if any); on any
// hwloc failure the default size, and why.
RingPlan plan_rings_here(unsigned local_procs, size_t eager_limit);

} // namespace ubermatch::protocol

#endif

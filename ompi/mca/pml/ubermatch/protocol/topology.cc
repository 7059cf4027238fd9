// Ring sizes from the cache hierarchy (topology.h says why).
#include "ompi/mca/pml/ubermatch/protocol/topology.h"

#include <algorithm>

#include "ompi/mca/pml/ubermatch/protocol/shm.h"

namespace ubermatch::protocol {

namespace {

std::string kib(uint64_t bytes) {
    return bytes % (1024 * 1024) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                      : std::to_string(bytes >> 10) + " KiB";
}

uint32_t pow2_at_most(uint64_t n) {
    uint32_t p = 1;
    while (uint64_t{p} * 2 <= n && p < (1u << 30)) {
        p *= 2;
    }
    return p;
}

// Fewest cells that hold four records of the largest payload (shm::max_payload)
// the ring must take whatever its size (shm::eager_limit).
uint32_t floor_cells(size_t eager_limit) {
    const size_t must = std::min(eager_limit, shm::kEagerFloor);
    uint32_t cells = 1024; // 64 KiB
    while (shm::max_payload(cells) < must && cells < shm::kDefaultCells) {
        cells *= 2;
    }
    return cells;
}

} // namespace

RingPlan plan_rings(hwloc_topology_t topology, hwloc_const_cpuset_t where, unsigned local_procs,
                    size_t eager_limit) {
    if (where == nullptr) {
        where = hwloc_topology_get_topology_cpuset(topology);
    }
    const std::string plain = " (" + kib(uint64_t{shm::kDefaultCells} * shm::kCell) + " without hwloc)";
    if (local_procs < 2) {
        return {shm::kDefaultCells, "no other process of the job on this node: no rings" + plain};
    }
    // The smallest L2 among the cores this process may run on.
    uint64_t l2 = 0;
    for (hwloc_obj_t c = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_L2CACHE, nullptr); c != nullptr;
         c = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_L2CACHE, c)) {
        if (c->attr != nullptr && c->attr->cache.size > 0 && hwloc_bitmap_intersects(c->cpuset, where)) {
            l2 = l2 == 0 ? c->attr->cache.size : std::min<uint64_t>(l2, c->attr->cache.size);
        }
    }
    if (l2 == 0) {
        return {shm::kDefaultCells, "no L2 cache size known for this process's cores: rings of " +
                                        kib(uint64_t{shm::kDefaultCells} * shm::kCell)};
    }
    const uint64_t rings = 2 * (uint64_t{local_procs} - 1);
    const uint32_t lo = floor_cells(eager_limit);
    const uint32_t cells = std::clamp(pow2_at_most(l2 / rings / shm::kCell), lo, kMaxRingCells);
    return {cells, "L2 cache " + kib(l2) + " per core, " + std::to_string(local_procs) +
                       " processes on this node, " + std::to_string(rings) + " rings per process: rings of " +
                       kib(uint64_t{cells} * shm::kCell) + " (" + kib(uint64_t{lo} * shm::kCell) + " .. " +
                       kib(uint64_t{kMaxRingCells} * shm::kCell) + ") for messages up to " +
                       std::to_string(shm::eager_limit(cells, eager_limit)) + " bytes" + plain};
}

RingPlan plan_rings_here(unsigned local_procs, size_t eager_limit) {
    hwloc_topology_t topology = nullptr;
    if (hwloc_topology_init(&topology) != 0) {
        return {shm::kDefaultCells, "hwloc_topology_init failed: rings of 256 KiB"};
    }
    RingPlan plan{shm::kDefaultCells, "hwloc_topology_load failed: rings of 256 KiB"};
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (hwloc_topology_load(topology) == 0 && bound != nullptr) {
        const bool known = hwloc_get_cpubind(topology, bound, HWLOC_CPUBIND_PROCESS) == 0 &&
                           !hwloc_bitmap_iszero(bound);
        try {
            plan = plan_rings(topology, known ? bound : nullptr, local_procs, eager_limit);
        } catch (...) {
            hwloc_bitmap_free(bound);
            hwloc_topology_destroy(topology);
            throw;
        }
    }
    hwloc_bitmap_free(bound);
    hwloc_topology_destroy(topology);
    return plan;
}

} // namespace ubermatch::protocol

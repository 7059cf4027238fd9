// hwloc's choice of ring sizes (protocol/topology.h) on synthetic machines:
// the L2 share per ring, its bounds, and the fallbacks.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <string>

#include "ompi/mca/pml/ubermatch/protocol/shm.h"
#include "ompi/mca/pml/ubermatch/protocol/topology.h"

using namespace ubermatch::protocol;

namespace {

constexpr size_t kEager = 32768; // pml_ubermatch_shm_eager_limit's default

// A machine described in hwloc's synthetic syntax (no real hardware read).
class Synthetic {
public:
    explicit Synthetic(const char *description) {
        REQUIRE(hwloc_topology_init(&topology_) == 0);
        REQUIRE(hwloc_topology_set_synthetic(topology_, description) == 0);
        REQUIRE(hwloc_topology_load(topology_) == 0);
    }
    ~Synthetic() { hwloc_topology_destroy(topology_); }
    RingPlan plan(unsigned procs, size_t eager = kEager) {
        return plan_rings(topology_, nullptr, procs, eager);
    }

private:
    hwloc_topology_t topology_ = nullptr;
};

// Like this machine: 2 cores, 1 MiB L2 each, one 32 MiB L3.
constexpr const char *kEpyc2 = "Package:1 L3Cache:1(size=33554432) L2Cache:2(size=1048576) Core:1 PU:1";

} // namespace

TEST_CASE("two processes: half the L2 each, 512 KiB at most") {
    Synthetic m(kEpyc2);
    const RingPlan p = m.plan(2);
    CHECK(p.cells * shm::kCell == 512 * 1024); // 1 MiB / 2 rings
    CHECK(p.why.find("L2 cache 1 MiB") != std::string::npos);
    CHECK(p.why.find("rings of 512 KiB") != std::string::npos);
    Synthetic big("Package:1 L2Cache:2(size=4194304) Core:1 PU:1");
    CHECK(big.plan(2).cells * shm::kCell == 512 * 1024); // 4 MiB / 2 rings, capped
}

TEST_CASE("more processes on the node: smaller rings, down to what four records need") {
    Synthetic m(kEpyc2);
    CHECK(m.plan(3).cells * shm::kCell == 256 * 1024); // 1 MiB / 4 rings
    CHECK(m.plan(5).cells * shm::kCell == 128 * 1024); // 1 MiB / 8 rings
    CHECK(m.plan(8).cells * shm::kCell == 64 * 1024);  // 1 MiB / 14 rings, a power of two below
    CHECK(m.plan(128).cells * shm::kCell == 64 * 1024); // the floor
    // Rings grow only for four records of 8 KiB: a larger limit is cut to what
    // the ring takes.
    const size_t largest = shm::max_payload(shm::kDefaultCells);
    CHECK(m.plan(128, largest).cells * shm::kCell == 64 * 1024);
    CHECK(shm::max_payload(m.plan(8, 20000).cells) >= shm::kEagerFloor);
}

TEST_CASE("the eager limit follows the ring: a 16th of it, 8 KiB at least, the parameter at most") {
    Synthetic m(kEpyc2);
    CHECK(shm::eager_limit(m.plan(2).cells, kEager) == 32768);  // 512 KiB rings
    CHECK(shm::eager_limit(m.plan(3).cells, kEager) == 16384);  // 256 KiB
    CHECK(shm::eager_limit(m.plan(5).cells, kEager) == 8192);   // 128 KiB
    CHECK(shm::eager_limit(m.plan(128).cells, kEager) == 8192); // 64 KiB: the floor, four records
    CHECK(shm::eager_limit(m.plan(2).cells, 12000) == 12000);   // the parameter bounds it
    CHECK(shm::eager_limit(m.plan(128).cells, 4096) == 4096);   // below the floor too
    CHECK(shm::eager_limit(m.plan(2).cells, 0) == 0);           // no rings
    CHECK(m.plan(2).why.find("for messages up to 32768 bytes") != std::string::npos);
    for (unsigned procs : {2u, 3u, 5u, 8u, 128u}) {
        const uint32_t cells = m.plan(procs, shm::max_payload(shm::kDefaultCells)).cells;
        CHECK(shm::max_payload(cells) >= shm::eager_limit(cells, shm::max_payload(shm::kDefaultCells)));
    }
}

TEST_CASE("a large L2 keeps large rings for more processes") {
    Synthetic m("Package:1 L2Cache:4(size=4194304) Core:1 PU:1");
    CHECK(m.plan(2).cells == kMaxRingCells);
    CHECK(m.plan(9).cells * shm::kCell == 256 * 1024);  // 4 MiB / 16 rings
    CHECK(m.plan(17).cells * shm::kCell == 128 * 1024); // 4 MiB / 32 rings
    Synthetic small("Package:1 L2Cache:4(size=262144) Core:1 PU:1");
    CHECK(small.plan(2).cells * shm::kCell == 128 * 1024); // 256 KiB / 2 rings
}

TEST_CASE("without an L2 size or another process on the node: the default, and why") {
    Synthetic no_l2("Package:1 Core:2 PU:1");
    const RingPlan p = no_l2.plan(4);
    CHECK(p.cells == shm::kDefaultCells);
    CHECK(p.why.find("no L2 cache size") != std::string::npos);
    Synthetic m(kEpyc2);
    CHECK(m.plan(1).cells == shm::kDefaultCells);
    CHECK(m.plan(1).why.find("no other process") != std::string::npos);
}

TEST_CASE("the L2 of the cores this process may run on") {
    hwloc_topology_t t = nullptr;
    REQUIRE(hwloc_topology_init(&t) == 0);
    REQUIRE(hwloc_topology_set_synthetic(t, "Package:2 L2Cache:2(size=524288) Core:1 PU:1") == 0);
    REQUIRE(hwloc_topology_load(t) == 0);
    hwloc_bitmap_t pu0 = hwloc_bitmap_alloc();
    hwloc_bitmap_only(pu0, 0);
    CHECK(plan_rings(t, pu0, 2, kEager).cells * shm::kCell == 256 * 1024); // 512 KiB / 2
    hwloc_bitmap_free(pu0);
    hwloc_topology_destroy(t);
}

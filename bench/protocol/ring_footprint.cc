// The premise of hwloc's ring sizes (protocol/topology.h), measured: one core
// writes and reads R rings in turn, a window of 64 records of S bytes into
// each, copying every payload out as delivery does; R = 2 (n - 1), the rings
// a process with n - 1 peers on its node writes and reads. All R rings' cells
// cycle through this core's caches. Per n: ns per record with rings of 256 KiB
// (pml_ubermatch_hwloc 0) and of hwloc's size for this machine, and their
// ratio; the fastest of --reps repetitions (robust on a shared machine).
//
//   ring_footprint [--reps N] [--procs 2,3,5,8] [SIZE...]   (default 8 1024 8192)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ompi/mca/pml/ubermatch/protocol/shm.h"
#include "ompi/mca/pml/ubermatch/protocol/topology.h"

using namespace ubermatch::protocol;

namespace {

constexpr int kWindow = 64;

struct Pair {
    std::unique_ptr<shm::Sender> tx;
    std::unique_ptr<shm::Receiver> rx;
};

// ns per record, the fastest of `reps`; 0 when a ring cannot be made.
double measure(unsigned rings, uint32_t cells, size_t size, int reps) {
    std::vector<Pair> pairs;
    for (unsigned i = 0; i < rings; ++i) {
        std::string err;
        auto tx = std::make_unique<shm::Sender>(cells, err);
        if (!err.empty()) {
            std::fprintf(stderr, "ring_footprint: %s\n", err.c_str());
            return 0;
        }
        auto rx = std::make_unique<shm::Receiver>(tx->name(), err);
        if (!err.empty()) {
            std::fprintf(stderr, "ring_footprint: %s\n", err.c_str());
            return 0;
        }
        pairs.push_back({std::move(tx), std::move(rx)});
    }
    std::vector<unsigned char> out(size + 1, 1), in(size * kWindow + 1);
    // Four laps of every ring per repetition.
    const size_t per_record = shm::cells_for(size) * shm::kCell;
    const size_t windows = std::max<size_t>(
        4 * size_t{rings} * cells * shm::kCell / (per_record * kWindow), 4 * size_t{rings});
    uint64_t check = 0;
    double best = 1e30;
    for (int rep = -1; rep < reps; ++rep) { // rep -1: warm-up
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t w = 0; w < windows; ++w) {
            Pair &p = pairs[w % rings];
            WireHeader h{1, 0, 5, static_cast<uint32_t>(w), 0, 0, 0, 0};
            int got = 0;
            auto take = [&](const shm::RecordHeader &r, const void *payload) {
                std::memcpy(&in[static_cast<size_t>(got) * size], payload, r.length);
                check += r.length != 0 ? in[static_cast<size_t>(got) * size] : 1;
                ++got;
                return true;
            };
            for (int k = 0; k < kWindow; ++k) {
                out[0] = static_cast<unsigned char>(k);
                while (!p.tx->push(h, out.data(), size)) { // a window larger than the ring
                    p.rx->poll(kWindow - got, take);
                }
            }
            while (got < kWindow) {
                p.rx->poll(kWindow - got, take);
            }
        }
        const double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        if (rep >= 0) {
            best = std::min(best, ns / static_cast<double>(windows * kWindow));
        }
    }
    return check != 0 ? best : 0;
}

std::vector<unsigned> parse_list(const char *s) {
    std::vector<unsigned> v;
    for (const char *p = s; *p != '\0';) {
        char *end = nullptr;
        v.push_back(static_cast<unsigned>(std::strtoul(p, &end, 10)));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p != '\0') {
            break;
        }
    }
    return v;
}

} // namespace

int main(int argc, char **argv) {
    int reps = 15;
    std::vector<unsigned> procs{2, 3, 5, 8};
    std::vector<size_t> sizes;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--reps" && i + 1 < argc) {
            reps = std::atoi(argv[++i]);
        } else if (a == "--procs" && i + 1 < argc) {
            procs = parse_list(argv[++i]);
        } else if (!a.empty() && a[0] != '-') {
            sizes.push_back(std::strtoul(a.c_str(), nullptr, 10));
        } else {
            std::fprintf(stderr, "usage: ring_footprint [--reps N] [--procs 2,3,5,8] [SIZE...]\n");
            return 2;
        }
    }
    if (sizes.empty()) {
        sizes = {8, 1024, 8192};
    }
    std::printf("# procs rings size ring_default ns_default ring_hwloc ns_hwloc hwloc/default\n");
    for (unsigned n : procs) {
        const RingPlan plan = plan_rings_here(n, 8192);
        const unsigned rings = 2 * (n - 1);
        for (size_t size : sizes) {
            if (size > shm::max_payload(std::min(plan.cells, shm::kDefaultCells))) {
                continue;
            }
            const double fixed = measure(rings, shm::kDefaultCells, size, reps);
            const double chosen = measure(rings, plan.cells, size, reps);
            std::printf("%u %u %zu %uKiB %.1f %uKiB %.1f %.3f\n", n, rings, size,
                        shm::kDefaultCells * 64 / 1024, fixed, plan.cells * 64 / 1024, chosen,
                        fixed > 0 ? chosen / fixed : 0.0);
        }
    }
    return 0;
}

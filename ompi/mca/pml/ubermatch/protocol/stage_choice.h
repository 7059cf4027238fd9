// Whether a send streaming rows into the arena packs them through the stage
// (kPackStage: packed in this core's cache, then copied by words) or straight
// into the arena, chosen by measuring both as the job runs. On the machines
// measured neither wins everywhere: with the VM at its fast speed straight
// packing took 0.6-0.7x the one-way time of 16-64 KiB rows of 128 B and of
// 16-20^3 sub-cubes, and gave twice the bandwidth; at its slow speed (the same
// VM, its 8 B latency 3.5x) it took 1.05-1.2x the time of the stage
// (docs/message-path.md round 21). So each process keeps the sender's cost
// per byte of each way (its time to pack, the stalls of writing into lines
// the receiver read included) and takes the stage unless straight measures
// clearly cheaper, giving the other way a few sends now and then so that a
// change of machine or load is seen.
#ifndef UBERMATCH_PROTOCOL_STAGE_CHOICE_H
#define UBERMATCH_PROTOCOL_STAGE_CHOICE_H

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "matching/ticks.h"

namespace ubermatch {
namespace protocol {

class StageChoice {
public:
    // Of every kPeriod sends, the first kTrials go the way that measured
    // worse (or was not measured yet): at most 1/32 of them the slower way.
    static constexpr uint32_t kPeriod = 64;
    static constexpr uint32_t kTrials = 2;
    // The stage is kept unless straight packing measures below 9/10 of its
    // cost: at the VM's slow speed the sender's times of the two ways were
    // within that while the one-way time through the stage was 0.85-0.95x, and
    // the choice wavered (40% of the sends straight); at the fast speed
    // straight measured far below it.
    static constexpr uint64_t kStraightBelow = 9;

    // The way of the next send: true through the stage.
    bool staged() noexcept {
        const uint32_t n = sends_.fetch_add(1, std::memory_order_relaxed);
        const bool best = cheaper_staged();
        return n % kPeriod < kTrials ? !best : best;
    }
    // A send's packing took `ticks` (now()) for `bytes`.
    void measured(bool staged, uint64_t ticks, size_t bytes) noexcept {
        if (bytes == 0) {
            return;
        }
        // Ticks per KiB, averaged over about the last eight of this way.
        uint64_t cost = ticks * 1024 / bytes + 1; // 0 is "not measured"
        std::atomic<uint64_t> &avg = staged ? staged_cost_ : straight_cost_;
        const uint64_t old = avg.load(std::memory_order_relaxed);
        // A sample counts at most twice or half the average: packing straight
        // now and then took 20-60 times its usual time (the thread preempted,
        // a page first touched), and one such sample flipped the choice for
        // a few hundred sends; a real change still moves it 1.125x a send.
        if (old != 0) {
            cost = std::min(std::max(cost, old / 2), 2 * old);
        }
        avg.store(old == 0 ? cost : old - old / 8 + cost / 8, std::memory_order_relaxed);
    }
    // Whether to take the stage: unless straight measures at most kStraightBelow
    // tenths of its cost. A way not measured yet counts as cheaper (so the
    // first sends try both).
    bool cheaper_staged() const noexcept {
        const uint64_t s = staged_cost_.load(std::memory_order_relaxed);
        const uint64_t d = straight_cost_.load(std::memory_order_relaxed);
        return s == 0 || (d != 0 && d * 10 > s * kStraightBelow);
    }
    // A way's cost as measured (ticks per KiB; 0: not measured).
    uint64_t cost(bool staged) const noexcept {
        return (staged ? staged_cost_ : straight_cost_).load(std::memory_order_relaxed);
    }
    // Only differences on one process's sends are compared: any ticks do.
    static uint64_t now() noexcept { return cheap_ticks(); }

private:
    // Relaxed: under threads senders to different peers stream at once, and a
    // stale or lost update only delays the choice.
    std::atomic<uint32_t> sends_{0};
    std::atomic<uint64_t> staged_cost_{0};
    std::atomic<uint64_t> straight_cost_{0};
};

} // namespace protocol
} // namespace ubermatch

#endif

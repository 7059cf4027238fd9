// A cheap clock for intervals measured within one process: the TSC on x86
// (~10 ns a read on the machines measured, clock_gettime ~24 ns), elsewhere
// nanoseconds. Ticks are not nanoseconds: callers compare them with each
// other, or convert them at the end (the trace recorder measures its rate).
#ifndef UBERMATCH_MATCHING_TICKS_H
#define UBERMATCH_MATCHING_TICKS_H

#include <chrono>
#include <cstdint>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ubermatch {

inline uint64_t cheap_ticks() noexcept {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
#endif
}

} // namespace ubermatch

#endif

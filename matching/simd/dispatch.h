// Choosing the SIMD kernels: the CPU is asked once what it has, "auto" picks
// the best kernel it runs, and a request for an instruction set the CPU lacks
// falls back to that best one with a warning, never to a crash. The feature
// mask is a parameter of select() so that tests can pose as any CPU.
#ifndef UBERMATCH_MATCHING_SIMD_DISPATCH_H
#define UBERMATCH_MATCHING_SIMD_DISPATCH_H

#include <string>
#include <vector>

#include "matching/simd/kernels.h"

namespace ubermatch::simd {

// CPU features, as a bit mask.
enum Feature : unsigned {
    kAvx2 = 1u << 0,
    kAvx512 = 1u << 1, // AVX-512 F, BW, VL and DQ, all four (what the kernels are built for)
};

// What this CPU (and its OS) supports; detected on first use, then cached.
// A ScopedCpuFeatures in a test replaces it.
unsigned cpu_features();

// Tests only: pose as a CPU with the given features until destroyed.
class ScopedCpuFeatures {
public:
    explicit ScopedCpuFeatures(unsigned features);
    ~ScopedCpuFeatures();
    ScopedCpuFeatures(const ScopedCpuFeatures &) = delete;
    ScopedCpuFeatures &operator=(const ScopedCpuFeatures &) = delete;

private:
    bool had_;
    unsigned previous_;
};

struct Selection {
    const Kernels *kernels;
    bool fell_back;      // the request names an instruction set the CPU lacks
    std::string warning; // why, and what is used instead; empty when !fell_back
};

// "auto, avx512, avx2, scalar"
const char *kernel_names();

// request: "auto" (or empty) or one of the kernel names. Throws
// std::invalid_argument, naming the valid choices, for any other value.
Selection select(const std::string &request, unsigned features);
inline Selection select(const std::string &request) { return select(request, cpu_features()); }

// The best kernel for a feature mask ("auto").
const Kernels &best(unsigned features);

// The kernels this CPU runs, best first.
std::vector<const Kernels *> supported(unsigned features);

// The parameters the `vector` and `fuzzy*` backends take from um_params_t.
struct SimdParams {
    Selection kernel;
    double compact_threshold;
};

// Throws std::invalid_argument, naming the valid choices, for an unknown
// kernel or a threshold outside 0 .. 1.
SimdParams simd_params(const um_params_t &params);

} // namespace ubermatch::simd

#endif

#include "matching/simd/dispatch.h"

#include <stdexcept>
#include <string>

namespace ubermatch::simd {

namespace {

unsigned detect() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    unsigned f = 0;
    // libgcc also checks that the OS saves the YMM/ZMM state (XGETBV).
    if (__builtin_cpu_supports("avx2")) {
        f |= kAvx2;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        f |= kAvx512;
    }
    return f;
#else
    return 0;
#endif
}

bool g_overridden = false;
unsigned g_override = 0;

struct Choice {
    const char *name;
    unsigned needs;
    const Kernels &(*table)();
};

// Best first.
const Choice kChoices[] = {
    {"avx512", kAvx512, avx512_kernels},
    {"avx2", kAvx2, avx2_kernels},
    {"scalar", 0, scalar_kernels},
};

const char *isa_text(unsigned needs) {
    return needs == kAvx512 ? "AVX-512F/BW/VL/DQ" : "AVX2";
}

} // namespace

unsigned cpu_features() {
    static const unsigned detected = detect(); // once per process
    return g_overridden ? g_override : detected;
}

ScopedCpuFeatures::ScopedCpuFeatures(unsigned features)
    : had_(g_overridden), previous_(g_override) {
    g_overridden = true;
    g_override = features;
}

ScopedCpuFeatures::~ScopedCpuFeatures() {
    g_overridden = had_;
    g_override = previous_;
}

const char *kernel_names() { return "auto, avx512, avx2, scalar"; }

const Kernels &best(unsigned features) {
    for (const Choice &c : kChoices) {
        if ((features & c.needs) == c.needs) {
            return c.table();
        }
    }
    return scalar_kernels();
}

std::vector<const Kernels *> supported(unsigned features) {
    std::vector<const Kernels *> out;
    for (const Choice &c : kChoices) {
        if ((features & c.needs) == c.needs) {
            out.push_back(&c.table());
        }
    }
    return out;
}

Selection select(const std::string &request, unsigned features) {
    if (request.empty() || request == "auto") {
        return {&best(features), false, {}};
    }
    for (const Choice &c : kChoices) {
        if (request != c.name) {
            continue;
        }
        if ((features & c.needs) == c.needs) {
            return {&c.table(), false, {}};
        }
        const Kernels &fallback = best(features);
        return {&fallback, true,
                std::string("kernel '") + c.name + "' needs " + isa_text(c.needs) +
                    ", which this CPU lacks; using '" + fallback.name + "' instead"};
    }
    throw std::invalid_argument("unknown kernel '" + request + "'; valid kernels are: " +
                                kernel_names());
}

SimdParams simd_params(const um_params_t &params) {
    const double t = params.compact_threshold;
    if (!(t >= 0.0 && t <= 1.0)) { // NaN too
        throw std::invalid_argument("parameter compact_threshold = " + std::to_string(t) +
                                    " is out of range; valid values are 0 .. 1 (1: never compact)");
    }
    return {select(params.kernel != nullptr ? params.kernel : ""), t};
}

} // namespace ubermatch::simd

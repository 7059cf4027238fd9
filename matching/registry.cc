#include "matching/registry.h"

#include "matching/bins.h"
#include "matching/fuzzy.h"
#include "matching/list.h"
#include "matching/perpeer.h"
#include "matching/vector.h"

namespace ubermatch {

namespace {

// Range check of one integer parameter, with the range in the message.
int64_t checked(const char *param, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi) {
        throw std::invalid_argument("parameter " + std::string(param) + " = " +
                                    std::to_string(value) + " is out of range; valid values are " +
                                    std::to_string(lo) + " .. " + std::to_string(hi));
    }
    return value;
}

// Built on first use: callers may run during static initialisation.
const std::vector<Backend> &table() {
    static const std::vector<Backend> kBackends = {
    {"list", "one posted and one unexpected queue per communicator (MPICH style)",
     [](int32_t n, const um_params_t &) -> std::unique_ptr<Engine> {
         return std::make_unique<ListEngine>(n);
     }},
    {"perpeer", "a queue per peer plus an ANY_SOURCE queue (Open MPI ob1 style)",
     [](int32_t n, const um_params_t &) -> std::unique_ptr<Engine> {
         return std::make_unique<PerPeerEngine>(n);
     }},
    {"bins", "hash bins over (source, tag) plus a wildcard queue (Flajslik et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         const int64_t bins = checked("bins", p.bins, BinsEngine::kMinBins, BinsEngine::kMaxBins);
         return std::make_unique<BinsEngine>(n, static_cast<uint32_t>(bins));
     }},
    {"vector", "blocks of source and tag vectors compared a block at a time (SIMD, Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<VectorEngine>(n, simd::simd_params(p));
     }},
    {"fuzzy32", "SIMD over 32-bit fast keys (8 tag over 24 rank bits), verified (Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<FuzzyEngine<uint32_t>>(n, simd::simd_params(p));
     }},
    {"fuzzy16", "SIMD over 16-bit xor-folded fast keys, verified (Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<FuzzyEngine<uint16_t>>(n, simd::simd_params(p));
     }},
    {"fuzzy8", "SIMD over 8-bit xor-folded fast keys, verified (Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<FuzzyEngine<uint8_t>>(n, simd::simd_params(p));
     }},
    };
    return kBackends;
}

} // namespace

const std::vector<Backend> &backends() { return table(); }

const std::string &backend_names() {
    static const std::string names = [] {
        std::string s;
        for (const Backend &b : table()) {
            s += (s.empty() ? "" : ", ") + std::string(b.name);
        }
        return s;
    }();
    return names;
}

um_params_t default_params() {
    um_params_t p{};
    p.bins = 256;
    p.kernel = "auto";
    p.compact_threshold = 0.5;
    return p;
}

std::unique_ptr<Engine> make_engine(const std::string &backend, int32_t comm_size,
                                    const um_params_t &params) {
    if (comm_size < 1) {
        throw std::invalid_argument("communicator size " + std::to_string(comm_size) +
                                    " is out of range; it must be at least 1");
    }
    for (const Backend &b : table()) {
        if (backend == b.name) {
            return b.make(comm_size, params);
        }
    }
    throw std::invalid_argument("unknown matching backend '" + backend +
                                "'; valid backends are: " + backend_names());
}

} // namespace ubermatch

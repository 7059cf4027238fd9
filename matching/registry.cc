#include "matching/registry.h"

#include "matching/auto.h"
#include "matching/bins.h"
#include "matching/colpnp.h"
#include "matching/exact.h"
#include "matching/fuzzy.h"
#include "matching/list.h"
#include "matching/nosource.h"
#include "matching/overtake.h"
#include "matching/perpeer.h"
#include "matching/vector.h"

namespace ubermatch {

namespace {

constexpr int64_t kMaxTimerCutoffNs = 1000000000000; // 1000 s

// Range check of one integer parameter, with the range in the message.
int64_t checked(const char *param, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi) {
        throw std::invalid_argument("parameter " + std::string(param) + " = " +
                                    std::to_string(value) + " is out of range; valid values are " +
                                    std::to_string(lo) + " .. " + std::to_string(hi));
    }
    return value;
}

// The seed-000 backends (colpnp.h), each checking the parameters it uses.
std::unique_ptr<Engine> split(const char *name, int32_t n, const um_params_t &p, bool col, bool pnp) {
    const int64_t theta = pnp ? checked("theta", p.theta, kMinTheta, kMaxTheta) : p.theta;
    const int64_t k_c = col ? checked("k_c", p.k_c, kMinQueueFactor, kMaxQueueFactor) : p.k_c;
    const int64_t k_p = pnp ? checked("k_p", p.k_p, kMinQueueFactor, kMaxQueueFactor) : p.k_p;
    return make_split_engine(name, n, theta, k_c, k_p);
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
    {"fuzzy32", "SIMD over 32-bit fast keys (24 source over 8 tag bits; a wildcard keeps the other part), verified (Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<FuzzyEngine<uint32_t>>(n, simd::simd_params(p));
     }},
    {"fuzzy16", "SIMD over 16-bit fast keys (8 source over 8 tag bits; a wildcard keeps the other part), verified (Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<FuzzyEngine<uint16_t>>(n, simd::simd_params(p));
     }},
    {"fuzzy8", "SIMD over 8-bit fast keys (4 source over 4 tag bits; a wildcard keeps the other part), verified (Dosanjh et al.)",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         return std::make_unique<FuzzyEngine<uint8_t>>(n, simd::simd_params(p));
     }},
    {"auto", "lists while searches are short; when deep, FIFOs hashed by (source, tag), (ANY_SOURCE, tag) and (source, ANY_TAG): flat at any depth; collective apart",
     [](int32_t n, const um_params_t &p) -> std::unique_ptr<Engine> {
         const int64_t index_at = checked("index_at", p.index_at, 2, int64_t{1} << 20);
         checked("list_at", p.list_at, 0, index_at - 1);
         checked("max_index_bytes", p.max_index_bytes, 0, int64_t{1} << 40);
         checked("index_rent", p.index_rent, -1, int64_t{1} << 20); // -1: learnt per queue
         return std::make_unique<AutoEngine>(n, simd::simd_params(p), p);
     }},
    {"pnp", "partner/non-partner queues for all elements (Ghazimirsaeed et al.)",
     [](int32_t n, const um_params_t &p) { return split("pnp", n, p, false, true); }},
    {"col", "profiled per-collective queues for collective elements, a list for the rest (Ghazimirsaeed et al.)",
     [](int32_t n, const um_params_t &p) { return split("col", n, p, true, false); }},
    {"colpnp", "profiled per-collective queues for collective elements, partner/non-partner queues for point-to-point (Ghazimirsaeed et al.)",
     [](int32_t n, const um_params_t &p) { return split("colpnp", n, p, true, true); }},
    {"col+list", "the paper's COL+LL: col's collective queues, one list for point-to-point (same as col)",
     [](int32_t n, const um_params_t &p) { return split("col+list", n, p, true, false); }},
    {"list+pnp", "the paper's LL+PNP: one list for collective elements, partner/non-partner queues for point-to-point",
     [](int32_t n, const um_params_t &p) { return split("list+pnp", n, p, false, true); }},
    // Relaxed backends (issue 14): each refuses, with UM_ERR_ASSERTION, what its assertion excludes.
    {"nosource", "a queue per source and no wildcard-source queue (mpi_assert_no_any_source)",
     [](int32_t n, const um_params_t &) -> std::unique_ptr<Engine> {
         return std::make_unique<NoSourceEngine>(n, false);
     }, "mpi_assert_no_any_source"},
    {"nosource-nounexp", "nosource, and an arrival no receive awaits is refused (mpi_assert_no_any_source + ubermatch_no_unexpected)",
     [](int32_t n, const um_params_t &) -> std::unique_ptr<Engine> {
         return std::make_unique<NoSourceEngine>(n, true);
     }, "mpi_assert_no_any_source,ubermatch_no_unexpected"},
    {"exact", "one hash table from (source, tag) to FIFOs, no wildcard path (mpi_assert_no_any_source + mpi_assert_no_any_tag)",
     [](int32_t n, const um_params_t &) -> std::unique_ptr<Engine> {
         return std::make_unique<ExactEngine>(n, false);
     }, "mpi_assert_no_any_source,mpi_assert_no_any_tag"},
    {"exact-nounexp", "exact, and an arrival no receive awaits is refused (mpi_assert_no_any_source + mpi_assert_no_any_tag + ubermatch_no_unexpected)",
     [](int32_t n, const um_params_t &) -> std::unique_ptr<Engine> {
         return std::make_unique<ExactEngine>(n, true);
     }, "mpi_assert_no_any_source,mpi_assert_no_any_tag,ubermatch_no_unexpected"},
    {"overtake", "one hash table from (source, tag) to its elements, any of which may be taken (mpi_assert_allow_overtaking + mpi_assert_no_any_source + mpi_assert_no_any_tag)",
     [](int32_t n, const um_params_t &) {
         return make_overtake_engine(kOvertakeTable, n, false, "overtake");
     }, "mpi_assert_no_any_source,mpi_assert_no_any_tag,mpi_assert_allow_overtaking"},
    {"overtake-nounexp", "overtake, and an arrival no receive awaits is refused (mpi_assert_allow_overtaking + mpi_assert_no_any_source + mpi_assert_no_any_tag + ubermatch_no_unexpected)",
     [](int32_t n, const um_params_t &) {
         return make_overtake_engine(kOvertakeTable, n, true, "overtake-nounexp");
     }, "mpi_assert_no_any_source,mpi_assert_no_any_tag,mpi_assert_allow_overtaking,ubermatch_no_unexpected"},
    {"overtake-anytag", "overtake, and an ANY_TAG receive takes any message of its source (mpi_assert_allow_overtaking + mpi_assert_no_any_source)",
     [](int32_t n, const um_params_t &) {
         return make_overtake_engine(kOvertakeTable, n, false, "overtake-anytag", true);
     }, "mpi_assert_no_any_source,mpi_assert_allow_overtaking"},
    {"overtake-anytag-nounexp", "overtake-anytag, and an arrival no receive awaits is refused (mpi_assert_allow_overtaking + mpi_assert_no_any_source + ubermatch_no_unexpected)",
     [](int32_t n, const um_params_t &) {
         return make_overtake_engine(kOvertakeTable, n, true, "overtake-anytag-nounexp", true);
     }, "mpi_assert_no_any_source,mpi_assert_allow_overtaking,ubermatch_no_unexpected"},
    };
    return kBackends;
}

} // namespace

const std::vector<Backend> &backends() { return table(); }

uint32_t relaxations_of(const std::string &backend) {
    for (const Backend &b : table()) {
        if (backend == b.name) {
            const std::string a = b.assertion != nullptr ? b.assertion : "";
            auto bit = [&](const char *what, Relaxation r) -> uint32_t {
                return a.find(what) != std::string::npos ? r : 0u;
            };
            return bit("mpi_assert_no_any_source", kNoAnySource) | bit("mpi_assert_no_any_tag", kNoAnyTag) |
                   bit("ubermatch_no_unexpected", kNoUnexpected) | bit("mpi_assert_allow_overtaking", kOvertaking);
        }
    }
    return 0;
}

const std::string &backend_names() {
    static const std::string names = [] {
        std::string full;
        std::string relaxed;
        for (const Backend &b : table()) {
            std::string &s = b.assertion == nullptr ? full : relaxed;
            s += (s.empty() ? "" : ", ") + std::string(b.name);
        }
        return full + "; for communicators with matching assertions: " + relaxed;
    }();
    return names;
}

um_params_t default_params() {
    um_params_t p{};
    p.bins = 256;
    p.kernel = "auto";
    p.compact_threshold = 0.5;
    p.theta = 100;
    p.k_c = 8;
    p.k_p = 8;
    p.index_at = 8; // depths 8-31 indexed: at 16, 1.24-1.40x the rate 32 gave (docs/message-path.md round 17)
    p.list_at = 4;
    p.max_index_bytes = int64_t{64} << 20;
    p.index_rent = -1; // each queue learns it (docs/traces.md, "Learning when to index")
    return p;
}

void check_params(const um_params_t &params) {
    // bins: bins; theta, k_c, k_p: colpnp; the rest: auto (and make_engine).
    for (const char *user : {"bins", "colpnp", "auto"}) {
        make_engine(user, 1, params);
    }
}

std::unique_ptr<Engine> make_engine(const std::string &backend, int32_t comm_size,
                                    const um_params_t &params) {
    if (comm_size < 1) {
        throw std::invalid_argument("communicator size " + std::to_string(comm_size) +
                                    " is out of range; it must be at least 1");
    }
    // The timers belong to the engine base: every backend takes them.
    const int64_t timers = checked("timers", params.timers, 0, 1);
    const int64_t cutoff = checked("timer_cutoff_ns", params.timer_cutoff_ns, 0, kMaxTimerCutoffNs);
    for (const Backend &b : table()) {
        if (backend == b.name) {
            std::unique_ptr<Engine> e = b.make(comm_size, params);
            e->set_timers(timers != 0, static_cast<uint64_t>(cutoff));
            return e;
        }
    }
    throw std::invalid_argument("unknown matching backend '" + backend +
                                "'; valid backends are: " + backend_names());
}

} // namespace ubermatch

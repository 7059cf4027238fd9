// Every registered backend against the reference model, on the same seeded
// random operation sequences, compared after every operation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include "matching/overtake.h"
#include "matching/registry.h"
#include "matching/simd/dispatch.h"
#include "test/engine/oracle.h"
#include "test/engine/parallel.h"
#include "test/engine/test_options.h"
#include "test/engine/workload.h"

using namespace ubermatch;
using namespace ubermatch::test;

namespace {

const char *kind_name(OpKind k) {
    switch (k) {
    case OpKind::post_recv: return "post_recv";
    case OpKind::arrive: return "arrive";
    case OpKind::probe: return "probe";
    case OpKind::mprobe: return "mprobe";
    case OpKind::cancel: return "cancel";
    }
    return "?";
}

// ordered: in the model's order; otherwise as multisets (overtaking engines).
bool same_queue(std::vector<QueuedElement> got, std::vector<OracleEntry> want, bool ordered = true) {
    if (got.size() != want.size()) {
        return false;
    }
    if (!ordered) {
        std::sort(got.begin(), got.end(), [](const QueuedElement &a, const QueuedElement &b) { return a.handle < b.handle; });
        std::sort(want.begin(), want.end(), [](const OracleEntry &a, const OracleEntry &b) { return a.handle < b.handle; });
    }
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i].handle != want[i].handle || got[i].source != want[i].source ||
            got[i].tag != want[i].tag) {
            return false;
        }
    }
    return true;
}

struct RunResult {
    uint64_t ops = 0;
    uint64_t matches = 0;
    uint64_t max_depth = 0;
    uint64_t false_positives = 0; // SIMD backends: at the end of the run
    uint64_t compactions = 0;
    uint64_t kernel = UM_KERNEL_NONE;
    uint64_t queues_grown = 0; // most queues allocated beyond the initial ones (adaptive backends)
    uint64_t reshapes = 0;       // auto: list <-> indexed changes
    uint64_t memory_limited = 0; // auto: indexings refused by max_index_bytes
    double seconds = 0;
    std::string first_difference; // empty: none
};

// What a relaxed backend's assertion excludes (registry.h: Backend::assertion).
// The model then stands for a weaker oracle: an excluded wildcard receive or
// probe must be refused with UM_ERR_ASSERTION and leave the queues as they
// were; under no-unexpected an arrival the model would queue must be refused
// (the model drops it again); everything else as the full model.
struct Relaxed {
    bool no_source = false;
    bool no_tag = false;
    bool no_unexpected = false;
    bool overtaking = false;
    explicit Relaxed(const char *assertion = nullptr) {
        const std::string a = assertion != nullptr ? assertion : "";
        no_source = a.find("mpi_assert_no_any_source") != std::string::npos;
        no_tag = a.find("mpi_assert_no_any_tag") != std::string::npos;
        no_unexpected = a.find("ubermatch_no_unexpected") != std::string::npos;
        overtaking = a.find("mpi_assert_allow_overtaking") != std::string::npos;
    }
    bool excludes(const Op &op) const {
        return op.kind != OpKind::arrive && op.kind != OpKind::cancel &&
               ((no_source && op.source == UM_ANY_SOURCE) || (no_tag && op.tag == UM_ANY_TAG));
    }
};

// A handle no engine returns: the model's answer where the engine's is wrong.
void *const kWrong = reinterpret_cast<void *>(~uintptr_t{0});

// Overtaking (mpi_assert_allow_overtaking): the engine may take any queued
// element MPI's rule pairs with the operation, so the model checks the
// engine's choice and then follows it. What it may do: take any such element
// (an ANY_TAG receive any message of its source, where ANY_TAG is allowed).
// What it must not: take an element that does not match, one not queued
// (taken before: a duplicate), or nothing while a matching element waits (a
// loss); under no-unexpected, refuse an arrival a receive awaits.
// Sets want_rc and returns the handle the model accepts (kWrong: none would do).
void *overtaking_step(Engine &engine, Oracle &model, const Op &op, const Relaxed &relaxed,
                      int32_t comm_size, int &want_rc, int &got_rc, um_match_t &got) {
    const bool arrive = op.kind == OpKind::arrive;
    const bool remove = op.kind != OpKind::probe;
    void *ignored = nullptr;
    switch (op.kind) {
    case OpKind::post_recv: got_rc = engine.post_recv(op.source, op.tag, op.hint, op.handle, &got); break;
    case OpKind::arrive: got_rc = engine.arrive(op.source, op.tag, op.hint, op.handle, &got); break;
    case OpKind::probe: got_rc = engine.probe(op.source, op.tag, op.hint, &got); break;
    default: got_rc = engine.mprobe(op.source, op.tag, op.hint, &got); break;
    }
    const bool valid = op.source >= 0 && op.source < comm_size &&
                       (op.kind == OpKind::probe || op.kind == OpKind::mprobe || op.handle != nullptr) &&
                       !(arrive && op.tag == UM_ANY_TAG);
    if (!valid) { // malformed: the model's error, nothing changes
        want_rc = arrive ? model.arrive(op.source, op.tag, op.handle, &ignored)
                  : op.kind == OpKind::post_recv ? model.post_recv(op.source, op.tag, op.handle, &ignored)
                                                 : model.probe(op.source, op.tag, remove, &ignored);
        return got.handle;
    }
    // A receive searches the messages; a message the receives.
    const bool other_posted = arrive;
    const bool waiting = model.holds(other_posted, op.source, op.tag);
    want_rc = arrive && relaxed.no_unexpected && !waiting ? UM_ERR_ASSERTION : UM_OK;
    if (got_rc != UM_OK || want_rc != UM_OK) {
        return got.handle;
    }
    if (got.handle != nullptr) {
        return model.find(other_posted, op.source, op.tag, got.handle, remove) ? got.handle : kWrong;
    }
    if (waiting) {
        return kWrong; // lost
    }
    if (op.kind == OpKind::post_recv) {
        model.post_recv(op.source, op.tag, op.handle, &ignored); // nothing to match: queued
    } else if (arrive) {
        model.arrive(op.source, op.tag, op.handle, &ignored);
    }
    return nullptr;
}

// Runs `ops` operations of one mix on a backend and the model in lock step;
// `table`: the overtaking engine with that table instead (overtake.h).
RunResult run_mix(const std::string &backend, const um_params_t &params, const Mix &mix,
                  uint64_t seed, uint64_t ops, const Relaxed &relaxed = Relaxed(),
                  const char *table = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    RunResult res;
    auto done = [&] {
        res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return res;
    };
    auto engine = table != nullptr ? make_overtake_engine(table, mix.comm_size, false, backend.c_str())
                                   : make_engine(backend, mix.comm_size, params);
    const um_stats_t first = engine->stats();
    res.kernel = first.kernel;
    Oracle model(mix.comm_size);
    Workload work(mix, seed);
    for (uint64_t i = 0; i < ops; ++i) {
        const Op op = work.next(model);
        int want_rc = 0;
        int got_rc = 0;
        void *want = nullptr;
        um_match_t got{};
        if (relaxed.excludes(op)) {
            // A malformed call is refused first, as malformed.
            const bool bad_source = op.source != UM_ANY_SOURCE && (op.source < 0 || op.source >= mix.comm_size);
            want_rc = bad_source ? UM_ERR_SOURCE
                      : op.kind == OpKind::post_recv && op.handle == nullptr ? UM_ERR_ARG
                                                                               : UM_ERR_ASSERTION;
            switch (op.kind) {
            case OpKind::post_recv: got_rc = engine->post_recv(op.source, op.tag, op.hint, op.handle, &got); break;
            case OpKind::probe: got_rc = engine->probe(op.source, op.tag, op.hint, &got); break;
            default: got_rc = engine->mprobe(op.source, op.tag, op.hint, &got); break;
            }
        } else if (relaxed.overtaking && op.kind != OpKind::cancel) {
            want = overtaking_step(*engine, model, op, relaxed, mix.comm_size, want_rc, got_rc, got);
        } else {
            const Step step = apply(*engine, model, op);
            want_rc = step.want_rc;
            got_rc = step.got_rc;
            want = step.want;
            got = step.got;
            if (op.kind == OpKind::arrive && relaxed.no_unexpected && want_rc == UM_OK && want == nullptr) {
                void *dropped = nullptr; // refused: the model keeps no message either
                model.probe(op.source, op.tag, true, &dropped);
                want_rc = UM_ERR_ASSERTION;
            }
        }
        ++res.ops;
        res.matches += want != nullptr;
        const um_stats_t s = engine->stats();
        res.max_depth = std::max<uint64_t>(res.max_depth, std::max(s.posted_len, s.unexpected_len));
        res.queues_grown = std::max<uint64_t>(res.queues_grown, s.queues - std::min(s.queues, first.queues));
        const bool lengths_ok = s.posted_len == model.posted().size() &&
                                s.unexpected_len == model.unexpected().size();
        bool queues_ok = true;
        if (i % 1024 == 0 || i + 1 == ops) {
            const Snapshot snap = engine->snapshot();
            queues_ok = same_queue(snap.posted, model.posted(), !relaxed.overtaking) &&
                        same_queue(snap.unexpected, model.unexpected(), !relaxed.overtaking);
        }
        if (want_rc != got_rc || (want_rc == UM_OK && want != got.handle) || !lengths_ok ||
            !queues_ok) {
            std::ostringstream d;
            d << "backend " << backend << " (kernel " << um_kernel_name(static_cast<um_kernel_t>(s.kernel))
              << ", compact_threshold " << params.compact_threshold << "), mix " << mix.name << ", seed " << seed << ", op " << i
              << ": " << kind_name(op.kind) << "(source " << op.source << ", tag " << op.tag
              << ") model rc " << want_rc << " handle " << want << ", engine rc " << got_rc
              << " handle " << got.handle << "; posted " << s.posted_len << "/"
              << model.posted().size() << ", unexpected " << s.unexpected_len << "/"
              << model.unexpected().size() << (queues_ok ? "" : ", queue contents differ");
            res.first_difference = d.str();
            return done();
        }
    }
    const um_stats_t last = engine->stats();
    res.false_positives = last.false_positives;
    res.compactions = last.compactions;
    res.reshapes = last.reshapes;
    res.memory_limited = last.memory_limited;
    return done();
}

// A run's share of --ops, split over the mixes.
uint64_t share(uint64_t ops, size_t m, size_t mixes) { return ops / mixes + (m < ops % mixes ? 1 : 0); }

// What the differential test runs: every backend with its default parameters
// and, for the SIMD backends, every kernel this CPU runs and the best one with
// compaction off.
struct Variant {
    std::string backend;
    std::string label;
    um_params_t params;
};

std::vector<Variant> variants() {
    std::vector<Variant> out;
    for (const Backend &b : backends()) {
        if (b.assertion != nullptr) { // relaxed backends: relaxed_tests.cc
            continue;
        }
        const um_params_t defaults = default_params();
        if (make_engine(b.name, 1, defaults)->stats().kernel == UM_KERNEL_NONE) {
            out.push_back({b.name, b.name, defaults});
            continue;
        }
        for (const simd::Kernels *k : simd::supported(simd::cpu_features())) {
            um_params_t p = defaults;
            p.kernel = k->name;
            out.push_back({b.name, std::string(b.name) + "@" + k->name, p});
        }
        um_params_t p = defaults;
        p.kernel = simd::best(simd::cpu_features()).name;
        p.compact_threshold = 1.0;
        out.push_back({b.name, std::string(b.name) + "@" + p.kernel + ",no-compaction", p});
    }
    // auto: changing form at almost every operation, and under a memory bound
    // so tight that queues keep falling back to lists.
    um_params_t eager = default_params(); // index_rent -1: each queue learns when to index
    eager.kernel = simd::best(simd::cpu_features()).name;
    eager.index_at = 2;
    eager.list_at = 1;
    out.push_back({"auto", "auto,index_at=2,list_at=1", eager});
    um_params_t at_once = eager; // indexed at the first deep search
    at_once.index_rent = 0;
    out.push_back({"auto", "auto,index_at=2,list_at=1,index_rent=0", at_once});
    um_params_t tight = eager;
    tight.index_at = 4;
    tight.list_at = 2;
    tight.max_index_bytes = 48 << 10;
    out.push_back({"auto", "auto,index_at=4,max_index_bytes=48K", tight});
    um_params_t rent = eager; // lists searched deep for a while before they are indexed
    rent.index_rent = 2;
    out.push_back({"auto", "auto,index_at=2,list_at=1,index_rent=2", rent});
    return out;
}

} // namespace

TEST_CASE("every backend matches the reference model on random sequences", "[differential]") {
    const Options &opt = options();
    const std::vector<Mix> mixes = standard_mixes();
    const std::vector<Variant> all = variants();
    auto ops_of = [&](size_t m) { return share(opt.ops, m, mixes.size()); };
    // Catch2 enters this body once per section: the runs are made on the first.
    static const std::vector<RunResult> results = run_all<RunResult>(all.size() * mixes.size(), [&](size_t i) {
        const size_t m = i % mixes.size();
        return run_mix(all[i / mixes.size()].backend, all[i / mixes.size()].params, mixes[m], opt.seed + m, ops_of(m));
    });
    for (size_t vi = 0; vi < all.size(); ++vi) {
        const Variant &v = all[vi];
        DYNAMIC_SECTION("backend " << v.label) {
            double seconds = 0;
            uint64_t total = 0;
            uint64_t matches = 0;
            uint64_t false_positives = 0;
            uint64_t compactions = 0;
            uint64_t kernel = UM_KERNEL_NONE;
            uint64_t queues_grown = 0;
            uint64_t reshapes = 0;
            uint64_t memory_limited = 0;
            for (size_t m = 0; m < mixes.size(); ++m) {
                const RunResult &r = results[vi * mixes.size() + m];
                INFO(r.first_difference);
                REQUIRE(r.first_difference.empty());
                // The mix must really reach its depth, or "deep queues" are not tested.
                CHECK(r.max_depth >= std::min<uint64_t>(mixes[m].max_depth, ops_of(m) / 8));
                seconds += r.seconds;
                total += r.ops;
                matches += r.matches;
                false_positives += r.false_positives;
                compactions += r.compactions;
                kernel = r.kernel;
                queues_grown = std::max(queues_grown, r.queues_grown);
                reshapes += r.reshapes;
                memory_limited += r.memory_limited;
            }
            CHECK(total == opt.ops);
            CHECK(matches > total / 4);
            std::cout << v.label << ": " << total << " operations, " << matches
                      << " matches, 0 differences from the model";
            if (kernel != UM_KERNEL_NONE) {
                // The runs must meet what they are there to test: the kernel
                // asked for, colliding fast keys, and compaction when it is on.
                if (v.params.kernel != nullptr) {
                    CHECK(std::string(um_kernel_name(static_cast<um_kernel_t>(kernel))) ==
                          v.params.kernel);
                }
                if (v.backend.rfind("fuzzy", 0) == 0 && opt.ops >= 100000) {
                    CHECK(false_positives > 0);
                }
                if (v.params.compact_threshold >= 1.0) {
                    CHECK(compactions == 0);
                } else if (opt.ops >= 200000) { // auto's queues first compact near 200000
                    CHECK(compactions > 0);
                }
                std::cout << " (kernel " << um_kernel_name(static_cast<um_kernel_t>(kernel))
                          << ", false positives " << false_positives << ", compactions "
                          << compactions << ")";
            }
            if (queues_grown > 0) {
                std::cout << ", queues allocated up to +" << queues_grown;
            }
            // Seed 000: the runs cross theta (pnp partners) and open col levels.
            if (opt.ops >= 100000 && (v.backend.find("pnp") != std::string::npos ||
                                      v.backend.rfind("col", 0) == 0)) {
                CHECK(queues_grown > 0);
            }
            // auto: the runs cross its thresholds both ways, and a tight bound bites.
            if (v.backend == "auto" && opt.ops >= 100000) {
                CHECK(reshapes > 0);
                CHECK((memory_limited > 0) == (v.params.max_index_bytes < (1 << 20)));
                std::cout << ", reshapes " << reshapes << ", memory-limited " << memory_limited;
            }
            std::cout << ", " << seconds << " s\n";
        }
    }
}

// Issue 14: each relaxed backend against the weaker oracle (Relaxed above), on
// the standard mixes with their wildcards: those it excludes are wrong uses
// that must be refused with the queues intact, the rest must match as MPI does.
TEST_CASE("every relaxed backend keeps its assertion's contract on random sequences",
          "[differential][relaxed]") {
    const Options &opt = options();
    const std::vector<Mix> mixes = standard_mixes();
    struct Run {
        std::string label;
        const Backend *backend;
        const char *table; // the overtaking engine's table the registry does not use
    };
    std::vector<Run> runs;
    for (const Backend &b : backends()) {
        if (b.assertion != nullptr) {
            runs.push_back({b.name, &b, nullptr});
        }
        if (std::string(b.name) == "overtake") {
            for (const char *t : {overtake::OpenTable::kName, overtake::TwoLevelTable::kName}) {
                if (std::string(t) != kOvertakeTable) {
                    runs.push_back({std::string(b.name) + "@" + t, &b, t});
                }
            }
        }
    }
    static const std::vector<RunResult> results = run_all<RunResult>(runs.size() * mixes.size(), [&](size_t i) {
        const size_t m = i % mixes.size();
        const Run &run = runs[i / mixes.size()];
        return run_mix(run.backend->name, default_params(), mixes[m], opt.seed + m, share(opt.ops, m, mixes.size()),
                       Relaxed(run.backend->assertion), run.table);
    });
    for (size_t ri = 0; ri < runs.size(); ++ri) {
        const Run &run = runs[ri];
        DYNAMIC_SECTION("backend " << run.label) {
            double seconds = 0;
            uint64_t total = 0;
            uint64_t matches = 0;
            for (size_t m = 0; m < mixes.size(); ++m) {
                const RunResult &r = results[ri * mixes.size() + m];
                INFO(r.first_difference);
                REQUIRE(r.first_difference.empty());
                seconds += r.seconds;
                total += r.ops;
                matches += r.matches;
            }
            CHECK(total == opt.ops);
            CHECK(matches > total / 10);
            std::cout << run.label << ": " << total << " operations, " << matches
                      << " matches, 0 differences from the relaxed oracle, " << seconds << " s\n";
        }
    }
}

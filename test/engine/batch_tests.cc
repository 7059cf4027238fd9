// The batch calls (post_recv_batch, arrive_batch) against the single calls:
// two engines of each backend in lock step on the differential test's random
// mixes, one given each run of receives or messages element by element, the
// other as one batch. Same results, the same error at the same element (the
// batch then resumes after it), the same statistics and queues. The single
// calls are checked against the reference model in differential_tests.cc.
#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "matching/overtake.h"
#include "matching/registry.h"
#include "test/engine/oracle.h"
#include "test/engine/parallel.h"
#include "test/engine/test_options.h"
#include "test/engine/workload.h"

using namespace ubermatch;
using namespace ubermatch::test;

namespace {

// Everything but the timers' sums, which differ between any two runs.
bool same_stats(um_stats_t a, um_stats_t b) {
    for (um_stats_t *s : {&a, &b}) {
        s->p2p.search_ns = s->p2p.posted_search_ns = s->coll.search_ns = s->coll.posted_search_ns = 0;
        s->overhead_ns = s->timer_outliers = 0;
    }
    return std::memcmp(&a, &b, sizeof a) == 0;
}

bool same_queues(const Engine &a, const Engine &b) {
    const Snapshot x = a.snapshot(), y = b.snapshot();
    const auto same = [](const std::vector<QueuedElement> &p, const std::vector<QueuedElement> &q) {
        if (p.size() != q.size()) {
            return false;
        }
        for (size_t i = 0; i < p.size(); ++i) {
            if (p[i].handle != q[i].handle || p[i].source != q[i].source || p[i].tag != q[i].tag) {
                return false;
            }
        }
        return true;
    };
    return same(x.posted, y.posted) && same(x.unexpected, y.unexpected);
}

struct Lockstep {
    std::unique_ptr<Engine> single, batched;
    uint64_t batches = 0, elements = 0, errors = 0, matches = 0;
    uint64_t search_ns = 0; // the batched engine's, timers on
    std::string difference;

    // One run of receives (post) or messages through both engines.
    void run(bool post, const std::vector<um_elem_t> &elems, const um_hint_t &hint) {
        const size_t n = elems.size();
        if (n == 0) {
            return;
        }
        std::vector<int> want_rc(n);
        std::vector<um_match_t> want(n), got(n);
        for (size_t i = 0; i < n; ++i) {
            const um_elem_t &e = elems[i];
            want_rc[i] = post ? single->post_recv(e.source, e.tag, hint, e.handle, &want[i])
                              : single->arrive(e.source, e.tag, hint, e.handle, &want[i]);
        }
        for (size_t pos = 0; pos < n && difference.empty();) {
            size_t done = ~size_t{0};
            const int rc = post ? batched->post_recv_batch(&elems[pos], n - pos, hint, &got[pos], &done)
                                : batched->arrive_batch(&elems[pos], n - pos, hint, &got[pos], &done);
            ++batches;
            std::ostringstream d;
            if (done > n - pos) {
                d << "done " << done << " of " << n - pos;
            }
            for (size_t i = pos; i < pos + done && d.str().empty(); ++i) {
                if (want_rc[i] != UM_OK || got[i].handle != want[i].handle || got[i].inspected != want[i].inspected) {
                    d << "element " << i << ": single rc " << want_rc[i] << " handle " << want[i].handle
                      << " inspected " << want[i].inspected << ", batch handle " << got[i].handle << " inspected "
                      << got[i].inspected;
                }
                matches += got[i].handle != nullptr;
            }
            const size_t stop = pos + done;
            if (d.str().empty() && stop < n && rc != want_rc[stop]) {
                d << "element " << stop << ": single rc " << want_rc[stop] << ", batch stopped with " << rc;
            }
            if (d.str().empty() && stop == n && rc != UM_OK) {
                d << "every element done, but rc " << rc;
            }
            if (!d.str().empty()) {
                difference = std::string(post ? "post_recv_batch: " : "arrive_batch: ") + d.str();
                return;
            }
            errors += stop < n;
            pos = stop + 1; // past the element that failed (the single call failed it too)
        }
        elements += n;
    }
};

// One probe, mprobe or cancel, the same single call to both engines.
void single_call(Lockstep &ls, const Op &op) {
    um_match_t a{}, b{};
    int ra = 0, rb = 0;
    bool xa = false, xb = false;
    switch (op.kind) {
    case OpKind::probe:
        ra = ls.single->probe(op.source, op.tag, op.hint, &a);
        rb = ls.batched->probe(op.source, op.tag, op.hint, &b);
        break;
    case OpKind::mprobe:
        ra = ls.single->mprobe(op.source, op.tag, op.hint, &a);
        rb = ls.batched->mprobe(op.source, op.tag, op.hint, &b);
        break;
    default:
        ra = ls.single->cancel(op.source, op.tag, op.handle, &xa);
        rb = ls.batched->cancel(op.source, op.tag, op.handle, &xb);
        break;
    }
    if (ra != rb || a.handle != b.handle || xa != xb) {
        ls.difference = "a single call after the batches differs";
    }
}

// Runs `ops` operations of one mix in windows of 1-96: the window's receives
// as one batch and its messages as another (which first, at random; each with
// its first element's hint), then its probes and cancels one by one. The
// order differs from the workload's, the same for both engines.
void run_mix(Lockstep &ls, const Mix &mix, uint64_t seed, uint64_t ops, bool timers) {
    ls.single->set_timers(timers, 0);
    ls.batched->set_timers(timers, 0);
    Oracle model(mix.comm_size); // only aims the workload's drains and cancels
    Workload work(mix, seed);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    void *ignored = nullptr;
    for (uint64_t i = 0, window = 0; i < ops && ls.difference.empty(); ++window) {
        std::vector<um_elem_t> recvs, msgs;
        um_hint_t recv_hint{}, msg_hint{};
        std::vector<Op> others;
        for (size_t w = 1 + rng() % 96; w > 0 && i < ops; --w, ++i) {
            const Op op = work.next(model);
            switch (op.kind) {
            case OpKind::post_recv:
                recv_hint = recvs.empty() ? op.hint : recv_hint;
                recvs.push_back({op.handle, op.source, op.tag});
                model.post_recv(op.source, op.tag, op.handle, &ignored);
                break;
            case OpKind::arrive:
                msg_hint = msgs.empty() ? op.hint : msg_hint;
                msgs.push_back({op.handle, op.source, op.tag});
                model.arrive(op.source, op.tag, op.handle, &ignored);
                break;
            case OpKind::cancel: {
                bool removed = false;
                model.cancel(op.source, op.tag, op.handle, &removed);
                others.push_back(op);
                break;
            }
            default:
                model.probe(op.source, op.tag, op.kind == OpKind::mprobe, &ignored);
                others.push_back(op);
                break;
            }
        }
        const bool recvs_first = rng() % 2 == 0;
        ls.run(recvs_first, recvs_first ? recvs : msgs, recvs_first ? recv_hint : msg_hint);
        ls.run(!recvs_first, recvs_first ? msgs : recvs, recvs_first ? msg_hint : recv_hint);
        for (size_t k = 0; k < others.size() && !timers; ++k) { // timed: only batches, whose timing is checked
            single_call(ls, others[k]);
        }
        if (ls.difference.empty() && !same_stats(ls.single->stats(), ls.batched->stats())) {
            ls.difference = "statistics differ";
        }
        if (ls.difference.empty() && window % 16 == 0 && !same_queues(*ls.single, *ls.batched)) {
            ls.difference = "queues differ";
        }
    }
    if (ls.difference.empty() && !same_queues(*ls.single, *ls.batched)) {
        ls.difference = "queues differ at the end";
    }
}

} // namespace

TEST_CASE("batches give what the same calls one by one give, for every backend", "[batch]") {
    const Options &opt = options();
    const std::vector<Mix> mixes = standard_mixes();
    struct Run {
        std::string label;
        std::string backend;
        const char *table; // overtake's other table
        bool timers;       // timed: the batch goes element by element
    };
    std::vector<Run> runs;
    for (const Backend &b : backends()) {
        runs.push_back({b.name, b.name, nullptr, false});
    }
    runs.push_back({"overtake@open", "overtake", overtake::OpenTable::kName, false});
    runs.push_back({"overtake, timers on", "overtake", nullptr, true});
    runs.push_back({"list, timers on", "list", nullptr, true});
    const uint64_t ops = std::max<uint64_t>(opt.ops / 4, 8000);
    // Catch2 enters this body once per section: the runs are made on the first.
    static const std::vector<Lockstep> results = run_all<Lockstep>(runs.size() * mixes.size(), [&](size_t i) {
        const Run &r = runs[i / mixes.size()];
        const Mix &mix = mixes[i % mixes.size()];
        const auto make = [&] {
            return r.table != nullptr ? make_overtake_engine(r.table, mix.comm_size, false, "overtake")
                                      : make_engine(r.backend, mix.comm_size, default_params());
        };
        Lockstep ls;
        ls.single = make();
        ls.batched = make();
        run_mix(ls, mix, opt.seed + i % mixes.size(), ops / mixes.size() + 1, r.timers);
        return ls;
    });
    for (size_t ri = 0; ri < runs.size(); ++ri) {
        const Run &r = runs[ri];
        DYNAMIC_SECTION("backend " << r.label) {
            Lockstep total;
            for (size_t m = 0; m < mixes.size(); ++m) {
                const Lockstep &ls = results[ri * mixes.size() + m];
                INFO("mix " << mixes[m].name << ", seed " << opt.seed + m << ": " << ls.difference);
                REQUIRE(ls.difference.empty());
                total.batches += ls.batches;
                total.elements += ls.elements;
                total.errors += ls.errors;
                total.matches += ls.matches;
                const um_stats_t st = ls.batched->stats();
                total.search_ns += st.p2p.search_ns + st.coll.search_ns;
            }
            // The runs must reach what they test: batches longer than one, matches, and
            // errors (malformed elements, refusals) stopping a batch in its middle.
            CHECK(total.elements > 2 * total.batches);
            CHECK(total.matches > total.elements / 10);
            CHECK(total.errors > 0);
            CHECK((total.search_ns > 0) == r.timers); // timed, a batch's searches are timed one by one
            std::cout << r.label << ": " << total.elements << " elements in " << total.batches << " batches, "
                      << total.matches << " matches, " << total.errors
                      << " stopped by an error, 0 differences from single calls\n";
        }
    }
}

TEST_CASE("a batch stops at its first bad element and says where", "[batch]") {
    auto e = make_engine("overtake", 4, default_params());
    const um_hint_t hint{};
    int a, b, c, d;
    const um_elem_t elems[] = {{&a, 1, 7}, {&b, 2, 7}, {&c, 9, 7}, {&d, 3, 7}};
    um_match_t out[4]{};
    size_t done = 99;
    CHECK(e->post_recv_batch(elems, 4, hint, out, &done) == UM_ERR_SOURCE);
    CHECK(done == 2);
    CHECK(e->stats().posted_len == 2);
    const um_elem_t wild[] = {{&d, 3, 8}, {&c, UM_ANY_SOURCE, 7}};
    CHECK(e->post_recv_batch(wild, 2, hint, out, &done) == UM_ERR_ASSERTION);
    CHECK(done == 1);
    CHECK(e->stats().posted_len == 3);
    const um_elem_t msgs[] = {{&a, 2, 7}, {&b, 1, 7}, {&c, 0, UM_ANY_TAG}};
    CHECK(e->arrive_batch(msgs, 3, hint, out, nullptr) == UM_ERR_TAG);
    CHECK(out[0].handle == &b);
    CHECK(out[1].handle == &a);
    CHECK(e->stats().posted_len == 1);
    CHECK(e->stats().p2p.matches == 2);
    CHECK(e->arrive_batch(msgs, 0, hint, out, &done) == UM_OK);
    CHECK(done == 0);
}

TEST_CASE("the C interface's batches", "[batch]") {
    char err[256];
    um_engine_t *e = um_engine_create("list", 4, nullptr, err, sizeof err);
    REQUIRE(e != nullptr);
    int a, b;
    const um_elem_t recvs[] = {{&a, UM_ANY_SOURCE, 5}, {&b, 1, UM_ANY_TAG}};
    um_match_t out[2]{};
    size_t done = 0;
    CHECK(um_engine_post_recv_batch(e, recvs, 2, nullptr, out, &done) == UM_OK);
    CHECK(done == 2);
    int m1, m2;
    const um_elem_t msgs[] = {{&m1, 1, 6}, {&m2, 1, 5}};
    CHECK(um_engine_arrive_batch(e, msgs, 2, nullptr, out, &done) == UM_OK);
    CHECK(out[0].handle == &b); // tag 6: only the ANY_TAG receive
    CHECK(out[1].handle == &a);
    um_engine_destroy(e);
}

namespace {
// Queues receives until its allocation "fails" at the third.
class FailingEngine final : public Engine {
public:
    FailingEngine() : Engine(4) {}
    const char *name() const override { return "failing"; }

protected:
    Found do_post_recv(int32_t, int32_t, const um_hint_t &, void *) override {
        if (++calls_ == 3) {
            throw std::bad_alloc();
        }
        return {nullptr, 1};
    }
    Found do_arrive(int32_t, int32_t, const um_hint_t &, void *) override { return {nullptr, 1}; }
    Found do_probe(int32_t, int32_t, const um_hint_t &, bool) override { return {}; }
    bool do_cancel(int32_t, int32_t, void *) override { return false; }
    void visit(const Visitor &) const override {}
    uint64_t queues_allocated() const override { return 1; }
    uint64_t bytes_used() const override { return 0; }

private:
    int calls_ = 0;
};
} // namespace

TEST_CASE("a failed allocation stops a batch at its element, what was done counted", "[batch]") {
    // Timed, the batch goes call by call (as recorded), whose failure throws.
    const bool timed = GENERATE(false, true);
    INFO("timers " << (timed ? "on" : "off"));
    FailingEngine e;
    e.set_timers(timed, 0);
    int x;
    const um_elem_t elems[] = {{&x, 0, 1}, {&x, 1, 1}, {&x, 2, 1}, {&x, 3, 1}};
    um_match_t out[4]{};
    size_t done = 0;
    CHECK(e.post_recv_batch(elems, 4, um_hint_t{}, out, &done) == UM_ERR_NOMEM);
    CHECK(done == 2);
    CHECK(e.stats().posted_len == 2);
    CHECK(e.stats().p2p.searches == 2);
    CHECK(std::string(um_status_string(UM_ERR_NOMEM)).find("memory") != std::string::npos);
}

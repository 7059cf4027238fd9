// Matching traces (matching/trace.h): the recording decorator keeps the
// addresses it is given, the reader turns them into ids by following the
// queues, so addresses the caller reuses (as the PML recycles requests and
// descriptors) still name the right element; a replay of the ids makes the
// recorded matches; the lock under MPI_THREAD_MULTIPLE keeps every record; a
// refusal passes through the decorator.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "matching/registry.h"
#include "matching/trace.h"

using namespace ubermatch;
using trace::TraceOp;
using trace::TraceRecord;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }
const um_hint_t kP2P{};

// A fresh directory, recording on (or off when leaving scope).
struct Recording {
    explicit Recording(bool threads) {
        char tmpl[] = "/tmp/um-trace-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        std::string err;
        REQUIRE(trace::start(dir.c_str(), threads, err));
    }
    ~Recording() {
        std::string err;
        trace::start("", false, err);
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    std::string dir;
};

struct Step {
    TraceOp op;
    uint64_t id, matched; // what the reader must give back
};

} // namespace

TEST_CASE("recorded addresses come back as ids, reused addresses included", "[trace]") {
    Recording rec(false);
    // Two message and two request addresses, each reused while others are queued.
    void *const A = h(0x1000), *const B = h(0x2000), *const R1 = h(0x3000), *const R2 = h(0x4000);
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("list", 4, default_params()), 0, 2);
        REQUIRE(std::string(e->name()) == "list");
        um_match_t m{};
        bool removed = false;
        REQUIRE(e->arrive(1, 5, kP2P, A, &m) == UM_OK);                        // 1 queued
        REQUIRE(e->arrive(1, 6, kP2P, B, &m) == UM_OK);                        // 2 queued
        REQUIRE(e->post_recv(1, 6, kP2P, R1, &m) == UM_OK);                    // 3 takes 2
        REQUIRE(m.handle == B);
        REQUIRE(e->arrive(2, 7, kP2P, B, &m) == UM_OK);                        // 4: B again
        REQUIRE(e->probe(UM_ANY_SOURCE, 7, kP2P, &m) == UM_OK);                // sees 4
        REQUIRE(m.handle == B);
        REQUIRE(e->post_recv(UM_ANY_SOURCE, UM_ANY_TAG, kP2P, R1, &m) == UM_OK); // 5: R1 again, takes 1
        REQUIRE(m.handle == A);
        REQUIRE(e->mprobe(2, UM_ANY_TAG, kP2P, &m) == UM_OK);                  // takes 4
        REQUIRE(m.handle == B);
        REQUIRE(e->post_recv(3, 9, kP2P, R1, &m) == UM_OK);                    // 6 queued
        REQUIRE(e->post_recv(3, 9, kP2P, R2, &m) == UM_OK);                    // 7 queued
        REQUIRE(e->cancel(3, 9, R1, &removed) == UM_OK);                       // removes 6
        REQUIRE(removed);
        REQUIRE(e->post_recv(3, 9, kP2P, R1, &m) == UM_OK);                    // 8 queued behind 7
        REQUIRE(e->arrive(3, 9, kP2P, A, &m) == UM_OK);                        // 9 takes 7
        REQUIRE(m.handle == R2);
        REQUIRE(e->arrive(3, 9, kP2P, B, &m) == UM_OK);                        // 10 takes 8
        REQUIRE(m.handle == R1);
        REQUIRE(e->cancel(3, 9, R1, &removed) == UM_OK);                       // nothing queued
        REQUIRE(!removed);
    } // the last engine goes: the file is written
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-2.umt");
    CHECK(f.header.rank == 2);
    CHECK(std::string(f.header.backend) == "list");
    CHECK(f.header.ns_per_tick > 0);
    CHECK(f.dropped == 0);
    const std::vector<Step> want = {
        {TraceOp::comm_create, 0, 0}, {TraceOp::arrive, 1, 0},    {TraceOp::arrive, 2, 0},
        {TraceOp::post_recv, 3, 2},   {TraceOp::arrive, 4, 0},    {TraceOp::probe, 0, 4},
        {TraceOp::post_recv, 5, 1},   {TraceOp::mprobe, 0, 4},    {TraceOp::post_recv, 6, 0},
        {TraceOp::post_recv, 7, 0},   {TraceOp::cancel, 6, 0},    {TraceOp::post_recv, 8, 0},
        {TraceOp::arrive, 9, 7},      {TraceOp::arrive, 10, 8},   {TraceOp::cancel, trace::kUnknownId, 0},
    };
    REQUIRE(f.records.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        INFO("record " << i);
        CHECK(f.records[i].op == static_cast<uint8_t>(want[i].op));
        CHECK(f.records[i].id == want[i].id);
        CHECK(f.records[i].matched == want[i].matched);
        if (i > 0) {
            CHECK(f.records[i].t_ns >= f.records[i - 1].t_ns);
        }
    }
    CHECK(f.records[0].source == 2); // comm_create: this rank and the size
    CHECK(f.records[0].tag == 4);
    CHECK(f.records[6].source == UM_ANY_SOURCE);
    CHECK(f.records[6].tag == UM_ANY_TAG);

    // The ids replayed through another backend make the recorded matches.
    std::unique_ptr<Engine> e = make_engine("bins", 4, default_params());
    for (size_t i = 1; i < f.records.size(); ++i) {
        const TraceRecord &r = f.records[i];
        um_match_t m{};
        bool removed = false;
        switch (static_cast<TraceOp>(r.op)) {
        case TraceOp::post_recv: REQUIRE(e->post_recv(r.source, r.tag, kP2P, h(r.id), &m) == UM_OK); break;
        case TraceOp::arrive: REQUIRE(e->arrive(r.source, r.tag, kP2P, h(r.id), &m) == UM_OK); break;
        case TraceOp::probe: REQUIRE(e->probe(r.source, r.tag, kP2P, &m) == UM_OK); break;
        case TraceOp::mprobe: REQUIRE(e->mprobe(r.source, r.tag, kP2P, &m) == UM_OK); break;
        case TraceOp::cancel:
            REQUIRE(e->cancel(r.source, r.tag, h(r.id), &removed) == UM_OK);
            CHECK(removed == (r.result == 1));
            continue;
        default: FAIL("unexpected operation"); break;
        }
        INFO("record " << i);
        CHECK(reinterpret_cast<uintptr_t>(m.handle) == r.matched);
    }
}

TEST_CASE("a refusal passes through the recording engine, recorded as an error", "[trace]") {
    Recording rec(false);
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("nosource", 4, default_params()), 0, 0);
        um_match_t m{};
        CHECK(e->post_recv(UM_ANY_SOURCE, 7, kP2P, h(0x10), &m) == UM_ERR_ASSERTION);
        CHECK(e->stats().posted_len == 0); // nothing queued
        REQUIRE(e->post_recv(1, 7, kP2P, h(0x10), &m) == UM_OK);
        REQUIRE(e->arrive(1, 7, kP2P, h(0x20), &m) == UM_OK);
        CHECK(m.handle == h(0x10));
    }
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
    REQUIRE(f.records.size() == 4);
    CHECK(f.records[1].result == 2);
    CHECK(f.records[3].matched == f.records[2].id); // the refused receive was never queued
}

TEST_CASE("with threads, engines recording at once lose no record", "[trace]") {
    Recording rec(true);
    constexpr int kThreads = 4, kRounds = 50000; // 200000 records each
    {
        std::vector<std::unique_ptr<Engine>> engines;
        for (int t = 0; t < kThreads; ++t) {
            engines.push_back(trace::record(make_engine("perpeer", 2, default_params()), static_cast<uint32_t>(t), 0));
        }
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&engines, t] {
                Engine &e = *engines[static_cast<size_t>(t)];
                // Each thread reuses its own two addresses: a message, then its receive.
                void *const msg = h(0x100000u * static_cast<uintptr_t>(t + 1));
                void *const req = h(0x100000u * static_cast<uintptr_t>(t + 1) + 8);
                um_match_t m{};
                for (int i = 0; i < kRounds; ++i) {
                    e.arrive(1, i, kP2P, msg, &m);
                    e.post_recv(1, i, kP2P, req, &m);
                }
            });
        }
        for (std::thread &th : threads) {
            th.join();
        }
    }
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
    CHECK(f.dropped == 0);
    REQUIRE(f.records.size() == static_cast<size_t>(kThreads) * (1 + 2 * kRounds));
    std::vector<uint64_t> last_arrival(kThreads, 0);
    uint64_t bad = 0;
    for (const TraceRecord &r : f.records) {
        if (r.op == static_cast<uint8_t>(TraceOp::arrive)) {
            last_arrival[r.cid] = r.id;
        } else if (r.op == static_cast<uint8_t>(TraceOp::post_recv)) {
            bad += r.matched != last_arrival[r.cid]; // each receive takes its thread's last message
        }
    }
    CHECK(bad == 0);
}

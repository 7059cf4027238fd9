// Matching traces (matching/trace.h): a recording engine keeps the
// addresses it is given, the reader turns them into ids by following the
// queues, so addresses the caller reuses (as the PML recycles requests and
// descriptors) still name the right element; a replay of the ids makes the
// recorded matches; the lock under MPI_THREAD_MULTIPLE keeps every record; a
// refusal is recorded and passed on.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "matching/registry.h"
#include "matching/trace.h"
#include "test/engine/trace_old_versions.h"
#include "test/engine/trace_test_dir.h"

using namespace ubermatch;
using trace::TraceOp;
using trace::TraceRecord;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }
const um_hint_t kP2P{};

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

TEST_CASE("the trace directory: missing parents made, a file in its place refused by name", "[trace]") {
    TempDir tmp;
    std::string err;
    const std::string nested = tmp.path + "/job/step/trace";
    REQUIRE(trace::start(nested.c_str(), false, err));
    CHECK(std::filesystem::is_directory(nested));
    REQUIRE(trace::start(nested.c_str(), false, err)); // there already: fine
    const std::string file = tmp.path + "/job/file";
    std::ofstream(file) << "not a directory";
    CHECK_FALSE(trace::start(file.c_str(), false, err));
    CHECK(err == "pml_ubermatch_trace: " + file + " exists and is not a directory");
    const std::string under_file = file + "/trace";
    CHECK_FALSE(trace::start(under_file.c_str(), false, err));
    CHECK(err.find("cannot create directory " + under_file) != std::string::npos);
    trace::start("", false, err);
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

TEST_CASE("a batch on a recording engine records each of its elements", "[trace][batch]") {
    Recording rec(false);
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("overtake", 4, default_params()), 0, 0);
        const um_elem_t recvs[] = {{h(0x10), 1, 7}, {h(0x18), 2, 7}, {h(0x30), UM_ANY_SOURCE, 7}};
        const um_elem_t msgs[] = {{h(0x20), 2, 7}, {h(0x28), 1, 7}};
        um_match_t m[3]{};
        size_t done = 0;
        CHECK(e->post_recv_batch(recvs, 3, kP2P, m, &done) == UM_ERR_ASSERTION);
        CHECK(done == 2);
        REQUIRE(e->arrive_batch(msgs, 2, kP2P, m, &done) == UM_OK);
        CHECK(m[0].handle == h(0x18));
        CHECK(m[1].handle == h(0x10));
    }
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
    REQUIRE(f.records.size() == 6); // the communicator, three receives (one refused), two messages
    CHECK(f.records[3].result == 2);
    CHECK(f.records[4].op == static_cast<uint8_t>(trace::TraceOp::arrive));
    CHECK(f.records[4].matched == f.records[2].id);
    CHECK(f.records[5].matched == f.records[1].id);
}

// Recording happens inside the engine's own calls (no second engine): each
// call is counted once in the statistics, and with the timers on the
// searches are timed as without a trace; every call is in the file.
TEST_CASE("a recording engine counts and times each call once", "[trace]") {
    constexpr int kN = 100;
    for (bool timed : {false, true}) {
        INFO("timers " << timed);
        Recording rec(false);
        um_stats_t s{};
        {
            std::unique_ptr<Engine> e = trace::record(make_engine("list", 2, default_params()), 0, 0);
            e->set_timers(timed, 0);
            um_match_t m{};
            for (int i = 0; i < kN; ++i) {
                REQUIRE(e->post_recv(1, i, kP2P, h(0x1000 + 8 * static_cast<uintptr_t>(i)), &m) == UM_OK);
            }
            for (int i = 0; i < kN; ++i) {
                REQUIRE(e->arrive(1, i, kP2P, h(0x9000 + 8 * static_cast<uintptr_t>(i)), &m) == UM_OK);
                CHECK(m.handle == h(0x1000 + 8 * static_cast<uintptr_t>(i)));
            }
            bool removed = true;
            REQUIRE(e->cancel(1, 0, h(0x1000), &removed) == UM_OK);
            CHECK(!removed);
            s = e->stats();
        }
        CHECK(s.p2p.searches == 2 * kN);
        CHECK(s.p2p.matches == kN);
        CHECK(s.posted_len == 0);
        CHECK(s.posted_max == kN);
        CHECK(s.unexpected_max == 0);
        CHECK((s.p2p.search_ns > 0) == timed);
        const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
        REQUIRE(f.records.size() == 2 * kN + 2); // comm_create, the calls, the cancel
        CHECK(f.records.back().op == static_cast<uint8_t>(TraceOp::cancel));
        CHECK(f.records.back().result == 0);
    }
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

TEST_CASE("the communicator and hint of every event survive their context records", "[trace]") {
    Recording rec(false);
    // Two communicators, calls interleaved, the hint's sizes changing now and then:
    // each change is a context record in the file, each event must read back with its own.
    struct Call {
        uint32_t cid;
        uint32_t msg_size, comm_size;
        uint16_t coll;
    };
    const std::vector<Call> calls = {{0, 8, 4, 0},    {0, 8, 4, 0},     {7, 8, 4, 0}, {7, 4096, 4, 0},
                                     {0, 4096, 4, 0}, {0, 4096, 16, 3}, {7, 0, 0, 0}, {0, 0, 0, 0}};
    {
        std::unique_ptr<Engine> e0 = trace::record(make_engine("perpeer", 4, default_params()), 0, 1);
        std::unique_ptr<Engine> e7 = trace::record(make_engine("list", 4, default_params()), 7, 1);
        um_match_t m{};
        uintptr_t next = 0x1000;
        for (const Call &c : calls) {
            const um_hint_t hint{c.coll, 0, c.msg_size, c.comm_size};
            REQUIRE((c.cid == 0 ? *e0 : *e7).arrive(2, 3, hint, h(next += 64), &m) == UM_OK);
        }
    }
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-1.umt");
    REQUIRE(f.records.size() == 2 + calls.size()); // the two comm_create, then the arrivals
    CHECK(f.records[0].cid == 0);
    CHECK(f.records[1].cid == 7);
    for (size_t i = 0; i < calls.size(); ++i) {
        INFO("call " << i);
        const TraceRecord &r = f.records[2 + i];
        CHECK(r.op == static_cast<uint8_t>(TraceOp::arrive));
        CHECK(r.cid == calls[i].cid);
        CHECK(r.msg_size == calls[i].msg_size);
        CHECK(r.hint_comm_size == calls[i].comm_size);
        CHECK(r.coll == calls[i].coll);
        CHECK(r.source == 2);
        CHECK(r.tag == 3);
    }
}

TEST_CASE("addresses above 2^48 keep their high bits", "[trace]") {
    Recording rec(false);
    // Two messages queued at once whose addresses differ only above bit 48:
    // without the high record both would be the same address in the file.
    void *const low = h(0x7000), *const high = h((uintptr_t{0xabcd} << 48) | 0x7000);
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("list", 2, default_params()), 0, 0);
        um_match_t m{};
        REQUIRE(e->arrive(1, 1, kP2P, low, &m) == UM_OK);  // 1 queued
        REQUIRE(e->arrive(1, 2, kP2P, high, &m) == UM_OK); // 2 queued
        REQUIRE(e->post_recv(1, 2, kP2P, h(0x9000), &m) == UM_OK); // 3 takes 2
        REQUIRE(m.handle == high);
        REQUIRE(e->post_recv(1, 1, kP2P, h((uintptr_t{1} << 63) | 0x9000), &m) == UM_OK); // 4 takes 1
        REQUIRE(m.handle == low);
    }
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
    REQUIRE(f.records.size() == 5);
    CHECK(f.records[3].id == 3);
    CHECK(f.records[3].matched == 2);
    CHECK(f.records[4].id == 4);
    CHECK(f.records[4].matched == 1);
}

namespace {

// How many units of each operation a file holds (index: the TraceOp; events:
// the units holding events), and the events in them.
struct Units {
    size_t of[16] = {};
    size_t events = 0;
};
Units units_of(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(sizeof(trace::TraceHeader));
    Units u;
    trace::PackedRecord p{};
    while (in.read(reinterpret_cast<char *>(&p), sizeof p)) {
        ++u.of[trace::op_of(p)];
        u.events += trace::events_in(p);
    }
    return u;
}

} // namespace

TEST_CASE("events the 8-byte word cannot hold keep every field", "[trace]") {
    Recording rec(false);
    // Sources and tags at and past the edges of the event's own fields (13
    // and 19 signed bits), and addresses not 8-aligned, above 2^48 or in
    // another 512 MiB: each must read back whole, and only the events that do
    // not fit cost a record more. Each message is queued, then a receive of
    // ANY_SOURCE and its tag (ANY_TAG for tags >= 0, which it may take) takes
    // it: both events record the message's address. `wide`: how many of the
    // two do not fit their source or tag; `base`: how many need the address's
    // high bits or its low 3 first.
    struct Call {
        int32_t source, tag;
        uintptr_t message;
        size_t wide, base;
    };
    const int32_t kComm = 1 << 20;
    const std::vector<Call> calls = {{4095, 262143, 0x1000, 0, 0},
                                     {4096, 1, 0x1008, 1, 0},
                                     {1, 262144, 0x1010, 1, 0},
                                     {0, -262144, 0x1018, 0, 0},
                                     {0, -262145, 0x1020, 2, 0},
                                     {kComm - 1, INT32_MAX, 0x1028, 1, 0},
                                     {7, INT32_MIN + 1, 0x1030, 2, 0},
                                     {3, 5, 0x1001, 0, 2},
                                     {3, 5, (uintptr_t{0xfedc} << 48) | 0x1003, 0, 2},
                                     {3, 5, uintptr_t{1} << 47 | 0x1038, 0, 1},
                                     {3, 5, uintptr_t{1} << 47 | 0x20001040, 0, 1},
                                     {3, 5, uintptr_t{1} << 47, 0, 2}}; // bits 3..28 all 0: exact
    size_t wide = 1, base = 0; // comm_create's: its size is beyond 19 bits
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("list", kComm, default_params()), 0, 0);
        um_match_t m{};
        for (const Call &c : calls) {
            REQUIRE(e->arrive(c.source, c.tag, kP2P, h(c.message), &m) == UM_OK);
            const int32_t tag = c.tag >= 0 ? UM_ANY_TAG : c.tag;
            REQUIRE(e->post_recv(UM_ANY_SOURCE, tag, kP2P, h(c.message + 0x100000), &m) == UM_OK);
            REQUIRE(m.handle == h(c.message));
            wide += c.wide;
            base += c.base;
        }
    }
    const std::string path = rec.dir + "/rank-0.umt";
    const trace::TraceFile f = trace::read_file(path);
    REQUIRE(f.records.size() == 1 + 2 * calls.size());
    CHECK(f.records[0].source == 0);
    CHECK(f.records[0].tag == kComm); // comm_create: the size, beyond 19 bits
    for (size_t i = 0; i < calls.size(); ++i) {
        INFO("call " << i);
        const TraceRecord &a = f.records[1 + 2 * i], &r = f.records[2 + 2 * i];
        CHECK(a.source == calls[i].source);
        CHECK(a.tag == calls[i].tag);
        CHECK(r.source == UM_ANY_SOURCE);
        CHECK(r.tag == (calls[i].tag >= 0 ? UM_ANY_TAG : calls[i].tag));
        CHECK(r.matched == a.id);
        CHECK(r.result == 1);
    }
    // Besides the events: a time and a context record, the wide and base
    // records, a time record and the end; the events two to a unit.
    const Units u = units_of(path);
    CHECK(u.of[static_cast<int>(TraceOp::wide)] == wide);
    CHECK(u.of[static_cast<int>(TraceOp::base)] == base);
    CHECK(u.of[static_cast<int>(TraceOp::time)] >= 2); // one every kTimeEvery words
    CHECK(u.of[static_cast<int>(TraceOp::context)] == 1);
    CHECK(u.of[static_cast<int>(TraceOp::end)] == 1);
    CHECK(u.events == f.records.size());
    // Events two to a unit: a unit holds one only before a record of its own.
    size_t event_units = 0;
    for (int op = 1; op < static_cast<int>(TraceOp::end); ++op) {
        event_units += u.of[op];
    }
    CHECK(2 * event_units >= f.records.size());
    CHECK(2 * event_units <= f.records.size() + wide + base + 1);
}

namespace {

// A trace file of the given version holding these units after its header.
void write_units(const std::string &path, uint32_t version, const std::vector<trace::PackedRecord> &body) {
    trace::TraceHeader head{};
    std::memcpy(head.magic, trace::kMagic, sizeof head.magic);
    head.version = version;
    head.record_size = sizeof(trace::PackedRecord);
    head.ns_per_tick = 1.0;
    std::FILE *out = std::fopen(path.c_str(), "wb");
    REQUIRE(out != nullptr);
    std::fwrite(&head, sizeof head, 1, out);
    std::fwrite(body.data(), sizeof(trace::PackedRecord), body.size(), out);
    std::fclose(out);
}

uint64_t op_bits(TraceOp o) { return static_cast<uint64_t>(o); }

} // namespace

TEST_CASE("a wide record not followed by its event is refused as corrupt (version 4)", "[trace]") {
    Recording rec(false);
    using trace::PackedRecord;
    // A wide record (source 5000, tag 7), then the event it belongs to: read
    // whole; with a time record between them: refused, naming the record.
    const PackedRecord time{op_bits(TraceOp::time), 0}, context{op_bits(TraceOp::context), 0},
        wide{op_bits(TraceOp::wide), uint64_t{7} << 32 | 5000},
        event{uint64_t{0x1000} << 16 | op_bits(TraceOp::arrive), 0}, end{op_bits(TraceOp::end), 0};
    const std::string path = rec.dir + "/v4.umt";
    write_units(path, 4, {time, context, wide, event, end});
    const trace::TraceFile f = trace::read_file(path);
    REQUIRE(f.records.size() == 1);
    CHECK(f.records[0].source == 5000);
    CHECK(f.records[0].tag == 7);
    CHECK(f.records[0].id == 1);
    write_units(path, 4, {time, context, wide, time, event, end});
    CHECK_THROWS_WITH(trace::read_file(path),
                      path + ": corrupt: record 3 (operation 11) follows a wide record instead of its event");
    write_units(path, 4, {time, context, event, wide, end});
    CHECK_THROWS_WITH(trace::read_file(path), path + ": corrupt: the last record before the end is a wide record");
}

TEST_CASE("version 5: wide and base records belong to the next event, two events share a unit", "[trace]") {
    Recording rec(false);
    using trace::PackedRecord;
    namespace v5 = trace::v5;
    // arrive(5000, 7) of message 0xab0000001008 (kind 1), queued; then
    // post_recv(2, 3) taking it, in the same unit; then probe(2, 3), which
    // finds nothing (no address).
    auto word = [](TraceOp o, uint64_t result, int32_t source, int32_t tag, uint64_t address) {
        return (address & v5::kFieldMask) << (v5::kAddressShift - 3) |
               (static_cast<uint64_t>(static_cast<uint32_t>(tag)) & 0x7ffff) << v5::kTagShift |
               (static_cast<uint64_t>(static_cast<uint32_t>(source)) & 0x1fff) << 6 | result << 4 | op_bits(o);
    };
    const uint64_t message = 0xab0000001008;
    const PackedRecord time{op_bits(TraceOp::time), 0}, context{op_bits(TraceOp::context), 0},
        wide{uint64_t{7} << 32 | op_bits(TraceOp::wide), 5000},
        base{1 << 4 | op_bits(TraceOp::base), message >> v5::kBaseShift},
        pair{word(TraceOp::arrive, 0, 0, 0, message), word(TraceOp::post_recv, 1, 2, 3, message)},
        probe{word(TraceOp::probe, 0, 2, 3, 0), 0}, end{op_bits(TraceOp::end), 0};
    const std::string path = rec.dir + "/v5.umt";
    write_units(path, 5, {time, context, base, wide, pair, probe, end});
    const trace::TraceFile f = trace::read_file(path);
    REQUIRE(f.records.size() == 3);
    CHECK(f.records[0].source == 5000);
    CHECK(f.records[0].tag == 7);
    CHECK(f.records[0].id == 1);
    CHECK(f.records[1].source == 2);
    CHECK(f.records[1].tag == 3);
    CHECK(f.records[1].matched == 1); // the message's address, whole again
    CHECK(f.records[2].op == static_cast<uint8_t>(TraceOp::probe));
    CHECK(f.records[2].matched == 0);
    // A base record of the message's kind between the two: the receive's
    // address is another (not queued); one of the other kind changes nothing.
    const PackedRecord other{1 << 4 | op_bits(TraceOp::base), 0x77}, other_kind{op_bits(TraceOp::base), 0x77},
        arrive{pair.a, 0}, post{pair.b, 0};
    write_units(path, 5, {time, context, base, wide, arrive, other, post, end});
    CHECK(trace::read_file(path).records[1].matched == trace::kUnknownId);
    write_units(path, 5, {time, context, base, wide, arrive, other_kind, post, end});
    CHECK(trace::read_file(path).records[1].matched == 1);
    write_units(path, 5, {time, context, wide, time, pair, end});
    CHECK_THROWS_WITH(trace::read_file(path),
                      path + ": corrupt: record 3 (operation 11) follows a wide record instead of its event");
    write_units(path, 5, {time, context, base, time, pair, end});
    CHECK_THROWS_WITH(trace::read_file(path),
                      path + ": corrupt: record 3 (operation 11) follows a base record instead of its event");
    write_units(path, 5, {time, context, pair, wide, end});
    CHECK_THROWS_WITH(trace::read_file(path), path + ": corrupt: the last record before the end is a wide record");
    write_units(path, 5, {time, context, {pair.a, op_bits(TraceOp::time)}, end});
    CHECK_THROWS_WITH(trace::read_file(path),
                      path + ": corrupt: record 2 holds an event of unknown operation 11");
}

namespace {

// The same calls recorded by earlier versions' recorders, from one list
// engine of cid 0, rank 1 of 4: post_recv(ANY_SOURCE, 7) at 0x1000;
// arrive(2, 7) at 0x2000; arrive(3, -20) at 0xabcd000000003000 with a bcast
// hint (1024 bytes, 4 processes); probe(3, ANY_TAG), which finds nothing
// (ANY_TAG never takes a negative tag); post_recv(3, -20) at 0x4000, same
// hint; post_recv(1, 5) at 0x5000; its cancel; collective_begin and _end
// (bcast). Version 3: main at 8d17ebc; version 4: main at 8528c7c
// (trace_old_versions.h).
// Reads one of them back: every field of every event.
void check_old_trace(const unsigned char *bytes, size_t size, uint32_t version) {
    Recording rec(false);
    const std::string path = rec.dir + "/old.umt";
    std::FILE *out = std::fopen(path.c_str(), "wb");
    REQUIRE(out != nullptr);
    REQUIRE(std::fwrite(bytes, 1, size, out) == size);
    std::fclose(out);
    const trace::TraceFile f = trace::read_file(path);
    CHECK(f.header.version == version);
    CHECK(f.header.rank == 1);
    CHECK(std::string(f.header.backend) == "list");
    CHECK(f.dropped == 0);
    struct Want {
        TraceOp op;
        int32_t source, tag;
        uint8_t result;
        uint64_t id, matched;
        uint16_t coll;
    };
    const Want want[] = {{TraceOp::comm_create, 1, 4, 0, 0, 0, 0},
                         {TraceOp::post_recv, UM_ANY_SOURCE, 7, 0, 1, 0, 0},
                         {TraceOp::arrive, 2, 7, 1, 2, 1, 0},
                         {TraceOp::arrive, 3, -20, 0, 3, 0, UM_COLL_BCAST},
                         {TraceOp::probe, 3, UM_ANY_TAG, 0, 0, 0, 0},
                         {TraceOp::post_recv, 3, -20, 1, 4, 3, UM_COLL_BCAST},
                         {TraceOp::post_recv, 1, 5, 0, 5, 0, 0},
                         {TraceOp::cancel, 1, 5, 1, 5, 0, 0},
                         {TraceOp::coll_begin, 0, 0, 0, 0, 0, UM_COLL_BCAST},
                         {TraceOp::coll_end, 0, 0, 0, 0, 0, UM_COLL_BCAST}};
    REQUIRE(f.records.size() == sizeof want / sizeof want[0]);
    for (size_t i = 0; i < f.records.size(); ++i) {
        INFO("event " << i);
        const TraceRecord &r = f.records[i];
        CHECK(r.op == static_cast<uint8_t>(want[i].op));
        CHECK(r.cid == 0);
        CHECK(r.source == want[i].source);
        CHECK(r.tag == want[i].tag);
        CHECK(r.result == want[i].result);
        CHECK(r.id == want[i].id);
        CHECK(r.matched == want[i].matched);
        CHECK(r.coll == want[i].coll);
        CHECK(r.msg_size == (want[i].coll != 0 ? 1024u : 0u));
    }
}

} // namespace

TEST_CASE("version 3 and 4 traces are still read, every field", "[trace]") {
    SECTION("version 3") { check_old_trace(kV3, sizeof kV3, 3); }
    SECTION("version 4") { check_old_trace(kV4, sizeof kV4, 4); }
}

TEST_CASE("event times are interpolated between the time records", "[trace]") {
    Recording rec(false);
    // 4 spans of time records; a pause after every 40 events: the times must
    // cover the pauses, never go back, and differ from event to event (not
    // one time per span).
    constexpr size_t kEvents = 4 * trace::kTimeEvery;
    constexpr unsigned kPauseUs = 2000;
    size_t pauses = 0;
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("list", 2, default_params()), 0, 0);
        um_match_t m{};
        for (size_t i = 0; i < kEvents; ++i) {
            REQUIRE(e->arrive(1, 1, kP2P, h(0x100 + 8 * i), &m) == UM_OK);
            if (i % 40 == 39) {
                ::usleep(kPauseUs);
                ++pauses;
            }
        }
    }
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
    REQUIRE(f.records.size() == 1 + kEvents);
    size_t distinct = 0;
    for (size_t i = 2; i < f.records.size(); ++i) {
        INFO("event " << i);
        REQUIRE(f.records[i].t_ns >= f.records[i - 1].t_ns);
        distinct += f.records[i].t_ns != f.records[i - 1].t_ns;
    }
    CHECK(f.records.back().t_ns - f.records[1].t_ns >= (pauses - 1) * kPauseUs * 1000);
    CHECK(distinct >= kEvents - 8);
}

TEST_CASE("a version 2 trace is still read; an unknown version is refused, named", "[trace]") {
    Recording rec(false);
    // Version 2: 48-byte records, each with its own tick and the addresses.
    trace::TraceHeader head{};
    std::memcpy(head.magic, trace::kMagic, sizeof head.magic);
    head.version = 2;
    head.record_size = sizeof(TraceRecord);
    head.rank = 3;
    head.ns_per_tick = 2.0;
    auto rec2 = [](uint64_t t, TraceOp op, int32_t source, int32_t tag, uint64_t id, uint64_t matched) {
        TraceRecord r{};
        r.t_ns = t;
        r.op = static_cast<uint8_t>(op);
        r.result = matched != 0;
        r.source = source;
        r.tag = tag;
        r.id = id;
        r.matched = matched;
        return r;
    };
    const std::vector<TraceRecord> body = {
        rec2(1, TraceOp::comm_create, 3, 4, 0, 0), rec2(5, TraceOp::arrive, 1, 9, 0x5000, 0),
        rec2(7, TraceOp::post_recv, 1, 9, 0x6000, 0x5000), rec2(2, TraceOp::end, 0, 0, 0, 0)};
    const std::string path = rec.dir + "/v2.umt";
    auto write = [&](const trace::TraceHeader &hd) {
        std::FILE *out = std::fopen(path.c_str(), "wb");
        REQUIRE(out != nullptr);
        std::fwrite(&hd, sizeof hd, 1, out);
        std::fwrite(body.data(), sizeof(TraceRecord), body.size(), out);
        std::fclose(out);
    };
    write(head);
    const trace::TraceFile f = trace::read_file(path);
    REQUIRE(f.records.size() == 3);
    CHECK(f.dropped == 2);
    CHECK(f.records[1].id == 1);
    CHECK(f.records[2].id == 2);
    CHECK(f.records[2].matched == 1);
    CHECK(f.records[2].t_ns == 14); // 7 ticks of 2 ns

    head.version = trace::kVersion + 1;
    write(head);
    CHECK_THROWS_WITH(trace::read_file(path),
                      path + ": trace format version " + std::to_string(trace::kVersion + 1) +
                          ", this build reads versions 2 to " + std::to_string(trace::kVersion));
}

// Damaged files: a recorded trace with bits flipped, bytes overwritten,
// records repeated or the file cut anywhere is read or refused with an error
// naming the file, never anything else (under ASan in the test command: no
// read out of bounds either); a file cut short of its end is always refused.
TEST_CASE("a damaged trace is read or refused by name, never worse", "[trace]") {
    Recording rec(false);
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("auto", 8, default_params()), 0, 0);
        um_match_t m{};
        for (int i = 0; i < 300; ++i) {
            const um_hint_t hint{static_cast<uint16_t>(i % 7 == 0 ? 1 : 0), 0, static_cast<uint32_t>(i % 3 * 4096), 8};
            REQUIRE(e->post_recv(i % 5 == 0 ? UM_ANY_SOURCE : i % 8, i % 11, hint, h(0x1000 + 16 * i + i % 2), &m) == UM_OK);
            REQUIRE(e->arrive(i % 8, i % 11, hint, h(0x90000 + 16 * i), &m) == UM_OK);
            if (i % 13 == 0) {
                REQUIRE(e->probe(i % 8, UM_ANY_TAG, hint, &m) == UM_OK);
            }
        }
    }
    rec.stop();
    const std::string path = rec.dir + "/rank-0.umt";
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> good{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    REQUIRE(good.size() > 56 + 8 * 600);
    REQUIRE(trace::read_file(path).records.size() > 600);
    const std::string bad = rec.dir + "/bad.umt";
    std::mt19937 rng(2026);
    int read = 0, refused = 0, cut_read = 0, cut_partial = 0;
    const std::vector<TraceRecord> whole = trace::read_file(path).records;
    for (int it = 0; it < 3000; ++it) {
        std::vector<char> b = good;
        const int kind = it % 4;
        if (kind == 0) { // bits flipped anywhere, the header included
            for (int k = 0; k < 1 + it % 4; ++k) {
                b[rng() % b.size()] ^= static_cast<char>(1 << rng() % 8);
            }
        } else if (kind == 1) { // bytes overwritten in the records
            for (int k = 0; k < 1 + it % 8; ++k) {
                b[56 + rng() % (b.size() - 56)] = static_cast<char>(rng());
            }
        } else if (kind == 2) { // cut anywhere before the end record's last byte
            b.resize(rng() % (b.size() - 1));
        } else { // a record repeated
            const size_t at = 56 + 16 * (1 + rng() % ((b.size() - 56) / 16 - 2));
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), good.begin() + static_cast<std::ptrdiff_t>(at - 16),
                     good.begin() + static_cast<std::ptrdiff_t>(at));
        }
        {
            std::ofstream out(bad, std::ios::binary | std::ios::trunc);
            out.write(b.data(), static_cast<std::streamsize>(b.size()));
        }
        if (kind == 2 && b.size() >= sizeof(trace::TraceHeader)) {
            // --partial: what comes before the cut, event for event (times aside:
            // the last ones are interpolated up to a time record now missing).
            const trace::TraceFile f = trace::read_file(bad, true);
            CHECK(f.cut);
            REQUIRE(f.records.size() <= whole.size());
            size_t events = 0; // among the whole records left
            for (size_t at = sizeof(trace::TraceHeader); at + 16 <= b.size(); at += 16) {
                trace::PackedRecord p{};
                std::memcpy(&p, &good[at], sizeof p);
                events += trace::events_in(p);
            }
            CHECK(f.records.size() == events);
            // As direct I/O leaves it: the space allocated ahead, zeros.
            std::vector<char> padded = b;
            padded.resize((b.size() - sizeof(trace::TraceHeader)) / 16 * 16 + sizeof(trace::TraceHeader));
            padded.resize(padded.size() + 4096);
            const std::string zeros = bad + ".zeros";
            {
                std::ofstream out(zeros, std::ios::binary | std::ios::trunc);
                out.write(padded.data(), static_cast<std::streamsize>(padded.size()));
            }
            CHECK_THROWS_WITH(trace::read_file(zeros), Catch::Contains("the file ends in zeros") &&
                                                           Catch::Contains("--partial replays the events"));
            CHECK(trace::read_file(zeros, true).records.size() == events);
            for (size_t i = 0; i < f.records.size(); ++i) {
                TraceRecord r = f.records[i];
                r.t_ns = whole[i].t_ns;
                CHECK(std::memcmp(&r, &whole[i], sizeof r) == 0);
            }
            ++cut_partial;
        }
        try {
            const trace::TraceFile f = trace::read_file(bad);
            ++read;
            cut_read += kind == 2;
            CHECK(f.records.size() < 4 * good.size() / 16); // nothing made up from a corrupt count
        } catch (const std::runtime_error &err) {
            ++refused;
            CHECK(std::string(err.what()).rfind(bad + ": ", 0) == 0);
        }
    }
    INFO(read << " read, " << refused << " refused");
    CHECK(cut_read == 0);
    CHECK(cut_partial >= 700); // each cut past the header, read up to its cut
    CHECK(refused >= 750); // every cut file at least
    CHECK(read > 0);       // and some damage the format cannot see (a tag changed) is read
}

// The trace file writer (matching/trace_writer.h): direct I/O and buffered
// write the same bytes across many chunks (4 KiB carried from one chunk to
// the next, records cut by the carry), and a write that fails ends the file
// at the last whole record with every later event counted, in both modes; a
// writer that cannot write the end record reports that write's errno, and
// the recorder says both on stderr.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "matching/registry.h"
#include "matching/trace.h"
#include "matching/trace_writer.h"
#include "test/engine/trace_test_dir.h"

using namespace ubermatch;
using trace::PackedRecord;
using trace::TraceOp;
using trace::TraceWriter;

namespace {

constexpr size_t kHeader = 56; // as TraceHeader

// Whether this file system takes what direct() needs: O_DIRECT and fallocate.
bool takes_direct(const std::string &dir) {
    const std::string p = dir + "/probe";
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644);
    const bool ok = fd >= 0 && ::fallocate(fd, 0, 0, 4096) == 0;
    if (fd >= 0) {
        ::close(fd);
    }
    ::unlink(p.c_str());
    return ok;
}

// takes_direct(dir), saying what goes untested where it does not.
bool direct_or_warn(const std::string &dir, const char *untested) {
    const bool can = takes_direct(dir);
    if (!can) {
        WARN("the file system under /tmp refuses O_DIRECT or fallocate: " << untested << " untested here");
    }
    return can;
}

std::vector<char> bytes_of(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Unit i: a time record (no event) every fifth, else one event (post_recv)
// or, every other, two (an arrive in the second half).
PackedRecord record(uint64_t i) {
    if (i % 5 == 4) {
        return {i << 8 | static_cast<uint8_t>(TraceOp::time), ~i};
    }
    return {i << 8 | static_cast<uint8_t>(TraceOp::post_recv), i % 2 != 0 ? i << 8 | static_cast<uint8_t>(TraceOp::arrive) : 0};
}

// Writes records 0..n-1 through a writer, committing after a random number of
// them (at most the room) so that chunks end at every alignment; returns the
// writer's lost count after finish, and whether finish wrote the end.
struct Written {
    bool direct;
    bool whole;
    uint64_t lost;
    off_t direct_from; // automatic: where direct I/O took over (-1: never)
    size_t buffered_room, direct_room; // the most bytes a chunk offered while buffered, and while direct
};
Written write_records(const std::string &path, uint64_t n, trace::WriteMode mode, const std::vector<char> &header,
                      double slow_ns_per_byte = trace::kSlowPageCacheNsPerByte) {
    TraceWriter w(path, header.data(), header.size(), mode, slow_ns_per_byte);
    REQUIRE(w.ok());
    const bool was_direct = w.direct();
    std::mt19937 rng(17);
    size_t room[2] = {0, 0}; // [direct]
    size_t k = 0;
    size_t stop = w.room() - rng() % 64;
    for (uint64_t i = 0; i < n; ++i) {
        if (k == stop) {
            size_t &r = room[w.direct()];
            r = std::max(r, w.room() * sizeof(PackedRecord));
            w.commit(k);
            k = 0;
            stop = w.room() - rng() % 64;
        }
        w.area()[k++] = record(i);
    }
    std::vector<char> last = header;
    last[0] ^= 1; // the header rewritten at the end must be what the file starts with
    const bool whole = w.finish(k, {static_cast<uint8_t>(TraceOp::end), 0}, last.data());
    return {was_direct, whole, w.lost(), w.direct_from(), room[0], room[1]};
}

std::vector<char> header_bytes() {
    std::vector<char> h(kHeader);
    for (size_t i = 0; i < kHeader; ++i) {
        h[i] = static_cast<char>('a' + i % 26);
    }
    return h;
}

// The file holds the header (its first byte flipped), records 0..kept-1, and
// an end record counting `lost` events.
void check_file(const std::string &path, uint64_t kept, uint64_t lost) {
    const std::vector<char> f = bytes_of(path);
    std::vector<char> h = header_bytes();
    h[0] ^= 1;
    REQUIRE(f.size() == kHeader + (kept + 1) * sizeof(PackedRecord));
    REQUIRE(std::memcmp(f.data(), h.data(), kHeader) == 0);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < kept; ++i) {
        PackedRecord r;
        std::memcpy(&r, f.data() + kHeader + i * sizeof r, sizeof r);
        const PackedRecord want = record(i);
        bad += r.a != want.a || r.b != want.b;
    }
    CHECK(bad == 0);
    PackedRecord end;
    std::memcpy(&end, f.data() + kHeader + kept * sizeof end, sizeof end);
    CHECK(trace::op_of(end) == static_cast<uint8_t>(TraceOp::end));
    CHECK(end.b == lost);
}

// The share of the pages of the file's bytes [from, to) (to 0: its end) in
// the page cache (mincore): direct writes leave none behind, buffered ones all.
double cached_share(const std::string &path, size_t from = 0, size_t to = 0) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    const size_t size = std::filesystem::file_size(path);
    void *map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    REQUIRE(map != MAP_FAILED);
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in((size + page - 1) / page);
    REQUIRE(::mincore(map, size, in.data()) == 0);
    ::munmap(map, size);
    const size_t first = from / page, last = (to == 0 ? size : to) / page;
    REQUIRE(first < last);
    size_t cached = 0;
    for (size_t i = first; i < last; ++i) {
        cached += in[i] & 1;
    }
    return static_cast<double>(cached) / static_cast<double>(last - first);
}

uint64_t events_in(uint64_t from, uint64_t to) {
    uint64_t n = 0;
    for (uint64_t i = from; i < to; ++i) {
        n += trace::events_in(record(i));
    }
    return n;
}

// RLIMIT_FSIZE lowered to `bytes` between on() and off(), with SIGXFSZ
// ignored so that a write past it fails (EFBIG) instead of killing the
// process; both restored when it leaves scope, a failed REQUIRE included.
// able(): false where the hard limit is below `bytes` already.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) : handler_(std::signal(SIGXFSZ, SIG_IGN)) {
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_) == 0);
        lowered_ = old_;
        lowered_.rlim_cur = bytes;
        able_ = old_.rlim_max == RLIM_INFINITY || old_.rlim_max >= bytes;
    }
    ~FileSizeLimit() {
        off();
        std::signal(SIGXFSZ, handler_);
    }
    FileSizeLimit(const FileSizeLimit &) = delete;
    FileSizeLimit &operator=(const FileSizeLimit &) = delete;
    bool able() const { return able_; }
    void on() { REQUIRE(::setrlimit(RLIMIT_FSIZE, &lowered_) == 0); }
    void off() { ::setrlimit(RLIMIT_FSIZE, &old_); }

private:
    void (*const handler_)(int);
    rlimit old_{};
    rlimit lowered_{};
    bool able_ = false;
};

} // namespace

TEST_CASE("direct and buffered writers write the same file across many chunks", "[trace]") {
    TempDir dir;
    const bool can = direct_or_warn(dir.path, "direct I/O");
    constexpr uint64_t kRecords = 300000; // 4.6 MiB: nine direct chunks, 36 buffered
    for (bool direct : {true, false}) {
        INFO("direct " << direct);
        const std::string path = dir.path + (direct ? "/direct.umt" : "/buffered.umt");
        const Written w = write_records(path, kRecords, write_mode(direct), header_bytes());
        CHECK(w.direct == (direct && can));
        CHECK(w.whole);
        CHECK(w.lost == 0);
        // Buffered chunks small (both in L2), direct ones large (an io_submit's cost is per call);
        // each with the 4 KiB carried over at most.
        const bool went_direct = direct && can;
        const size_t most = went_direct ? trace::kDirectChunk : trace::kBufferedChunk;
        const size_t room = went_direct ? w.direct_room : w.buffered_room;
        CHECK(room <= most + 4096);
        CHECK(room >= most);
        CHECK((went_direct ? w.buffered_room : w.direct_room) == 0);
        if (direct && can) { // before check_file reads it in: only the header's and the last pages went buffered
            CHECK(cached_share(path) < 0.05);
        }
        check_file(path, kRecords, 0);
    }
}

// pml_ubermatch_trace_direct auto: through the page cache until the median of
// its last writes is slow, direct I/O from the next chunk on; the file is the
// same bytes either way. A bound of 0 makes every write slow, one of infinity
// none.
TEST_CASE("the automatic writer goes direct once the page cache is slow, and writes the same file", "[trace]") {
    TempDir dir;
    const bool can = direct_or_warn(dir.path, "the switch to direct I/O");
    constexpr uint64_t kRecords = 600000; // 9.2 MiB: 8 buffered chunks and 16 direct ones at most
    constexpr size_t kChunk = trace::kBufferedChunk;
    for (double bound : {0.0, HUGE_VAL}) {
        INFO("slow beyond " << bound << " ns a byte");
        const std::string path = dir.path + (bound == 0 ? "/slow.umt" : "/fast.umt");
        const Written w = write_records(path, kRecords, trace::WriteMode::automatic, header_bytes(), bound);
        CHECK_FALSE(w.direct); // buffered to begin with
        CHECK(w.whole);
        CHECK(w.lost == 0);
        if (bound == 0 && can) {
            INFO("direct from byte " << w.direct_from);
            // After kJudged whole buffered chunks (those of the random commits are 127-132 KiB), at a 4 KiB
            // boundary; direct chunks from there on.
            CHECK(w.direct_from % 4096 == 0);
            CHECK(w.direct_from >= static_cast<off_t>(trace::kJudged * (kChunk - 64 * sizeof(PackedRecord))));
            CHECK(w.direct_from <= static_cast<off_t>((trace::kJudged + 1) * kChunk));
            const size_t at = static_cast<size_t>(w.direct_from);
            CHECK(cached_share(path, 0, at) > 0.5);
            CHECK(cached_share(path, at, std::filesystem::file_size(path) - 2 * trace::kDirectChunk) < 0.05);
            CHECK(w.buffered_room <= kChunk + 4096);
            CHECK(w.direct_room >= trace::kDirectChunk);
        } else {
            CHECK(w.direct_from == -1);
            CHECK(w.buffered_room <= kChunk + 4096);
            CHECK(cached_share(path) > 0.5);
        }
        check_file(path, kRecords, 0);
    }
}

// A trace file that is a device (a link to /dev/null: trace_cost --devnull
// measures the append without the file's writes that way) has no length to
// set: the writer takes it, writes everything, and finishes whole.
TEST_CASE("a trace file that is a link to /dev/null is written whole, direct or buffered", "[trace]") {
    TempDir dir;
    const std::string path = dir.path + "/null.umt";
    REQUIRE(::symlink("/dev/null", path.c_str()) == 0);
    for (bool direct : {true, false}) {
        INFO("direct " << direct);
        const Written w = write_records(path, 100000, write_mode(direct), header_bytes());
        CHECK(w.whole);
        CHECK(w.lost == 0);
    }
}

// Two mpiruns recording into one directory name their files alike: the
// second to come leaves the first's file alone, and a later run (the first
// finished) takes the file over.
TEST_CASE("a file another writer is still writing is left whole, a finished one is taken over", "[trace]") {
    TempDir dir;
    for (bool direct : {true, false}) {
        INFO("direct " << direct);
        const std::string path = dir.path + (direct ? "/direct.umt" : "/buffered.umt");
        const std::vector<char> header = header_bytes();
        constexpr uint64_t kRecords = 50000; // more than a chunk: some written before the other writer comes
        {
            TraceWriter first(path, header.data(), header.size(), write_mode(direct));
            REQUIRE(first.ok());
            uint64_t i = 0;
            for (; i < first.room(); ++i) {
                first.area()[i] = record(i);
            }
            first.commit(first.room());
            {
                TraceWriter second(path, header.data(), header.size(), write_mode(direct));
                CHECK_FALSE(second.ok());
                CHECK(second.error() == EBUSY);
            }
            size_t k = 0;
            for (; i < kRecords; ++i) {
                if (k == first.room()) {
                    first.commit(k);
                    k = 0;
                }
                first.area()[k++] = record(i);
            }
            std::vector<char> last = header;
            last[0] ^= 1;
            CHECK(first.finish(k, {static_cast<uint8_t>(TraceOp::end), 0}, last.data()));
        }
        check_file(path, kRecords, 0);
        const Written again = write_records(path, 1000, write_mode(direct), header); // a rerun
        CHECK(again.whole);
        check_file(path, 1000, 0);
    }
}

TEST_CASE("a failed write ends the file at its last whole record and counts every event after it", "[trace]") {
    TempDir dir;
    const bool can = takes_direct(dir.path);
    // The file size limit makes every write past it fail (EFBIG); the direct
    // writer needs its first 4 MiB allocated, so the limit lies beyond.
    constexpr rlim_t kLimit = (rlim_t{4} << 20) + 700 * 1024 + 3;
    constexpr uint64_t kRecords = 500000; // 7.6 MiB
    FileSizeLimit limit(kLimit);
    if (!limit.able()) {
        WARN("RLIMIT_FSIZE is below this test's limit already: skipped");
        return;
    }
    for (bool direct : {true, false}) {
        INFO("direct " << direct);
        const std::string path = dir.path + (direct ? "/direct.umt" : "/buffered.umt");
        limit.on();
        const Written w = write_records(path, kRecords, write_mode(direct), header_bytes());
        limit.off();
        CHECK(w.direct == (direct && can));
        CHECK(w.whole);
        const uint64_t size = std::filesystem::file_size(path);
        REQUIRE(size >= kHeader + sizeof(PackedRecord));
        const uint64_t kept = (size - kHeader) / sizeof(PackedRecord) - 1;
        INFO("kept " << kept << " of " << kRecords << " records");
        CHECK(kHeader + kept * sizeof(PackedRecord) <= kLimit);
        CHECK(kHeader + kept * sizeof(PackedRecord) > kLimit - (size_t{1} << 20)); // lost at most two chunks
        CHECK(w.lost == events_in(kept, kRecords));
        check_file(path, kept, w.lost);
    }
}

TEST_CASE("a trace of many chunks is read back whole, direct or buffered", "[trace]") {
    for (bool direct : {true, false}) {
        INFO("direct " << direct);
        Recording rec(false, direct);
        constexpr int kMessages = 150000; // 300000 events: 4.6 MiB
        {
            std::unique_ptr<Engine> e = trace::record(make_engine("list", 4, default_params()), 0, 0);
            um_match_t m{};
            const um_hint_t hint{};
            for (int i = 0; i < kMessages; ++i) {
                const auto req = reinterpret_cast<void *>(uintptr_t{0x1000} + 8 * static_cast<uintptr_t>(i % 100));
                const auto msg = reinterpret_cast<void *>(uintptr_t{0x9000} + 8 * static_cast<uintptr_t>(i % 100));
                REQUIRE(e->post_recv(i % 4, i % 1000, hint, req, &m) == UM_OK);
                REQUIRE(e->arrive(i % 4, i % 1000, hint, msg, &m) == UM_OK);
            }
        }
        rec.stop();
        const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
        CHECK(f.dropped == 0);
        REQUIRE(f.records.size() == 1 + 2 * static_cast<size_t>(kMessages)); // comm_create first
        uint64_t bad = 0;
        for (int i = 0; i < kMessages; ++i) {
            const trace::TraceRecord &p = f.records[1 + 2 * static_cast<size_t>(i)];
            const trace::TraceRecord &a = f.records[2 + 2 * static_cast<size_t>(i)];
            bad += p.op != static_cast<uint8_t>(TraceOp::post_recv) || a.op != static_cast<uint8_t>(TraceOp::arrive) ||
                   p.source != i % 4 || p.tag != i % 1000 || a.tag != i % 1000 || a.matched != p.id;
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("a writer that never finishes leaves a file the reader calls unfinished", "[trace]") {
    TempDir dir;
    for (bool direct : {true, false}) {
        INFO("direct " << direct);
        const std::string path = dir.path + (direct ? "/direct.umt" : "/buffered.umt");
        {
            // A real header, so that only the missing end is wrong.
            trace::TraceHeader h{};
            std::memcpy(h.magic, trace::kMagic, sizeof h.magic);
            h.version = trace::kVersion;
            h.record_size = sizeof(PackedRecord);
            h.ns_per_tick = 1.0;
            TraceWriter w(path, &h, sizeof h, write_mode(direct));
            REQUIRE(w.ok());
            for (int c = 0; c < 2; ++c) { // two chunks: one written, one in flight when it dies
                for (size_t i = 0; i < w.room(); ++i) {
                    w.area()[i] = record(i);
                }
                w.commit(w.room());
            }
        } // as a process that dies: no finish()
        try {
            trace::read_file(path);
            FAIL("an unfinished trace was read");
        } catch (const std::runtime_error &e) {
            const std::string what = e.what();
            INFO(what);
            CHECK(what.find(path + ": truncated: ") == 0); // buffered: a partial record at the end
            if (direct && takes_direct(dir.path)) {
                CHECK(what.find("the file ends in zeros") != std::string::npos);
            }
        }
    }
}

TEST_CASE("the last time record fits whatever the last events needed", "[trace]") {
    // Events that change the context or carry an unaligned address (a wide
    // record) at random, as an LCG draws them: with seed 105 the 16270th event
    // ends exactly at the first chunk's last slot (the recorder's rules,
    // simulated), where the destructor's time record went one past it (ASan).
    constexpr uint64_t kSeed = 105;
    constexpr int kEvents = 16270;
    Recording rec(false);
    uint32_t msg_size = 0;
    {
        std::unique_ptr<Engine> e = trace::record(make_engine("list", 2, default_params()), 0, 0);
        um_match_t m{};
        uint64_t x = kSeed;
        for (int i = 0; i < kEvents; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            msg_size ^= static_cast<uint32_t>((x >> 33) & 1); // a new context when it flips
            const bool wide = ((x >> 34) & 1) != 0;
            const um_hint_t hint{0, 0, msg_size, 2};
            const uintptr_t address = uintptr_t{0x1000} + 16 * static_cast<uintptr_t>(i) + (wide ? 1 : 0);
            REQUIRE(e->arrive(1, 5, hint, reinterpret_cast<void *>(address), &m) == UM_OK);
        }
    }
    rec.stop();
    const trace::TraceFile f = trace::read_file(rec.dir + "/rank-0.umt");
    REQUIRE(f.records.size() == 1 + static_cast<size_t>(kEvents)); // comm_create first
    CHECK(f.records.back().msg_size == msg_size);
}

TEST_CASE("a writer that cannot write its end says why", "[trace]") {
    TempDir dir;
    const std::string path = dir.path + "/end.umt";
    // The header (written at creation) fits under the file size limit, no
    // record does: the records' write fails, the file is cut after the
    // header, and the end record's write there fails with EFBIG.
    FileSizeLimit limit(kHeader + 4);
    if (!limit.able()) {
        WARN("RLIMIT_FSIZE is below this test's limit already: skipped");
        return;
    }
    const std::vector<char> header = header_bytes();
    limit.on();
    TraceWriter w(path, header.data(), header.size(), trace::WriteMode::direct);
    const bool made = w.ok();
    for (uint64_t i = 0; i < 10; ++i) {
        w.area()[i] = record(i);
    }
    const bool whole = w.finish(10, {static_cast<uint8_t>(TraceOp::end), 0}, header.data());
    limit.off(); // before any report: the test's own output may go to a file
    REQUIRE(made);
    CHECK_FALSE(whole);
    CHECK(w.lost() == events_in(0, 10));
    CHECK(w.error() == EFBIG);
}

TEST_CASE("a recording whose writes fail says so on stderr: the events dropped and why its end is missing", "[trace]") {
    FileSizeLimit limit(kHeader + 4);
    if (!limit.able()) {
        WARN("RLIMIT_FSIZE is below this test's limit already: skipped");
        return;
    }
    Recording rec(false, false);
    std::fflush(stderr);
    const int saved = ::dup(2);
    int pipe_fds[2]; // stderr into a pipe: a file would be cut by the same size limit
    REQUIRE(saved >= 0);
    REQUIRE(::pipe(pipe_fds) == 0);
    {
        // The header is written when the engine creates the recorder; then
        // nothing more fits, and the last engine's end writes the file.
        std::unique_ptr<Engine> e = trace::record(make_engine("list", 4, default_params()), 0, 0);
        limit.on();
        um_match_t m{};
        const um_hint_t hint{};
        for (uintptr_t i = 1; i <= 10; ++i) {
            REQUIRE(e->post_recv(1, 5, hint, reinterpret_cast<void *>(i << 4), &m) == UM_OK);
        }
        ::dup2(pipe_fds[1], 2);
    }
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    ::close(pipe_fds[1]);
    limit.off();
    std::string text;
    char chunk[512];
    for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) {
        text.append(chunk, static_cast<size_t>(n));
    }
    ::close(pipe_fds[0]);
    INFO(text);
    CHECK(text.find("rank-0.umt: 11 events dropped (write failed)") != std::string::npos); // comm_create + 10
    CHECK(text.find("cannot write its end (" + std::string(std::strerror(EFBIG)) + ")") != std::string::npos);
}

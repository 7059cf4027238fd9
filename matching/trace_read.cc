// Reading a matching trace back, with a clear error for every way a file can
// be wrong: each names the file and the problem.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <memory>
#include <unordered_map>

#include <sys/stat.h>

#include "matching/trace.h"

namespace ubermatch {
namespace trace {

const char *op_name(uint8_t op) {
    static const char *const names[] = {"?",     "comm_create", "post_recv",  "arrive",   "probe",
                                        "mprobe", "cancel",     "coll_begin", "coll_end", "end"};
    return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

namespace {

// The file holds the addresses the engine was given, unique only among the
// elements queued at one time (the recording process reuses its requests and
// descriptors): following the queues turns them into ids 1, 2, ... An element
// that matched nothing is queued (its address names it until it leaves); a
// match, an mprobe or a cancel that removed it takes it out. One map for the
// whole file: an address is queued in one communicator at a time.
void to_ids_and_ns(TraceFile &t) {
    std::unordered_map<uint64_t, uint64_t> queued;
    uint64_t next = 0;
    auto id_of = [&](uint64_t address, bool leaves) -> uint64_t {
        if (address == 0) {
            return 0;
        }
        const auto it = queued.find(address);
        if (it == queued.end()) {
            return kUnknownId;
        }
        const uint64_t id = it->second;
        if (leaves) {
            queued.erase(it);
        }
        return id;
    };
    for (TraceRecord &r : t.records) {
        r.t_ns = static_cast<uint64_t>(static_cast<double>(r.t_ns) * t.header.ns_per_tick);
        switch (static_cast<TraceOp>(r.op)) {
        case TraceOp::post_recv:
        case TraceOp::arrive: {
            r.matched = id_of(r.matched, true);
            const uint64_t address = r.id;
            r.id = ++next;
            if (r.result == 0) {
                queued[address] = r.id; // a stale entry of a reused address is replaced
            }
            break;
        }
        case TraceOp::probe: r.matched = id_of(r.matched, false); break;
        case TraceOp::mprobe: r.matched = id_of(r.matched, true); break;
        case TraceOp::cancel: r.id = id_of(r.id, r.result == 1); break;
        default: r.id = r.matched = 0; break;
        }
    }
}

// Version 3's records into events: the context, high and time records are
// folded into the events after them; an event's time is interpolated between
// the time records around it (by its position among the events between them).
class Unpacker {
public:
    explicit Unpacker(TraceFile &t) : t_(t) {}

    // Throws, naming the file, for a record that cannot be.
    void add(const PackedRecord &p, size_t index) {
        const auto op = static_cast<uint8_t>(p.b);
        switch (static_cast<TraceOp>(op)) {
        case TraceOp::context:
            cid_ = static_cast<uint32_t>(p.source);
            msg_size_ = static_cast<uint32_t>(p.a >> 32);
            comm_size_ = static_cast<uint32_t>(p.a);
            context_ = true;
            return;
        case TraceOp::time: stamp(std::max(p.a, tick_)); return;
        case TraceOp::high:
            high_id_ = p.a << kAddressBits;
            high_matched_ = static_cast<uint64_t>(static_cast<uint32_t>(p.source)) << kAddressBits;
            return;
        default: break;
        }
        if (op < static_cast<uint8_t>(TraceOp::comm_create) || op >= static_cast<uint8_t>(TraceOp::end)) {
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) +
                                     " has unknown operation " + std::to_string(op));
        }
        if (!context_ || !timed_) {
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) +
                                     " is an event before any context and time record");
        }
        TraceRecord r{};
        r.t_ns = tick_;
        r.cid = cid_;
        r.op = op;
        r.result = static_cast<uint8_t>(p.b >> 8);
        r.coll = static_cast<uint16_t>(p.a);
        r.source = p.source;
        r.tag = p.tag;
        r.msg_size = msg_size_;
        r.hint_comm_size = comm_size_;
        r.id = p.a >> 16 | high_id_;
        r.matched = p.b >> 16 | high_matched_;
        high_id_ = high_matched_ = 0;
        t_.records.push_back(r);
    }
    // The events after the last time record keep its time.
    void finish() { stamp(tick_); }

private:
    void stamp(uint64_t tick) {
        const size_t n = t_.records.size() - since_;
        const double step = n != 0 ? static_cast<double>(tick - tick_) / static_cast<double>(n) : 0;
        for (size_t k = 0; k < n; ++k) {
            t_.records[since_ + k].t_ns = tick_ + static_cast<uint64_t>(step * static_cast<double>(k));
        }
        since_ = t_.records.size();
        tick_ = tick;
        timed_ = true;
    }

    TraceFile &t_;
    uint32_t cid_ = 0, msg_size_ = 0, comm_size_ = 0;
    bool context_ = false, timed_ = false;
    uint64_t high_id_ = 0, high_matched_ = 0;
    uint64_t tick_ = 0; // the last time record's
    size_t since_ = 0;  // the first event after it
};

} // namespace

TraceFile read_file(const std::string &path) {
    auto fail = [&](const std::string &what) { throw std::runtime_error(path + ": " + what); };
    // Read straight into the records (version 2) or in pieces (version 3): a
    // 10^8-event trace is 4.8 GB in memory.
    const std::unique_ptr<std::FILE, int (*)(std::FILE *)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    struct stat st {};
    if (!f || ::fstat(::fileno(f.get()), &st) != 0) {
        fail(std::string("cannot open: ") + std::strerror(errno));
    }
    const auto size = static_cast<size_t>(st.st_size);

    TraceFile t;
    t.path = path;
    char head[sizeof(TraceHeader)] = {};
    const size_t got = std::fread(head, 1, sizeof head, f.get());
    if (got < sizeof(TraceHeader)) {
        if (got >= sizeof kMagic && std::memcmp(head, kMagic, sizeof kMagic) == 0) {
            fail("truncated: " + std::to_string(got) + " bytes, shorter than the " +
                 std::to_string(sizeof(TraceHeader)) + "-byte header");
        }
        fail("not an ubermatch trace (too short, no UMTRACE header)");
    }
    std::memcpy(&t.header, head, sizeof t.header);
    if (std::memcmp(t.header.magic, kMagic, sizeof kMagic) != 0) {
        fail("not an ubermatch trace (no UMTRACE magic at the start)");
    }
    const uint32_t version = t.header.version;
    if (version < kOldestVersion || version > kVersion) {
        fail("trace format version " + std::to_string(version) + ", this build reads versions " +
             std::to_string(kOldestVersion) + " to " + std::to_string(kVersion));
    }
    const size_t record_size = version == 2 ? sizeof(TraceRecord) : sizeof(PackedRecord);
    if (t.header.record_size != record_size) {
        fail("record size " + std::to_string(t.header.record_size) + ", version " + std::to_string(version) +
             " has " + std::to_string(record_size));
    }
    if (!(t.header.ns_per_tick > 0 && t.header.ns_per_tick < 1e6)) {
        fail("corrupt header: " + std::to_string(t.header.ns_per_tick) + " ns per clock tick");
    }
    t.header.backend[sizeof t.header.backend - 1] = '\0';
    const size_t body = size - sizeof(TraceHeader);
    if (body % record_size != 0) {
        fail("truncated: " + std::to_string(body % record_size) + " bytes of a partial record at byte " +
             std::to_string(size - body % record_size));
    }
    const size_t n = body / record_size;
    const char *const no_end = "truncated: no end record (the run did not reach MPI_Finalize, or the file was cut)";
    const char *const read_error = "read error (the file changed while read?)";
    if (version == 2) {
        t.records.resize(n);
        if (std::fread(t.records.data(), sizeof(TraceRecord), n, f.get()) != n) {
            fail(read_error);
        }
        if (t.records.empty() || t.records.back().op != static_cast<uint8_t>(TraceOp::end)) {
            fail(no_end);
        }
        t.dropped = t.records.back().t_ns;
        t.records.pop_back();
        for (size_t i = 0; i < t.records.size(); ++i) {
            const uint8_t op = t.records[i].op;
            if (op < static_cast<uint8_t>(TraceOp::comm_create) || op >= static_cast<uint8_t>(TraceOp::end)) {
                fail("corrupt: record " + std::to_string(i) + " has unknown operation " + std::to_string(op));
            }
        }
    } else {
        std::vector<PackedRecord> piece(std::min<size_t>(n, 1 << 16));
        PackedRecord last{};
        if (n == 0 || std::fseek(f.get(), static_cast<long>(size - sizeof last), SEEK_SET) != 0 ||
            std::fread(&last, sizeof last, 1, f.get()) != 1 ||
            static_cast<uint8_t>(last.b) != static_cast<uint8_t>(TraceOp::end)) {
            fail(no_end);
        }
        t.dropped = last.a;
        std::fseek(f.get(), static_cast<long>(sizeof(TraceHeader)), SEEK_SET);
        t.records.reserve(n - 1); // the events and a few context and time records
        Unpacker unpack(t);
        for (size_t i = 0; i < n - 1;) {
            const size_t k = std::min(piece.size(), n - 1 - i);
            if (std::fread(piece.data(), sizeof(PackedRecord), k, f.get()) != k) {
                fail(read_error);
            }
            for (size_t j = 0; j < k; ++j, ++i) {
                unpack.add(piece[j], i);
            }
        }
        unpack.finish();
    }
    to_ids_and_ns(t);
    return t;
}

} // namespace trace
} // namespace ubermatch

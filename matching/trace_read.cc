// Reading a matching trace back, with a clear error for every way a file can
// be wrong: each names the file and the problem.
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

} // namespace

TraceFile read_file(const std::string &path) {
    auto fail = [&](const std::string &what) { throw std::runtime_error(path + ": " + what); };
    // Read straight into the records: a 10^8-event trace is 4.8 GB.
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
    if (t.header.version != kVersion) {
        fail("trace format version " + std::to_string(t.header.version) + ", this build reads version " +
             std::to_string(kVersion));
    }
    if (t.header.record_size != sizeof(TraceRecord)) {
        fail("record size " + std::to_string(t.header.record_size) + ", version " +
             std::to_string(kVersion) + " has " + std::to_string(sizeof(TraceRecord)));
    }
    if (!(t.header.ns_per_tick > 0 && t.header.ns_per_tick < 1e6)) {
        fail("corrupt header: " + std::to_string(t.header.ns_per_tick) + " ns per clock tick");
    }
    t.header.backend[sizeof t.header.backend - 1] = '\0';
    const size_t body = size - sizeof(TraceHeader);
    if (body % sizeof(TraceRecord) != 0) {
        fail("truncated: " + std::to_string(body % sizeof(TraceRecord)) + " bytes of a partial record at byte " +
             std::to_string(size - body % sizeof(TraceRecord)));
    }
    t.records.resize(body / sizeof(TraceRecord));
    if (std::fread(t.records.data(), sizeof(TraceRecord), t.records.size(), f.get()) != t.records.size()) {
        fail("read error after byte " + std::to_string(sizeof(TraceHeader)) + " (the file changed while read?)");
    }
    if (t.records.empty() || t.records.back().op != static_cast<uint8_t>(TraceOp::end)) {
        fail("truncated: no end record (the run did not reach MPI_Finalize, or the file was cut)");
    }
    t.dropped = t.records.back().t_ns;
    t.records.pop_back();
    for (size_t i = 0; i < t.records.size(); ++i) {
        const uint8_t op = t.records[i].op;
        if (op < static_cast<uint8_t>(TraceOp::comm_create) || op >= static_cast<uint8_t>(TraceOp::end)) {
            fail("corrupt: record " + std::to_string(i) + " has unknown operation " + std::to_string(op));
        }
    }
    to_ids_and_ns(t);
    return t;
}

} // namespace trace
} // namespace ubermatch

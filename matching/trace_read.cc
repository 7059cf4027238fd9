// Reading a matching trace back, with a clear error for every way a file can
// be wrong: each names the file and the problem.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "matching/trace.h"

namespace ubermatch {
namespace trace {

const char *op_name(uint8_t op) {
    static const char *const names[] = {"?",     "comm_create", "post_recv",  "arrive",   "probe",
                                        "mprobe", "cancel",     "coll_begin", "coll_end", "end"};
    return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

TraceFile read_file(const std::string &path) {
    auto fail = [&](const std::string &what) { throw std::runtime_error(path + ": " + what); };
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
        fail(std::string("cannot open: ") + std::strerror(errno));
    }
    std::vector<char> bytes;
    char chunk[1 << 16];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) != 0) {
        bytes.insert(bytes.end(), chunk, chunk + n);
    }
    std::fclose(f);

    TraceFile t;
    t.path = path;
    if (bytes.size() < sizeof(TraceHeader)) {
        if (bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0) {
            fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                 std::to_string(sizeof(TraceHeader)) + "-byte header");
        }
        fail("not an ubermatch trace (too short, no UMTRACE header)");
    }
    std::memcpy(&t.header, bytes.data(), sizeof t.header);
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
    t.header.backend[sizeof t.header.backend - 1] = '\0';
    const size_t body = bytes.size() - sizeof(TraceHeader);
    if (body % sizeof(TraceRecord) != 0) {
        fail("truncated: " + std::to_string(body % sizeof(TraceRecord)) + " bytes of a partial record at byte " +
             std::to_string(bytes.size() - body % sizeof(TraceRecord)));
    }
    t.records.resize(body / sizeof(TraceRecord));
    if (!t.records.empty()) {
        std::memcpy(t.records.data(), bytes.data() + sizeof(TraceHeader), body);
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
    return t;
}

} // namespace trace
} // namespace ubermatch

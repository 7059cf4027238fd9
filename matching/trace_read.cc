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
        case TraceOp::comm_create:
            r.result = static_cast<uint8_t>(r.matched >> 3 & 0x1f); // the engine's relaxations and role
            r.id = r.matched = 0;
            break;
        default: r.id = r.matched = 0; break;
        }
    }
}

// Version 3's to 5's records into events: the context, time, high, base and
// wide records are folded into the events after them; an event's time is
// interpolated between the time records around it (by its position among the
// events between them).
class Unpacker {
public:
    explicit Unpacker(TraceFile &t) : t_(t) {}

    // Each throws, naming the file, for a record that cannot be.
    void add(const PackedRecord &p, size_t index) {
        using namespace v4;
        const uint8_t op = op_of(p);
        if (wide_ && !is_event(op)) {
            // The recorder writes a wide record right before its event, never elsewhere.
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) + " (operation " +
                                     std::to_string(op) + ") follows a wide record instead of its event");
        }
        switch (static_cast<TraceOp>(op)) {
        case TraceOp::context:
            context(static_cast<uint32_t>(p.a >> 32), static_cast<uint32_t>(p.b >> 32), static_cast<uint32_t>(p.b),
                    static_cast<uint16_t>(p.a >> 4));
            return;
        case TraceOp::time: stamp(std::max(p.b, tick_)); return;
        case TraceOp::wide:
            wide_ = true;
            wide_source_ = static_cast<int32_t>(static_cast<uint32_t>(p.b));
            wide_tag_ = static_cast<int32_t>(static_cast<uint32_t>(p.b >> 32));
            high_id_ = rest(p.a >> 20);
            high_matched_ = rest(p.a >> 39);
            return;
        default: break;
        }
        TraceRecord r{};
        r.op = op;
        r.result = static_cast<uint8_t>((p.a >> 4) & 3);
        r.coll = coll_;
        r.source = wide_ ? wide_source_ : signed_field(p.a >> 6, kSourceBits);
        r.tag = wide_ ? wide_tag_ : signed_field(p.b, kTagBits);
        r.id = (p.a >> kIdShift & ~kWideAddress) | high_id_; // bits 3..47 here, the rest wide
        r.matched = (p.b >> kIdShift & ~kWideAddress) | high_matched_;
        wide_ = false;
        event(r, index);
    }
    // Version 5: a unit of one or two event words, or a record of its own.
    void add_v5(const PackedRecord &p, size_t index) {
        const uint8_t op = op_of(p);
        if (is_event(op)) {
            event_word(p.a, index);
            if (p.b != 0) {
                event_word(p.b, index);
            }
            return;
        }
        if (wide_ || (once_ && op != static_cast<uint8_t>(TraceOp::wide))) {
            // The recorder writes these right before their event (base, then
            // wide), never elsewhere.
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) + " (operation " +
                                     std::to_string(op) + ") follows a " + (wide_ ? "wide" : "base") +
                                     " record instead of its event");
        }
        switch (static_cast<TraceOp>(op)) {
        case TraceOp::base: {
            const unsigned kind = (p.a >> 4) & 1;
            base_[kind] = p.b;
            once_ = true; // the recorder writes it right before its event
            exact_ = (p.a >> 7 & 1) != 0;
            once_low_ = p.a >> 8 & 7;
            return;
        }
        case TraceOp::wide:
            wide_ = true;
            wide_source_ = static_cast<int32_t>(static_cast<uint32_t>(p.b));
            wide_tag_ = static_cast<int32_t>(static_cast<uint32_t>(p.a >> 32));
            return;
        default: add(p, index); // context, time, or an unknown operation refused there
        }
    }
    void add(const PackedRecordV3 &p, size_t index) {
        const uint8_t op = op_of(p);
        switch (static_cast<TraceOp>(op)) {
        case TraceOp::context:
            context(static_cast<uint32_t>(p.source), static_cast<uint32_t>(p.a >> 32), static_cast<uint32_t>(p.a), 0);
            return;
        case TraceOp::time: stamp(std::max(p.a, tick_)); return;
        case TraceOp::high:
            high_id_ = p.a << 48;
            high_matched_ = static_cast<uint64_t>(static_cast<uint32_t>(p.source)) << 48;
            return;
        default: break;
        }
        TraceRecord r{};
        r.op = op;
        r.result = static_cast<uint8_t>(p.b >> 8);
        r.coll = static_cast<uint16_t>(p.a);
        r.source = p.source;
        r.tag = p.tag;
        r.id = p.a >> 16 | high_id_;
        r.matched = p.b >> 16 | high_matched_;
        event(r, index);
    }
    // The events after the last time record keep its time. cut: the file ends
    // where the run died (read_file's partial), possibly between a wide record
    // and its event, which is then dropped with what came after it.
    void finish(bool cut) {
        if ((wide_ || once_) && !cut) {
            throw std::runtime_error(t_.path + ": corrupt: the last record before the end is a " +
                                     (wide_ ? "wide" : "base") + " record");
        }
        stamp(tick_);
    }

private:
    // A version 5 event word; its address goes where op and result say it
    // belongs (trace_format.h: the element matched, else its own).
    void event_word(uint64_t w, size_t index) {
        using namespace v5;
        TraceRecord r{};
        r.op = static_cast<uint8_t>(w & v4::kOpMask);
        r.result = static_cast<uint8_t>((w >> 4) & 3);
        if (!is_event(r.op)) {
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) +
                                     " holds an event of unknown operation " + std::to_string(r.op));
        }
        r.coll = coll_;
        r.source = wide_ ? wide_source_ : signed_field(w >> 6, v4::kSourceBits);
        r.tag = wide_ ? wide_tag_ : signed_field(w >> kTagShift, v4::kTagBits);
        const uint64_t field = (w >> (kAddressShift - 3)) & kFieldMask;
        const uint64_t address =
            field != 0 || exact_ ? base_[kind_of(r.op, r.result)] << kBaseShift | field | once_low_ : 0;
        const auto op = static_cast<TraceOp>(r.op);
        const bool matched = op == TraceOp::probe || op == TraceOp::mprobe || op == TraceOp::comm_create ||
                             ((op == TraceOp::post_recv || op == TraceOp::arrive) && r.result == 1);
        (matched ? r.matched : r.id) = address;
        wide_ = once_ = exact_ = false;
        once_low_ = 0;
        event(r, index);
    }
    // An address's bits 0..2 and 48..63 as a wide record keeps them (19 bits).
    static uint64_t rest(uint64_t bits) { return (bits & 7) | ((bits >> 3) & 0xffff) << 48; }
    static int32_t signed_field(uint64_t bits, unsigned width) {
        const uint32_t v = static_cast<uint32_t>(bits) & ((1u << width) - 1);
        return static_cast<int32_t>(v ^ (1u << (width - 1))) - static_cast<int32_t>(1u << (width - 1));
    }
    void context(uint32_t cid, uint32_t msg_size, uint32_t comm_size, uint16_t coll) {
        cid_ = cid;
        msg_size_ = msg_size;
        comm_size_ = comm_size;
        coll_ = coll;
        context_ = true;
    }
    // An event's record with op, result, coll, source, tag, id and matched set.
    void event(TraceRecord &r, size_t index) {
        if (!is_event(r.op)) {
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) +
                                     " has unknown operation " + std::to_string(r.op));
        }
        if (!context_ || !timed_) {
            throw std::runtime_error(t_.path + ": corrupt: record " + std::to_string(index) +
                                     " is an event before any context and time record");
        }
        r.t_ns = tick_;
        r.cid = cid_;
        r.msg_size = msg_size_;
        r.hint_comm_size = comm_size_;
        high_id_ = high_matched_ = 0;
        t_.records.push_back(r);
    }
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
    uint16_t coll_ = 0; // version 4's and 5's context
    bool context_ = false, timed_ = false;
    uint64_t high_id_ = 0, high_matched_ = 0;
    bool wide_ = false; // version 4 and 5: a wide record came before the next event
    int32_t wide_source_ = 0, wide_tag_ = 0;
    uint64_t base_[2] = {0, 0}; // version 5: each kind's address bits 29..63
    bool once_ = false;         // version 5: a base record came before the next event,
    bool exact_ = false;        // which says its address is not 0 (though its bits 3..28 are)
    uint64_t once_low_ = 0;     // and gives its bits 0..2
    uint64_t tick_ = 0; // the last time record's
    size_t since_ = 0;  // the first event after it
};

void add(Unpacker &u, const PackedRecord &p, size_t i, uint32_t version) {
    version == 4 ? u.add(p, i) : u.add_v5(p, i);
}
void add(Unpacker &u, const PackedRecordV3 &p, size_t i, uint32_t) { u.add(p, i); }

// What the end record holds besides its operation: the events dropped.
uint64_t dropped_of(const PackedRecord &p) { return p.b; }
uint64_t dropped_of(const PackedRecordV3 &p) { return p.a; }

const char *const kNoEnd = "truncated: no end record (the run did not reach MPI_Finalize, or the file was cut)";
// How to read such a file all the same.
const char *const kPartialHint = "; ubermatch-replay --partial replays the events written before the cut";
const char *const kReadError = "read error (the file changed while read?)";

// Space allocated ahead and never written (no record is all zero).
template <class Packed>
bool all_zero(const Packed &p) {
    static const Packed zero{};
    return std::memcmp(&p, &zero, sizeof p) == 0;
}

// Versions 3 to 5: the end record last, the rest unpacked in pieces (a
// 10^8-event trace is 4.8 GB as TraceRecords, so the packed file is not held
// whole besides). n: the whole records after the header. partial: a file with
// no end record is read up to its first all-zero record (direct I/O allocates
// ahead) or its last whole record, and marked cut.
template <class Packed>
void unpack_file(std::FILE *f, size_t n, TraceFile &t, bool partial, uint32_t version) {
    auto fail = [&](const std::string &what) { throw std::runtime_error(t.path + ": " + what); };
    std::vector<Packed> piece(std::min<size_t>(std::max<size_t>(n, 1), 1 << 16));
    Packed last{};
    if (n != 0 && (std::fseek(f, static_cast<long>(sizeof(TraceHeader) + (n - 1) * sizeof last), SEEK_SET) != 0 ||
                   std::fread(&last, sizeof last, 1, f) != 1)) {
        fail(kReadError);
    }
    size_t events = n; // records before the end record, or all of a cut file's
    if (n != 0 && op_of(last) == static_cast<uint8_t>(TraceOp::end)) {
        t.dropped = dropped_of(last);
        events = n - 1;
    } else if (partial) {
        t.cut = true;
    } else {
        fail(std::string(kNoEnd) + kPartialHint);
    }
    std::fseek(f, static_cast<long>(sizeof(TraceHeader)), SEEK_SET);
    t.records.reserve(events); // the events and a few context and time records
    Unpacker unpack(t);
    for (size_t i = 0; i < events;) {
        const size_t k = std::min(piece.size(), events - i);
        if (std::fread(piece.data(), sizeof(Packed), k, f) != k) {
            fail(kReadError);
        }
        for (size_t j = 0; j < k; ++j, ++i) {
            if (t.cut && all_zero(piece[j])) {
                unpack.finish(true);
                return; // space allocated ahead, never written
            }
            add(unpack, piece[j], i, version);
        }
    }
    unpack.finish(t.cut);
}

} // namespace

TraceFile read_file(const std::string &path, bool partial) {
    auto fail = [&](const std::string &what) { throw std::runtime_error(path + ": " + what); };
    // Read straight into the records (version 2) or in pieces (unpack_file).
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
    const size_t record_size = version == 2   ? sizeof(TraceRecord)
                               : version == 3 ? sizeof(PackedRecordV3)
                                              : sizeof(PackedRecord);
    if (t.header.record_size != record_size) {
        fail("record size " + std::to_string(t.header.record_size) + ", version " + std::to_string(version) +
             " has " + std::to_string(record_size));
    }
    if (!(t.header.ns_per_tick > 0 && t.header.ns_per_tick < 1e6)) {
        fail("corrupt header: " + std::to_string(t.header.ns_per_tick) + " ns per clock tick");
    }
    t.header.backend[sizeof t.header.backend - 1] = '\0';
    const size_t body = size - sizeof(TraceHeader);
    // Direct I/O allocates the file's space ahead and cuts it at the end: a run
    // that died first leaves zeros after its last written records (versions 4
    // and 5: no unit is all zero, the operation is never 0).
    if (version >= 4 && body >= sizeof(PackedRecord)) {
        PackedRecord tail{};
        if (std::fseek(f.get(), static_cast<long>(size - sizeof tail), SEEK_SET) != 0 ||
            std::fread(&tail, sizeof tail, 1, f.get()) != 1 || std::fseek(f.get(), sizeof(TraceHeader), SEEK_SET) != 0) {
            fail(kReadError);
        }
        if (tail.a == 0 && tail.b == 0 && !partial) {
            fail(std::string("truncated: no end record, the file ends in zeros (space allocated for records never "
                             "written: the run did not reach MPI_Finalize)") + kPartialHint);
        }
    }
    if (body % record_size != 0 && !partial) {
        fail("truncated: " + std::to_string(body % record_size) + " bytes of a partial record at byte " +
             std::to_string(size - body % record_size) + kPartialHint);
    }
    const size_t n = body / record_size;
    if (version == 2) {
        t.records.resize(n);
        if (std::fread(t.records.data(), sizeof(TraceRecord), n, f.get()) != n) {
            fail(kReadError);
        }
        if (!t.records.empty() && t.records.back().op == static_cast<uint8_t>(TraceOp::end)) {
            t.dropped = t.records.back().t_ns;
            t.records.pop_back();
        } else if (partial) {
            t.cut = true;
            const auto zero = std::find_if(t.records.begin(), t.records.end(),
                                           [](const TraceRecord &r) { return all_zero(r); });
            t.records.erase(zero, t.records.end());
        } else {
            fail(std::string(kNoEnd) + kPartialHint);
        }
        for (size_t i = 0; i < t.records.size(); ++i) {
            const uint8_t op = t.records[i].op;
            if (!is_event(op)) {
                fail("corrupt: record " + std::to_string(i) + " has unknown operation " + std::to_string(op));
            }
        }
    } else if (version == 3) {
        unpack_file<PackedRecordV3>(f.get(), n, t, partial, version);
    } else {
        unpack_file<PackedRecord>(f.get(), n, t, partial, version);
    }
    to_ids_and_ns(t);
    return t;
}

} // namespace trace
} // namespace ubermatch

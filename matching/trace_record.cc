// Recording a matching trace: each engine's calls append one 8-byte event word
// per call (trace_sink.h, inline in engine.h) to a per-process buffer (a chunk
// of trace_writer.h's), written out when it fills and when the last engine goes
// (MPI_Finalize). This file is the buffer's owner: the clock, the context, base
// and wide records, the writes, and the engine-creation hook record().
//
// The record path is what tracing costs per message (two records: the receive
// and the arrival), so it does no look-up and no system call: the records keep
// the addresses the engine was given (read_file turns them into ids), a tick
// counter read every kTimeEvery events, and a lock only under
// MPI_THREAD_MULTIPLE.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

#include <sys/stat.h>
#include <unistd.h>

#include "matching/registry.h"
#include "matching/ticks.h"
#include "matching/trace.h"
#include "matching/trace_writer.h"
#include "matching/um_trace.h"

namespace ubermatch {
namespace trace {
namespace {

// The time of a record. The TSC where the kernel keeps its own time with it
// (so it is invariant and synchronised): ~10 ns a read here, clock_gettime
// ~24 ns, paid twice per message. Elsewhere CLOCK_MONOTONIC, one tick a ns.
class Clock {
public:
    Clock() : tsc_(kernel_uses_tsc()), t0_ns_(Timers::now_ns()), tick0_(ticks()) {}
    uint64_t ticks() const { return tsc_ ? cheap_ticks() : Timers::now_ns(); }
    uint64_t t0_ns() const { return t0_ns_; }
    uint64_t tick0() const { return tick0_; }
    // Measured over the whole run, so it is as exact as the run is long.
    double ns_per_tick() const {
        const uint64_t ns = Timers::now_ns() - t0_ns_;
        const uint64_t t = ticks() - tick0_;
        return tsc_ && t != 0 ? static_cast<double>(ns) / static_cast<double>(t) : 1.0;
    }

private:
    static bool kernel_uses_tsc() {
#if defined(__x86_64__)
        std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
        std::string source;
        return static_cast<bool>(in >> source) && source == "tsc";
#else
        return false;
#endif
    }
    const bool tsc_;
    const uint64_t t0_ns_;
    const uint64_t tick0_;
};

// One per process, shared by its engines; flushed and closed by the last.
// The append itself is the Sink's (trace_sink.h); this is its file side.
class Recorder final : public Sink {
public:
    // size: of the communicator whose engine made it (MPI_COMM_WORLD's for rank >= 0).
    Recorder(const std::string &dir, const std::string &tag, uint32_t job, int32_t rank, int32_t size,
             const char *backend, bool threads, WriteMode mode)
        : Sink(threads),
          path_(file_of(dir, tag, rank >= 0 ? rank : static_cast<int32_t>(getpid()))),
          header_(make_header(rank, job, clock_.t0_ns(), backend)), out_(path_, &header_, sizeof header_, mode) {
        take_area();
        if (!out_.ok() && out_.error() == EBUSY) {
            std::fprintf(stderr,
                         "ubermatch trace: %s is being written by another running job (two mpiruns recording "
                         "into one directory): this rank records nothing; give each mpirun a directory of its "
                         "own in pml_ubermatch_trace\n",
                         path_.c_str());
        } else if (!out_.ok()) {
            std::fprintf(stderr, "ubermatch trace: cannot create %s (%s): recording nothing\n", path_.c_str(),
                         std::strerror(out_.error()));
        } else if (rank == 0) {
            warn_leftovers(dir, tag, job, size);
        }
    }
    ~Recorder() {
        put_record(time_record()); // the last events' time is interpolated up to here
        header_.ns_per_tick = clock_.ns_per_tick();
        const bool made = out_.ok(); // finish() closes the file: ok() is false after it
        const bool whole = out_.finish(n_ / 2, {static_cast<uint8_t>(TraceOp::end), 0}, &header_);
        if (made && out_.lost() != 0) {
            std::fprintf(stderr, "ubermatch trace: %s: %llu events dropped (write failed)\n", path_.c_str(),
                         static_cast<unsigned long long>(out_.lost()));
        }
        if (made && !whole) {
            std::fprintf(stderr, "ubermatch trace: %s: cannot write its end (%s): the file is incomplete\n",
                         path_.c_str(), std::strerror(out_.error()));
        }
    }
    // Called now and then while the job makes progress; once a second has
    // passed with nothing recorded, what is recorded goes to the file (a hung
    // job killed afterwards leaves it all there: ubermatch-replay --partial).
    void idle() {
        std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
        if (threads_) {
            lock.lock();
        }
        const uint64_t now = Timers::now_ns();
        if (n_ != idle_n_) {
            idle_n_ = n_;
            idle_since_ = now;
            return;
        }
        if (n_ == 0 || now - idle_since_ < kIdleNs || !out_.ok()) {
            return;
        }
        put_record(time_record()); // room: kKeep
        header_.ns_per_tick = clock_.ns_per_tick();
        out_.sync(n_ / 2, &header_);
        take_area();
        n_ = idle_n_ = 0;
        due_ = 0;
    }

private:
    // Words one event may need: a pad to the next unit, time, context, base
    // and wide records (a unit each), the event.
    static constexpr size_t kMaxPerEvent = 1 + 4 * 2 + 1;
    // Kept free after an event: the destructor's pad and last time record.
    static constexpr size_t kKeep = kMaxPerEvent + 3;

    // A record of its own (not an event) at the next whole unit: a lone event
    // word before it gets an empty second half.
    void put_record(const PackedRecord &r) {
        if (n_ % 2 != 0) {
            buf_[n_++] = 0;
        }
        buf_[n_++] = r.a;
        buf_[n_++] = r.b;
    }
    void prefix(uint64_t hw, uint64_t cw, int32_t source, int32_t tag, uint64_t address, unsigned kind) override {
        if (n_ > room_ - kKeep) {
            flush();
        }
        const bool fresh = n_ == 0; // a buffer starts with the time and the context
        if (fresh || n_ >= time_at_) {
            put_record(time_record());
            time_at_ = n_ + kTimeEvery;
        }
        if (fresh || hw != hint_word_ || cw != cid_word_) {
            hint_word_ = hw;
            cid_word_ = cw;
            // cid << 32 | coll << 4 | op, msg_size << 32 | comm_size
            put_record({(cw & ~uint64_t{0xffffffff}) | (hw & 0xffff) << 4 | static_cast<uint8_t>(TraceOp::context),
                        (hw & ~uint64_t{0xffffffff}) | (cw & 0xffffffff)});
        }
        if (needs_base(address, base_[kind]) != 0) {
            base_[kind] = address >> v5::kBaseShift;
            const uint64_t exact = (address & v5::kFieldMask) == 0;
            put_record({(address & 7) << 8 | exact << 7 | uint64_t{kind} << 4 | static_cast<uint8_t>(TraceOp::base),
                        base_[kind]});
        }
        if (wide(source, tag) != 0) {
            put_record({static_cast<uint64_t>(static_cast<uint32_t>(tag)) << 32 | static_cast<uint8_t>(TraceOp::wide),
                        static_cast<uint32_t>(source)});
        }
        due_ = std::min(time_at_, room_ - kKeep + 1);
    }
    // An earlier run with more ranks left its files above this run's: the
    // replay would refuse the mix, so say it now rather than after the job.
    static void warn_leftovers(const std::string &dir, const std::string &tag, uint32_t job, int32_t size) {
        const std::string next = file_of(dir, tag, size);
        std::ifstream in(next, std::ios::binary);
        TraceHeader h{};
        if (in.read(reinterpret_cast<char *>(&h), sizeof h) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
            (h.job >> 16) != (job >> 16)) {
            std::fprintf(stderr,
                         "ubermatch trace: %s holds %s and maybe more of an earlier run with more ranks than this "
                         "one's %d; ubermatch-replay will refuse the mix: remove them, or record into a directory "
                         "of its own\n",
                         dir.c_str(), next.c_str(), size);
        }
    }
    // A rank's file: TAG-rank-R.umt (a spawned job's), else rank-R.umt.
    static std::string file_of(const std::string &dir, const std::string &tag, int32_t rank) {
        return dir + "/" + (tag.empty() ? "" : tag + "-") + "rank-" + std::to_string(rank) + ".umt";
    }
    PackedRecord time_record() const {
        return {static_cast<uint8_t>(TraceOp::time), clock_.ticks() - clock_.tick0()};
    }
    static TraceHeader make_header(int32_t rank, uint32_t job, uint64_t t0_ns, const char *backend) {
        TraceHeader h{};
        std::memcpy(h.magic, kMagic, sizeof h.magic);
        h.version = kVersion;
        h.record_size = sizeof(PackedRecord);
        h.rank = rank;
        h.job = job;
        h.t0_ns = t0_ns;
        h.ns_per_tick = 1.0; // until the end
        std::strncpy(h.backend, backend, sizeof h.backend - 1);
        return h;
    }
    // The buffer to the file (the writer counts the events of a failed write).
    void flush() {
        if (n_ % 2 != 0) {
            buf_[n_++] = 0; // a lone event's empty second half
        }
        out_.commit(n_ / 2);
        take_area();
        n_ = 0;
        due_ = 0; // the next event starts the buffer with its time and context
    }
    void take_area() {
        buf_ = reinterpret_cast<uint64_t *>(out_.area());
        room_ = 2 * out_.room();
    }

    size_t time_at_ = 0; // the next time record at this n_
    size_t idle_n_ = 0;  // n_ at the last idle() that saw it change
    uint64_t idle_since_ = 0;
    static constexpr uint64_t kIdleNs = 1000000000;
    size_t room_ = 0;    // words that fit at buf_
    const Clock clock_;
    const std::string path_;
    TraceHeader header_;
    TraceWriter out_;
};

std::string g_dir;
std::string g_tag; // set_job's
uint32_t g_job = 0;
bool g_threads = false;
WriteMode g_mode = WriteMode::automatic;
std::mutex g_mu;
std::weak_ptr<Recorder> g_recorder;

std::shared_ptr<Recorder> recorder_for(int32_t rank, int32_t size, const char *backend) {
    std::lock_guard<std::mutex> lock(g_mu);
    std::shared_ptr<Recorder> r = g_recorder.lock();
    if (!r) {
        r = std::make_shared<Recorder>(g_dir, g_tag, g_job, rank, size, backend, g_threads, g_mode);
        g_recorder = r;
    }
    return r;
}

} // namespace

bool start(const char *dir, bool threads, std::string &err, WriteMode mode) {
    if (dir == nullptr || dir[0] == '\0') {
        std::lock_guard<std::mutex> lock(g_mu);
        g_dir.clear(); // engines created from now on record nothing
        return true;
    }
    // Its missing parents too (every rank may be creating them at once: one
    // that exists already is fine), then it must be a directory we can write.
    const std::string path = dir;
    for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
        ::mkdir(path.substr(0, at).c_str(), 0755); // a failure shows in the last step's
    }
    if (::mkdir(dir, 0755) != 0 && errno != EEXIST) {
        err = std::string("pml_ubermatch_trace: cannot create directory ") + dir + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        err = std::string("pml_ubermatch_trace: ") + dir + " exists and is not a directory";
        return false;
    }
    if (::access(dir, W_OK | X_OK) != 0) {
        err = std::string("pml_ubermatch_trace: cannot write in directory ") + dir + ": " + std::strerror(errno);
        return false;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_dir = dir;
    g_threads = threads;
    g_mode = mode;
    return true;
}

void idle() {
    std::shared_ptr<Recorder> r;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        r = g_recorder.lock();
    }
    if (r) {
        r->idle();
    }
}

void set_job(uint32_t job, const std::string &tag) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_job = job;
    g_tag = tag;
}

bool on() { return !g_dir.empty(); }

std::unique_ptr<Engine> record(std::unique_ptr<Engine> e, uint32_t cid, int32_t rank, bool internal) {
    if (__builtin_expect(g_dir.empty(), 1)) {
        return e;
    }
    std::shared_ptr<Recorder> r = recorder_for(cid == 0 ? rank : -1, e->comm_size(), e->name());
    // Its relaxations and role in the matched field (8-aligned: the short
    // form): a replay must know where the job let equal keys overtake, and
    // which of a communicator's engines this one is.
    const uint64_t what = relaxations_of(e->name()) | (internal ? kInternalEngine : 0u);
    r->add(cid, um_hint_t{}, {TraceOp::comm_create, 0, rank, e->comm_size(), 0, what << 3});
    e->attach_trace(std::move(r), cid);
    return e;
}

} // namespace trace
} // namespace ubermatch

extern "C" void um_trace_idle(void) { ubermatch::trace::idle(); }

extern "C" int um_trace_start(const char *dir, int threads, int write_mode, unsigned job, const char *tag,
                              char *err, size_t errlen) {
    using ubermatch::trace::WriteMode;
    std::string msg;
    if (write_mode < static_cast<int>(WriteMode::buffered) || write_mode > static_cast<int>(WriteMode::automatic)) {
        std::snprintf(err, errlen, "um_trace_start: write mode %d is none of 0 (buffered), 1 (direct), 2 (automatic)",
                      write_mode);
        return -1;
    }
    ubermatch::trace::set_job(job, tag != nullptr ? tag : "");
    if (ubermatch::trace::start(dir, threads != 0, msg, static_cast<WriteMode>(write_mode))) {
        return 0;
    }
    std::snprintf(err, errlen, "%s", msg.c_str());
    return -1;
}

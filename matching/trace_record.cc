// Recording a matching trace: an Engine decorator that forwards every call to
// the real backend and appends one TraceRecord per call to a per-process
// buffer, written out when it fills and when the last engine goes (MPI_Finalize).
//
// The record path is what tracing costs per message (two records: the receive
// and the arrival), so it does no look-up and no system call: the records keep
// the addresses the engine was given (read_file turns them into ids), a tick
// counter instead of clock_gettime, and a lock only under MPI_THREAD_MULTIPLE.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "matching/trace.h"
#include "matching/um_trace.h"

namespace ubermatch {
namespace trace {
namespace {

constexpr size_t kBufferRecords = 1 << 16; // 3 MiB per rank, the memory bound

// The time of a record. The TSC where the kernel keeps its own time with it
// (so it is invariant and synchronised): ~10 ns a read here, clock_gettime
// ~24 ns, paid twice per message. Elsewhere CLOCK_MONOTONIC, one tick a ns.
class Clock {
public:
    Clock() : tsc_(kernel_uses_tsc()), t0_ns_(Timers::now_ns()), tick0_(ticks()) {}
    uint64_t ticks() const {
#if defined(__x86_64__)
        if (tsc_) {
            return __rdtsc();
        }
#endif
        return Timers::now_ns();
    }
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
class Recorder {
public:
    Recorder(const std::string &dir, int32_t rank, const char *backend, bool threads)
        : threads_(threads), buf_(new TraceRecord[kBufferRecords]) {
        path_ = dir + "/rank-" + std::to_string(rank >= 0 ? rank : static_cast<int32_t>(getpid())) + ".umt";
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        std::memcpy(header_.magic, kMagic, sizeof header_.magic);
        header_.version = kVersion;
        header_.record_size = sizeof(TraceRecord);
        header_.rank = rank;
        header_.t0_ns = clock_.t0_ns();
        header_.ns_per_tick = 1.0; // until the end
        std::strncpy(header_.backend, backend, sizeof header_.backend - 1);
        if (fd_ < 0 || !write_all(&header_, sizeof header_)) {
            std::fprintf(stderr, "ubermatch trace: cannot write %s (%s): recording nothing\n",
                         path_.c_str(), std::strerror(errno));
            close_fd();
        }
    }
    ~Recorder() {
        flush();
        TraceRecord end{};
        end.op = static_cast<uint8_t>(TraceOp::end);
        end.t_ns = dropped_;
        header_.ns_per_tick = clock_.ns_per_tick();
        if (fd_ >= 0 && (!write_all(&end, sizeof end) ||
                         ::pwrite(fd_, &header_, sizeof header_, 0) != static_cast<ssize_t>(sizeof header_))) {
            ++dropped_;
        }
        if (dropped_ != 0) {
            std::fprintf(stderr, "ubermatch trace: %s: %llu events dropped (write failed)\n",
                         path_.c_str(), static_cast<unsigned long long>(dropped_));
        }
        close_fd();
    }
    Recorder(const Recorder &) = delete;
    Recorder &operator=(const Recorder &) = delete;

    void add(const TraceRecord &r) {
        if (__builtin_expect(threads_, 0)) { // MPI_THREAD_MULTIPLE: engines of several comms
            std::lock_guard<std::mutex> lock(mu_);
            put(r);
        } else {
            put(r);
        }
    }

private:
    void put(const TraceRecord &r) {
        TraceRecord &slot = buf_[n_];
        slot = r;
        slot.t_ns = clock_.ticks() - clock_.tick0();
        if (__builtin_expect(++n_ == kBufferRecords, 0)) {
            flush();
        }
    }
    bool write_all(const void *p, size_t n) {
        const char *c = static_cast<const char *>(p);
        while (n != 0) {
            const ssize_t w = ::write(fd_, c, n);
            if (w < 0 && errno == EINTR) {
                continue;
            }
            if (w <= 0) {
                return false;
            }
            c += w;
            n -= static_cast<size_t>(w);
        }
        return true;
    }
    __attribute__((noinline)) void flush() {
        if (fd_ < 0 || !write_all(buf_.get(), n_ * sizeof(TraceRecord))) {
            dropped_ += n_; // counted and reported, never silent
        }
        n_ = 0;
    }
    void close_fd() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    const bool threads_;
    std::mutex mu_;
    const Clock clock_;
    TraceHeader header_{};
    std::string path_;
    int fd_ = -1;
    uint64_t dropped_ = 0;
    size_t n_ = 0;
    const std::unique_ptr<TraceRecord[]> buf_;
};

std::string g_dir;
bool g_threads = false;
std::mutex g_mu;
std::weak_ptr<Recorder> g_recorder;

std::shared_ptr<Recorder> recorder_for(int32_t rank, const char *backend) {
    std::lock_guard<std::mutex> lock(g_mu);
    std::shared_ptr<Recorder> r = g_recorder.lock();
    if (!r) {
        r = std::make_shared<Recorder>(g_dir, rank, backend, g_threads);
        g_recorder = r;
    }
    return r;
}

uint64_t address(const void *handle) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)); }

// Forwards to the real engine and records each call with the handles it was
// given and returned.
class TracingEngine final : public Engine {
public:
    TracingEngine(std::unique_ptr<Engine> inner, uint32_t cid, int32_t rank)
        : Engine(inner->comm_size()), inner_(std::move(inner)), cid_(cid),
          owner_(recorder_for(cid == 0 ? rank : -1, inner_->name())), rec_(*owner_) {
        rec_.add(base(TraceOp::comm_create, rank, comm_size(), um_hint_t{}));
    }
    const char *name() const override { return inner_->name(); }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override {
        um_match_t m{};
        const int rc = inner_->post_recv(source, tag, hint, request, &m);
        return queue_or_match(TraceOp::post_recv, rc, source, tag, hint, request, m);
    }
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override {
        um_match_t m{};
        const int rc = inner_->arrive(source, tag, hint, message, &m);
        return queue_or_match(TraceOp::arrive, rc, source, tag, hint, message, m);
    }
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override {
        um_match_t m{};
        const int rc = remove ? inner_->mprobe(source, tag, hint, &m) : inner_->probe(source, tag, hint, &m);
        TraceRecord r = base(remove ? TraceOp::mprobe : TraceOp::probe, source, tag, hint);
        r.result = rc != UM_OK ? 2 : m.handle != nullptr;
        r.matched = address(m.handle);
        rec_.add(r);
        return rc != UM_OK ? Found{nullptr, 0, rc} : Found{m.handle, m.inspected};
    }
    bool do_cancel(int32_t source, int32_t tag, void *request) override {
        bool removed = false;
        inner_->cancel(source, tag, request, &removed);
        TraceRecord r = base(TraceOp::cancel, source, tag, um_hint_t{});
        r.id = address(request);
        r.result = removed;
        rec_.add(r);
        return removed;
    }
    void do_collective_begin(const um_hint_t &hint) override { collective(TraceOp::coll_begin, hint); }
    void do_collective_end(const um_hint_t &hint) override { collective(TraceOp::coll_end, hint); }

    void visit(const Visitor &f) const override {
        const Snapshot s = inner_->snapshot();
        for (const QueuedElement &e : s.posted) {
            f(true, e);
        }
        for (const QueuedElement &e : s.unexpected) {
            f(false, e);
        }
    }
    uint64_t queues_allocated() const override { return inner_->stats().queues; }
    uint64_t bytes_used() const override { return inner_->stats().bytes; }
    // The backend's own statistics (its timers, SIMD and adaptive counters).
    void backend_stats(um_stats_t &s) const override { s = inner_->stats(); }

private:
    TraceRecord base(TraceOp op, int32_t source, int32_t tag, const um_hint_t &hint) const {
        TraceRecord r{};
        r.cid = cid_;
        r.op = static_cast<uint8_t>(op);
        r.coll = hint.coll;
        r.source = source;
        r.tag = tag;
        r.msg_size = hint.msg_size;
        r.hint_comm_size = hint.comm_size;
        return r;
    }
    // A refusal (a relaxed backend's assertion) is passed on: nothing queued.
    Found queue_or_match(TraceOp op, int rc, int32_t source, int32_t tag, const um_hint_t &hint,
                         void *handle, const um_match_t &m) {
        TraceRecord r = base(op, source, tag, hint);
        r.id = address(handle);
        r.result = rc != UM_OK ? 2 : m.handle != nullptr;
        r.matched = address(m.handle);
        rec_.add(r);
        return rc != UM_OK ? Found{nullptr, 0, rc} : Found{m.handle, m.inspected};
    }
    void collective(TraceOp op, const um_hint_t &hint) {
        op == TraceOp::coll_begin ? inner_->collective_begin(hint) : inner_->collective_end(hint);
        rec_.add(base(op, 0, 0, hint));
    }

    const std::unique_ptr<Engine> inner_;
    const uint32_t cid_;
    const std::shared_ptr<Recorder> owner_; // the last engine to go writes the file
    Recorder &rec_;                         // the same, without the shared_ptr's indirection
};

} // namespace

bool start(const char *dir, bool threads, std::string &err) {
    if (dir == nullptr || dir[0] == '\0') {
        std::lock_guard<std::mutex> lock(g_mu);
        g_dir.clear(); // engines created from now on record nothing
        return true;
    }
    if (::mkdir(dir, 0755) != 0 && errno != EEXIST) {
        err = std::string("pml_ubermatch_trace: cannot create directory ") + dir + ": " + std::strerror(errno);
        return false;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_dir = dir;
    g_threads = threads;
    return true;
}

bool on() { return !g_dir.empty(); }

std::unique_ptr<Engine> record(std::unique_ptr<Engine> e, uint32_t cid, int32_t rank) {
    if (__builtin_expect(g_dir.empty(), 1)) {
        return e;
    }
    return std::make_unique<TracingEngine>(std::move(e), cid, rank);
}

} // namespace trace
} // namespace ubermatch

extern "C" int um_trace_start(const char *dir, int threads, char *err, size_t errlen) {
    std::string msg;
    if (ubermatch::trace::start(dir, threads != 0, msg)) {
        return 0;
    }
    std::snprintf(err, errlen, "%s", msg.c_str());
    return -1;
}

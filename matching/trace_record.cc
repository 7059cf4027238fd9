// Recording a matching trace: an Engine decorator that forwards every call to
// the real backend and appends one TraceRecord per call to a per-process
// buffer, written out when it fills and when the last engine goes (MPI_Finalize).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "matching/trace.h"
#include "matching/um_trace.h"

namespace ubermatch {
namespace trace {
namespace {

constexpr size_t kBufferRecords = 1 << 16; // 2.5 MiB per rank, the memory bound

// One per process, shared by its engines; flushed and closed by the last.
class Recorder {
public:
    Recorder(std::string dir, int32_t rank, const char *backend) : t0_(Timers::now_ns()) {
        buf_.reserve(kBufferRecords);
        path_ = dir + "/rank-" + std::to_string(rank >= 0 ? rank : static_cast<int32_t>(getpid())) + ".umt";
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        TraceHeader h{};
        std::memcpy(h.magic, kMagic, sizeof h.magic);
        h.version = kVersion;
        h.record_size = sizeof(TraceRecord);
        h.rank = rank;
        h.t0_ns = t0_;
        std::strncpy(h.backend, backend, sizeof h.backend - 1);
        if (fd_ < 0 || !write_all(&h, sizeof h)) {
            std::fprintf(stderr, "ubermatch trace: cannot write %s (%s): recording nothing\n",
                         path_.c_str(), std::strerror(errno));
            close_fd();
        }
    }
    ~Recorder() {
        TraceRecord end{};
        end.op = static_cast<uint8_t>(TraceOp::end);
        flush();
        end.t_ns = dropped_;
        if (fd_ >= 0 && !write_all(&end, sizeof end)) {
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

    void add(TraceRecord r) {
        std::lock_guard<std::mutex> lock(mu_); // MPI_THREAD_MULTIPLE: engines of several comms
        r.t_ns = Timers::now_ns() - t0_;
        buf_.push_back(r);
        if (buf_.size() == kBufferRecords) {
            flush();
        }
    }

private:
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
    void flush() {
        if (fd_ < 0 || !write_all(buf_.data(), buf_.size() * sizeof(TraceRecord))) {
            dropped_ += buf_.size(); // counted and reported, never silent
        }
        buf_.clear();
    }
    void close_fd() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    std::mutex mu_;
    std::string path_;
    int fd_ = -1;
    const uint64_t t0_;
    uint64_t dropped_ = 0;
    std::vector<TraceRecord> buf_;
};

std::string g_dir;
std::mutex g_mu;
std::weak_ptr<Recorder> g_recorder;

std::shared_ptr<Recorder> recorder_for(int32_t rank, const char *backend) {
    std::lock_guard<std::mutex> lock(g_mu);
    std::shared_ptr<Recorder> r = g_recorder.lock();
    if (!r) {
        r = std::make_shared<Recorder>(g_dir, rank, backend);
        g_recorder = r;
    }
    return r;
}

// Forwards to the real engine; gives each queued element a stable id
// (1, 2, ... per communicator) so a replay can check its matches.
class TracingEngine final : public Engine {
public:
    TracingEngine(std::unique_ptr<Engine> inner, uint32_t cid, int32_t rank)
        : Engine(inner->comm_size()), inner_(std::move(inner)), cid_(cid),
          rec_(recorder_for(cid == 0 ? rank : -1, inner_->name())) {
        TraceRecord r = base(TraceOp::comm_create, rank, comm_size(), um_hint_t{});
        rec_->add(r);
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
        r.matched = take_id(m.handle, remove);
        rec_->add(r);
        return Found{m.handle, m.inspected};
    }
    bool do_cancel(int32_t source, int32_t tag, void *request) override {
        bool removed = false;
        inner_->cancel(source, tag, request, &removed);
        TraceRecord r = base(TraceOp::cancel, source, tag, um_hint_t{});
        r.id = take_id(request, removed);
        r.result = removed;
        rec_->add(r);
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
    Found queue_or_match(TraceOp op, int rc, int32_t source, int32_t tag, const um_hint_t &hint,
                         void *handle, const um_match_t &m) {
        TraceRecord r = base(op, source, tag, hint);
        r.id = ++next_id_;
        r.result = rc != UM_OK ? 2 : m.handle != nullptr;
        if (rc == UM_OK && m.handle == nullptr) {
            ids_[handle] = r.id;
        }
        r.matched = take_id(m.handle, true);
        rec_->add(r);
        return Found{m.handle, m.inspected};
    }
    uint32_t take_id(void *handle, bool remove) {
        const auto it = handle != nullptr ? ids_.find(handle) : ids_.end();
        if (it == ids_.end()) {
            return 0;
        }
        const uint32_t id = it->second;
        if (remove) {
            ids_.erase(it);
        }
        return id;
    }
    void collective(TraceOp op, const um_hint_t &hint) {
        op == TraceOp::coll_begin ? inner_->collective_begin(hint) : inner_->collective_end(hint);
        rec_->add(base(op, 0, 0, hint));
    }

    const std::unique_ptr<Engine> inner_;
    const uint32_t cid_;
    const std::shared_ptr<Recorder> rec_;
    uint32_t next_id_ = 0;
    std::unordered_map<void *, uint32_t> ids_; // queued element -> its id
};

} // namespace

bool start(const char *dir, std::string &err) {
    if (dir == nullptr || dir[0] == '\0') {
        return true;
    }
    if (::mkdir(dir, 0755) != 0 && errno != EEXIST) {
        err = std::string("pml_ubermatch_trace: cannot create directory ") + dir + ": " + std::strerror(errno);
        return false;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_dir = dir;
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

extern "C" int um_trace_start(const char *dir, char *err, size_t errlen) {
    std::string msg;
    if (ubermatch::trace::start(dir, msg)) {
        return 0;
    }
    std::snprintf(err, errlen, "%s", msg.c_str());
    return -1;
}

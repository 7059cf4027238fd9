#include "matching/trace_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <new>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ubermatch {
namespace trace {
namespace {

constexpr size_t kAlign = 4096;              // O_DIRECT's unit for offsets, lengths and addresses
constexpr size_t kChunkBytes = kDirectChunk + kAlign; // and the 4 KiB carried from the chunk before
constexpr off_t kFirstAhead = off_t{4} << 20;   // the space allocated ahead, doubling up to kMaxAhead
constexpr off_t kMaxAhead = off_t{64} << 20;

// The Linux AIO calls (no wrapper in glibc; libaio would be one more dependency).
int io_setup(unsigned n, aio_context_t *ctx) { return static_cast<int>(syscall(SYS_io_setup, n, ctx)); }
int io_destroy(aio_context_t ctx) { return static_cast<int>(syscall(SYS_io_destroy, ctx)); }
int io_submit(aio_context_t ctx, iocb *cb) {
    iocb *list[1] = {cb};
    return static_cast<int>(syscall(SYS_io_submit, ctx, 1, list));
}
int io_getevents(aio_context_t ctx, io_event *ev) {
    return static_cast<int>(syscall(SYS_io_getevents, ctx, 1, 1, ev, nullptr));
}

uint64_t now_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

// ftruncate(fd, len) where fd is a regular file; a device (trace_cost
// --devnull's /dev/null) has no length to cut.
bool cut_at(int fd, off_t len) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        return true;
    }
    return ::ftruncate(fd, len) == 0;
}

// path opened for writing and emptied, unless another open file holds its
// lock: a job still writing it (two mpiruns recording into one directory name
// their files alike), whose file is then left whole (-1, errno EBUSY). The
// lock goes with the file's last close; where the file system has no locks,
// the file is taken as before.
int open_exclusive(const std::string &path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        ::close(fd);
        errno = EBUSY;
        return -1;
    }
    if (!cut_at(fd, 0)) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

} // namespace

TraceWriter::TraceWriter(const std::string &path, const void *header, size_t header_size, WriteMode mode,
                         double slow_ns_per_byte)
    : path_(path), header_size_(header_size), slow_ns_per_byte_(slow_ns_per_byte) {
    for (Chunk &c : chunks_) {
        void *p = nullptr;
        if (::posix_memalign(&p, kAlign, kChunkBytes) != 0) {
            std::free(chunks_[0].mem); // no destructor runs for a constructor that throws
            throw std::bad_alloc();
        }
        c.mem = static_cast<char *>(p);
    }
    plain_fd_ = open_exclusive(path);
    error_ = plain_fd_ < 0 ? errno : 0;
    fd_ = plain_fd_;
    // The header at once (rewritten at the end): a run that dies early leaves a
    // file the reader names as an unfinished trace.
    if (plain_fd_ >= 0 && !write_plain(header, header_size, 0)) {
        error_ = errno;
        ::close(plain_fd_);
        fd_ = plain_fd_ = -1;
    }
    if (plain_fd_ >= 0 && mode == WriteMode::direct) {
        (void) open_direct(0);
    }
    judging_ = plain_fd_ >= 0 && mode == WriteMode::automatic;
    std::memcpy(chunks_[0].mem, header, header_size);
    used_ = header_size;
    area_ = reinterpret_cast<PackedRecord *>(chunks_[0].mem + used_);
    room_ = room_after(used_);
}

TraceWriter::~TraceWriter() {
    close_files();
    for (Chunk &c : chunks_) {
        std::free(c.mem);
    }
}

void TraceWriter::close_files() {
    if (ctx_ != 0) {
        io_destroy(ctx_); // waits for the writes in flight
        ctx_ = 0;
    }
    if (fd_ >= 0 && fd_ != plain_fd_) {
        ::close(fd_);
    }
    if (plain_fd_ >= 0) {
        ::close(plain_fd_);
    }
    fd_ = plain_fd_ = -1;
}

size_t TraceWriter::room_after(size_t used) const {
    return ((direct() ? kDirectChunk : kBufferedChunk) + kAlign - used) / sizeof(PackedRecord);
}

bool TraceWriter::write_plain(const void *p, size_t n, off_t off) const {
    const char *c = static_cast<const char *>(p);
    while (n != 0 && plain_fd_ >= 0) {
        const ssize_t w = ::pwrite(plain_fd_, c, n, off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        c += w;
        off += w;
        n -= static_cast<size_t>(w);
    }
    return n == 0;
}

bool TraceWriter::open_direct(off_t from) {
    // Direct only where all three work: O_DIRECT (tmpfs refuses it), space
    // ahead (without it each direct write waits), and an AIO context.
    const int dfd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
    if (dfd >= 0 && ::fallocate(dfd, 0, from, kFirstAhead) == 0 && io_setup(2, &ctx_) == 0) {
        fd_ = dfd;
        allocated_ = from + kFirstAhead;
        return true;
    }
    ctx_ = 0;
    if (dfd >= 0) {
        ::close(dfd);
    }
    // Space a successful fallocate added goes again (a device has none).
    (void) cut_at(plain_fd_, std::max(from, static_cast<off_t>(header_size_)));
    return false;
}

void TraceWriter::judge(size_t bytes, uint64_t ns, off_t end) {
    recent_[writes_judged_++ % kJudged] = static_cast<double>(ns) / static_cast<double>(bytes);
    if (writes_judged_ < kJudged) {
        return;
    }
    // The median: one write descheduled by a busy machine is not the page cache.
    double v[kJudged];
    std::copy(std::begin(recent_), std::end(recent_), v);
    std::nth_element(v, v + kJudged / 2, v + kJudged);
    judged_ = v[kJudged / 2];
    if (judged_ > slow_ns_per_byte_) {
        judging_ = false;
        if (open_direct(end)) {
            direct_from_ = end;
        }
    }
}

void TraceWriter::write_chunk(Chunk &c, bool may_direct) {
    c.result = -EIO;
    if (failed_ || c.len == 0) {
        return;
    }
    if (!may_direct || !direct()) {
        // Judged: whole chunks only (a syscall's own cost weighs on a few KiB).
        const bool judged = may_direct && judging_ && c.len >= kBufferedChunk / 2;
        const uint64_t t0 = judged ? now_ns() : 0;
        c.result = write_plain(c.mem, c.len, c.off) ? static_cast<long>(c.len) : -EIO;
        if (judged && c.result == static_cast<long>(c.len)) {
            judge(c.len, now_ns() - t0, c.off + static_cast<off_t>(c.len));
        }
        return;
    }
    const off_t end = c.off + static_cast<off_t>(c.len);
    if (end > allocated_) {
        const off_t want = std::max(end, allocated_ + std::clamp(allocated_, kFirstAhead, kMaxAhead));
        if (::fallocate(fd_, 0, allocated_, want - allocated_) == 0) {
            allocated_ = want;
        }
    }
    c.cb = iocb{};
    c.cb.aio_data = static_cast<uint64_t>(&c - chunks_);
    c.cb.aio_fildes = static_cast<uint32_t>(fd_);
    c.cb.aio_lio_opcode = IOCB_CMD_PWRITE;
    c.cb.aio_buf = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(c.mem));
    c.cb.aio_nbytes = c.len;
    c.cb.aio_offset = c.off;
    c.in_flight = io_submit(ctx_, &c.cb) == 1;
}

void TraceWriter::reap(Chunk &c) {
    if (c.len == 0) {
        return;
    }
    while (c.in_flight) { // the other chunk's completion may come first
        io_event ev{};
        if (io_getevents(ctx_, &ev) == 1) {
            Chunk &done = chunks_[ev.data];
            done.result = static_cast<long>(ev.res);
            done.in_flight = false;
        } else if (errno != EINTR) {
            io_destroy(ctx_); // waits for what is in flight, whose results are lost with it
            ctx_ = 0;
            for (Chunk &x : chunks_) {
                x.in_flight = false;
            }
        }
    }
    if (!failed_ && c.result != static_cast<long>(c.len) && !write_plain(c.mem, c.len, c.off)) {
        failed_ = true;
        good_end_ = c.off <= static_cast<off_t>(header_size_) ? static_cast<off_t>(header_size_)
                                                                : c.off - into_record(c.off);
    }
    if (failed_) {
        lost_ += events_ending_in(c);
    }
    c.len = 0;
}

// Units are 16 bytes from header_size_ on in the file; each ends in exactly
// one chunk, which counts its events.
uint64_t TraceWriter::events_ending_in(const Chunk &c) const {
    uint64_t n = c.straddler;
    const off_t hs = static_cast<off_t>(header_size_);
    const off_t rs = static_cast<off_t>(sizeof(PackedRecord));
    size_t p = static_cast<size_t>(c.off < hs ? hs - c.off : (rs - into_record(c.off)) % rs);
    for (; p + sizeof(PackedRecord) <= c.len; p += sizeof(PackedRecord)) {
        PackedRecord r;
        std::memcpy(&r, c.mem + p, sizeof r);
        n += events_in(r);
    }
    return n;
}

void TraceWriter::commit(size_t n) {
    used_ += n * sizeof(PackedRecord);
    Chunk &c = chunks_[cur_];
    Chunk &next = chunks_[cur_ ^ 1];
    const size_t aligned = used_ & ~(kAlign - 1);
    c.len = aligned;
    write_chunk(c, true);
    reap(next); // the write before: its memory takes what c leaves
    const size_t tail = used_ - aligned;
    std::memcpy(next.mem, c.mem + aligned, tail);
    next.off = c.off + static_cast<off_t>(aligned);
    // The record across the cut, if one is: counted by next.
    const off_t into = aligned != 0 ? into_record(next.off) : 0;
    next.straddler = 0;
    if (into != 0) {
        PackedRecord r;
        std::memcpy(&r, c.mem + aligned - static_cast<size_t>(into), sizeof r);
        next.straddler = events_in(r);
    }
    cur_ ^= 1;
    used_ = tail;
    area_ = reinterpret_cast<PackedRecord *>(next.mem + used_);
    room_ = room_after(used_);
}

void TraceWriter::sync(size_t n, const void *header) {
    commit(n);
    const Chunk &c = chunks_[cur_]; // the next chunk, the tail at its head
    if (used_ != 0) {
        (void) write_plain(c.mem, used_, c.off); // best effort: the chunk's own write counts
    }
    (void) write_plain(header, header_size_, 0);
}

bool TraceWriter::finish(size_t n, PackedRecord end, const void *header) {
    used_ += n * sizeof(PackedRecord);
    Chunk &c = chunks_[cur_];
    reap(chunks_[cur_ ^ 1]);
    // What is left is no multiple of 4 KiB: buffered, after every direct write.
    c.len = used_;
    write_chunk(c, false);
    reap(c);
    const off_t end_at = failed_ ? good_end_ : c.off + static_cast<off_t>(used_);
    end.b += lost_;
    // The space allocated ahead (or what follows a failed write) is cut off.
    errno = 0;
    const bool whole = plain_fd_ >= 0 && cut_at(plain_fd_, end_at) &&
                       write_plain(&end, sizeof end, end_at) && write_plain(header, header_size_, 0);
    if (!whole) { // before closing the files can change errno
        error_ = plain_fd_ < 0 ? EBADF : errno != 0 ? errno : EIO;
    }
    close_files();
    return whole;
}

} // namespace trace
} // namespace ubermatch

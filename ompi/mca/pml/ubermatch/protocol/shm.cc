// Making, mapping and removing the shared-memory rings of shm.h.
#include "ompi/mca/pml/ubermatch/protocol/shm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

namespace ubermatch::protocol::shm {

namespace {

std::string errno_text(const char *what, const std::string &name) {
    return std::string(what) + " " + name + ": " + std::strerror(errno);
}

std::atomic<unsigned> next_ring{0};

// Both ends map a ring with its pages in place: a ring's first pass otherwise
// takes a page fault every 4 KiB at each end, in the middle of a message (on
// the VM of docs/message-path.md's round 25, ~12 us each: an epoch of ten AMs
// took 23 us instead of 2 over the ring's first 512 KiB).
constexpr int kRingMapFlags = MAP_SHARED | MAP_POPULATE;

// process_vm_readv may copy less than asked (a large read crosses the
// kernel's limits): it goes on until all is read or it fails.
bool read_from(int32_t pid, void *dst, uint64_t address, size_t n) {
    auto *d = static_cast<char *>(dst);
    while (n > 0) {
        const iovec local{d, n};
        const iovec remote{reinterpret_cast<void *>(address), n};
        const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got <= 0) {
            if (got < 0 && errno == EINTR) {
                continue;
            }
            return false;
        }
        d += got;
        address += static_cast<uint64_t>(got);
        n -= static_cast<size_t>(got);
    }
    return true;
}

} // namespace

Sender::Sender(uint32_t cells, std::string &err) : cells_(cells), mask_(cells - 1) {
    err.clear();
    if (cells < 64 || (cells & (cells - 1)) != 0) {
        err = "ring size must be a power of two of at least 64 cells";
        return;
    }
    const size_t bytes = segment_bytes(cells);
    int fd = -1;
    // The name is this process's and a counter; one left by a process that
    // died with our pid is replaced.
    for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
        name_ = "/ubermatch." + std::to_string(getpid()) + "." + std::to_string(next_ring++);
        fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {
            shm_unlink(name_.c_str());
            fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        }
    }
    if (fd < 0) {
        err = errno_text("shm_open", name_);
        return;
    }
    linked_ = true;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        err = errno_text("ftruncate", name_);
        close(fd);
        unlink();
        return;
    }
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kRingMapFlags, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        err = errno_text("mmap", name_);
        unlink();
        return;
    }
    seg_ = static_cast<Segment *>(p); // zero-filled by ftruncate: every stamp 0, tail 0
    // Written once here, when the first message to the peer makes the ring,
    // rather than a page at a time by its first pass, which ran at 3-4x the
    // later passes' latency even with its pages mapped (a page's first write
    // is slow on some VMs; docs/message-path.md, round 25).
    std::memset(p, 0, bytes);
    payload_.reset(new (std::nothrow) uint64_t[cells / 64]()); // no cell holds payload yet
    if (!payload_) {
        err = "no memory for the ring's cell map";
        munmap(seg_, bytes);
        seg_ = nullptr;
        unlink();
        return;
    }
    seg_->control.cells = cells;
    seg_->control.header_bytes = sizeof(RecordHeader);
    std::atomic_thread_fence(std::memory_order_release);
    seg_->control.magic = kMagic;
}

Sender::~Sender() {
    if (seg_ != nullptr) {
        munmap(seg_, segment_bytes(cells_));
    }
    unlink();
}

// A word's partial ends by masks: bit by bit, a 4-8 KiB record's two ends took
// up to 126 iterations (4-6% of an AM target's time, 2026-12-04).
void Sender::mark_payload(size_t from, size_t to) {
    size_t w = from >> 6;
    const size_t last = (to - 1) >> 6;
    const uint64_t head = ~uint64_t{0} << (from & 63), tail = ~uint64_t{0} >> (63 - ((to - 1) & 63));
    if (w == last) {
        payload_[w] |= head & tail;
        return;
    }
    payload_[w] |= head;
    while (++w < last) {
        payload_[w] = ~uint64_t{0};
    }
    payload_[last] |= tail;
}

void Sender::unlink() {
    if (linked_) {
        shm_unlink(name_.c_str()); // ENOENT once the receiver took it: fine
        linked_ = false;
    }
}

Receiver::Receiver(const std::string &name, std::string &err) {
    err.clear();
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
        err = errno_text("shm_open", name);
        return;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(Segment)) {
        err = "ring " + name + " is too small";
        close(fd);
        return;
    }
    bytes_ = static_cast<size_t>(st.st_size);
    void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, kRingMapFlags, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        err = errno_text("mmap", name);
        return;
    }
    shm_unlink(name.c_str()); // both ends have it: nothing is left behind if either dies
    seg_ = static_cast<Segment *>(p);
    const Control &c = seg_->control;
    if (c.magic != kMagic || c.header_bytes != sizeof(RecordHeader) || c.cells < 64 ||
        (c.cells & (c.cells - 1)) != 0 || segment_bytes(c.cells) != bytes_) {
        err = "ring " + name + " is not an ubermatch ring of this version";
        munmap(seg_, bytes_);
        seg_ = nullptr;
        return;
    }
    cells_ = c.cells;
    mask_ = cells_ - 1;
}

bool Receiver::enable_pull(int32_t pid, uint64_t segment) {
    Control theirs{};
    const bool ok = pid > 0 && read_from(pid, &theirs, segment, sizeof theirs) &&
                    std::memcmp(&theirs, &seg_->control, sizeof theirs) == 0;
    pid_ = ok ? pid : 0;
    return ok;
}

bool Receiver::read(void *dst, uint64_t address, size_t n) const {
    return pid_ != 0 && read_from(pid_, dst, address, n);
}

const unsigned char *Receiver::mapped(uint64_t address, size_t n) {
    const unsigned char *a = arena_.load(std::memory_order_acquire);
    if (a == nullptr) {
        // One thread tries, once; the others read by CMA meanwhile (and for
        // good if it failed: a load, not a write, on each pull then).
        if (pid_ == 0 || seg_->arena.bytes == 0 || arena_tried_.load(std::memory_order_acquire) ||
            arena_tried_.exchange(true, std::memory_order_acq_rel)) {
            return nullptr;
        }
        const std::string path = "/proc/" + std::to_string(pid_) + "/fd/" + std::to_string(seg_->arena.fd);
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        void *p = MAP_FAILED;
        if (fd >= 0 && fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == seg_->arena.bytes) {
            p = mmap(nullptr, seg_->arena.bytes, PROT_READ, MAP_SHARED, fd, 0);
        }
        if (fd >= 0) {
            close(fd);
        }
        if (p == MAP_FAILED) {
            return nullptr;
        }
        arena_base_ = seg_->arena.base;
        arena_bytes_ = seg_->arena.bytes;
        a = static_cast<const unsigned char *>(p);
        arena_.store(a, std::memory_order_release);
    }
    const uint64_t off = address - arena_base_; // wraps past the end below the base
    return off < arena_bytes_ && n <= arena_bytes_ - off ? a + off : nullptr;
}

bool Receiver::sender_alive() const {
    return pid_ != 0 && (kill(pid_, 0) == 0 || errno == EPERM);
}

Arena::Arena(size_t bytes, std::string &err) {
    err.clear();
    fd_ = memfd_create("ubermatch-packed", MFD_CLOEXEC);
    if (fd_ < 0) {
        err = errno_text("memfd_create", "ubermatch-packed");
        return;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd_, static_cast<off_t>(bytes)) == 0) {
        p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    }
    if (p == MAP_FAILED) {
        err = errno_text("ftruncate or mmap", "ubermatch-packed");
        close(fd_);
        fd_ = -1;
        return;
    }
    base_ = static_cast<unsigned char *>(p);
    bytes_ = bytes;
}

void Arena::release(void *arena, void *p, size_t n) {
    const auto *a = static_cast<const Arena *>(arena);
    const auto offset = static_cast<off_t>(static_cast<unsigned char *>(p) - a->base_);
    // Failing (a kernel without hole punching in shmem), the pages stay: no harm.
    (void)!fallocate(a->fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, static_cast<off_t>(n));
}

Arena::~Arena() {
    if (base_ != nullptr) {
        munmap(base_, bytes_);
    }
    if (fd_ >= 0) {
        close(fd_);
    }
}

Receiver::~Receiver() {
    if (const unsigned char *a = arena_.load(std::memory_order_acquire)) {
        munmap(const_cast<unsigned char *>(a), arena_bytes_);
    }
    if (seg_ != nullptr) {
        munmap(seg_, bytes_);
    }
}

} // namespace ubermatch::protocol::shm

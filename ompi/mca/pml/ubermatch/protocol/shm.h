// Shared-memory rings between processes of one node: the eager path of
// small messages, beside UCX.
//
// Why: UCX's own active-message floor on this machine is above ob1's whole
// 8 B latency and below pml_ucx's message rate (docs/message-path.md), so no
// rework of our path through UCX can meet either. A ring per (sender,
// receiver) pair that the sender writes and the receiver polls costs one
// cache line per small message each way.
//
// The sender makes the ring (a file in /dev/shm), offers it to the receiver
// over UCX and uses it once the receiver has mapped it and said so; until
// then, when the ring is full, for synchronous sends and for larger messages
// it sends through UCX. Order between the two paths is the per-peer sequence
// number's business (arrival.cc), as for any out-of-sequence arrival.
//
// Layout: a control line, the receiver's tail in a line of its own, then
// 64-byte cells. A record is a RecordHeader and its payload over one or more
// cells; one that would run past the end is preceded by a pad record to the
// end. A record is published by storing its stamp (its position + 1) last.
// The receiver reads a stamp only where a record may start next, and must
// never take old payload there for one: before publishing a record the
// sender clears the stamp of the cell after it if that cell last held
// payload (it keeps a bit per cell), and so keeps one cell free. The receiver
// writes nothing in the cells (it used to clear every cell it consumed: each
// such line then had to come back to the sender's cache before the next
// lap's record, 65 lines for a 4 KiB message), and moves the tail every
// kPublish cells, not per record. A run of one-cell records (messages of up
// to 24 B) clears nothing: every cell starts a record.
//
// Single-copy pulls: a message past the ring's eager limit or from 12 KiB
// (protocol.h) may go as a one-cell record naming the sender's buffer (a
// PullDescriptor); the receiver, once matched, reads the buffer with Linux CMA
// (process_vm_readv) and hands the send back through the segment's return
// slots, which the sender polls while it has pulls out. UCX's rendezvous does
// the same copy, but with a protocol round of its own around it (about 1 us
// more at 64 KiB here: docs/message-path.md round 7).
//
// Packed non-contiguous sends come from the sender's arena (an Arena, shared
// memory the sender names in each ring's segment): the receiver maps it once
// and unpacks straight from it, with neither CMA's copy into a scratch piece
// nor its page walk (the receiver is the bottleneck of such a stream).
#ifndef UBERMATCH_PROTOCOL_SHM_H
#define UBERMATCH_PROTOCOL_SHM_H

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "ompi/mca/pml/ubermatch/protocol/wire.h"

namespace ubermatch::protocol::shm {

constexpr size_t kCell = 64;
constexpr uint64_t kMagic = 0x756265726d736834ull; // "ubermsh4": the arena's line after the tail
constexpr uint32_t kPad = UINT32_MAX;               // RecordHeader::length of a pad record
constexpr uint32_t kDefaultCells = 4096;            // 256 KiB per ring
constexpr uint64_t kPublish = 32;                   // cells consumed between tail updates
constexpr uint32_t kReturns = 256;                  // pulls a sender may have out per ring
constexpr uint64_t kPackFailed = UINT64_MAX;        // ArenaName::packed of a pull whose packing failed

struct Control {
    uint64_t magic;
    uint32_t cells;
    uint32_t header_bytes; // sizeof(RecordHeader), a check that both ends agree
};

struct alignas(kCell) Tail {
    std::atomic<uint64_t> position; // cells the receiver has consumed
};

// The sender's arena, named in a ring's segment before the first pull from
// it (the pull record's stamp publishes it): fd is the sender's descriptor of
// it (/proc/PID/fd/FD), bytes 0 while unnamed.
struct alignas(kCell) ArenaName {
    uint64_t base; // its address in the sender
    uint64_t bytes;
    int32_t fd;
    // A pull whose record went out before its data was packed (a single-
    // threaded sender packs one at a time): its address in the sender, and
    // the bytes packed so far; packing is 0 once done. Any other pull is
    // whole when its record arrives.
    std::atomic<uint64_t> packing;
    std::atomic<uint64_t> packed;
};

// A pull record's payload: the message's bytes at `address` in the sender.
struct PullDescriptor {
    uint64_t address;
    uint64_t length;
    uint64_t sender; // the sender's cookie, handed back in a return slot
};

// The receiver's n-th hand-back (n from 0, pulls in the order their receives
// finish) goes to slot n % kReturns: the sender's cookie (below 2^48,
// 8-aligned), bit 0 set when the read failed, and the lap n / kReturns + 1 in
// the top 16 bits, so that the sender never clears a slot (which would bounce
// its line). The sender keeps at most kReturns pulls out, so a slot is never
// written again before it was read.
constexpr unsigned kLapShift = 48;
inline uint64_t return_word(uint64_t sender, uint64_t n, bool ok) {
    return sender | ((n / kReturns + 1) << kLapShift) | (ok ? 0 : 1);
}

struct RecordHeader {
    std::atomic<uint64_t> stamp; // position + 1 when published, 0 when free
    uint32_t length;             // payload bytes, or kPad
    uint32_t reserved;
    uint32_t cid;
    int32_t source;
    int32_t tag;
    uint32_t seq;
    uint16_t coll;
    uint16_t flags;
    uint32_t reserved2;
};
static_assert(sizeof(RecordHeader) == 40, "an 8-byte message fits one cell");

// The mapped segment's head; the cells follow it.
struct Segment {
    Control control;
    alignas(kCell) Tail tail;
    ArenaName arena; // written by the sender
    alignas(kCell) std::atomic<uint64_t> returns[kReturns]; // written by the receiver
    unsigned char *cells() { return reinterpret_cast<unsigned char *>(this) + sizeof(Segment); }
    RecordHeader *at(size_t index) { return reinterpret_cast<RecordHeader *>(cells() + index * kCell); }
};
static_assert(sizeof(Segment) == 3 * kCell + kReturns * 8, "control, tail, arena, return slots, then the cells");
static_assert(sizeof(RecordHeader) + sizeof(PullDescriptor) <= kCell, "a pull is one cell");

inline size_t cells_for(size_t payload) {
    return (sizeof(RecordHeader) + payload + kCell - 1) / kCell;
}
inline size_t segment_bytes(uint32_t cells) { return sizeof(Segment) + size_t{cells} * kCell; }

// Largest payload a ring of `cells` cells carries: a quarter of it, so that a
// full-size record always finds room once the receiver keeps up.
inline size_t max_payload(uint32_t cells) { return size_t{cells} / 4 * kCell - sizeof(RecordHeader); }

// Largest message a ring of `cells` cells takes when shm_eager_limit is
// `bound`: a 16th of the ring, so that a window of such records stays in
// flight (32 KiB in a 512 KiB ring), but at least kEagerFloor, for which
// rings are made big enough (topology.cc). At np 2, 12-32 KiB messages through
// a 512 KiB ring had 1.24-1.30x the bandwidth of UCX's eager path
// (docs/message-path.md round 6).
constexpr size_t kEagerFloor = 8192;
inline size_t eager_limit(uint32_t cells, size_t bound) {
    return std::min(bound, std::max(kEagerFloor, size_t{cells} * kCell / 16));
}

// Shared memory of this process's packed sends (memfd), reserved up front and
// mapped by receivers on the same node. Its pages are used as buffers carved
// from it (BufferPool) are written, and given back (release) when the pool
// holds more than it keeps.
class Arena {
public:
    // An arena of `bytes`; empty `err` on success.
    Arena(size_t bytes, std::string &err);
    ~Arena();
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;
    unsigned char *base() const { return base_; }
    size_t bytes() const { return bytes_; }
    int fd() const { return fd_; }
    // BufferPool::Release: the pages of n bytes at p go back to the system
    // (reading them gives zeros; writing them takes fresh ones).
    static void release(void *arena, void *p, size_t n);
    bool holds(const void *p, size_t n) const {
        const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
        return a >= b && a - b <= bytes_ && n <= bytes_ - (a - b);
    }

private:
    unsigned char *base_ = nullptr;
    size_t bytes_ = 0;
    int fd_ = -1;
};

// The sender's end. Not thread-safe: one writer at a time (under
// MPI_THREAD_MULTIPLE the protocol pushes under the peer's ring lock).
class Sender {
public:
    // Creates and maps a new ring; empty `err` on success.
    Sender(uint32_t cells, std::string &err);
    ~Sender();
    Sender(const Sender &) = delete;
    Sender &operator=(const Sender &) = delete;

    const std::string &name() const { return name_; }
    const void *segment() const { return seg_; }
    void unlink(); // the receiver did not map it (it unlinks it when it does)

    // Whether push() of `length` bytes finds room now (and so succeeds).
    bool fits(size_t length) {
        const size_t need = cells_for(length);
        return room(pad_for(need) + need);
    }
    // False when the ring has no room now (the caller sends through UCX).
    bool push(const WireHeader &h, const void *data, size_t length) {
        const size_t need = cells_for(length);
        size_t index = static_cast<size_t>(head_ & mask_);
        const size_t pad = pad_for(need);
        if (!room(pad + need)) {
            return false;
        }
        if (pad != 0) {
            // Cell 0, after the pad, starts a record on every lap (none wraps):
            // its stamp is an older lap's, never the one the receiver waits for.
            RecordHeader *p = seg_->at(index);
            p->length = kPad;
            mark_stamp(index);
            p->stamp.store(head_ + 1, std::memory_order_release);
            head_ += pad;
            index = 0;
        }
        RecordHeader *r = seg_->at(index);
        r->length = static_cast<uint32_t>(length);
        r->cid = h.cid;
        r->source = h.source;
        r->tag = h.tag;
        r->seq = h.seq;
        r->coll = h.coll;
        r->flags = h.flags;
        if (length != 0) { // data may be null then
            std::memcpy(reinterpret_cast<unsigned char *>(r) + sizeof *r, data, length);
        }
        mark_stamp(index);
        if (need > 1) {
            mark_payload(index + 1, index + need);
        }
        const size_t next = (index + need) & mask_;
        if (__builtin_expect(held_payload(next), 0)) {
            seg_->at(next)->stamp.store(0, std::memory_order_relaxed);
            mark_stamp(next);
        }
        r->stamp.store(head_ + 1, std::memory_order_release);
        head_ += need;
        return true;
    }

    // Names the arena in the segment, once, before a pull from it.
    void name_arena(const Arena &a) {
        if (!arena_named_) {
            seg_->arena.base = reinterpret_cast<uint64_t>(a.base());
            seg_->arena.fd = a.fd();
            seg_->arena.bytes = a.bytes();
            arena_named_ = true;
        }
    }

    // The pull of `address` is packed while its record is out: begin before
    // the push, packed() after each piece, end once all is there.
    void begin_packing(uint64_t address) {
        seg_->arena.packed.store(0, std::memory_order_relaxed);
        seg_->arena.packing.store(address, std::memory_order_release); // orders the 0 before it
    }
    void packed(uint64_t bytes) { seg_->arena.packed.store(bytes, std::memory_order_release); }
    void end_packing() { seg_->arena.packing.store(0, std::memory_order_release); }
    // Packing failed: the slot says so until every pull out is handed back
    // (the receiver may not have looked yet), and nothing streams meanwhile.
    void fail_packing() {
        seg_->arena.packed.store(kPackFailed, std::memory_order_release);
        failed_ = true;
    }
    bool may_stream() {
        if (failed_ && pulls_out() == 0) {
            end_packing();
            failed_ = false;
        }
        return !failed_;
    }

    // Whether push_pull() of `sender` would find room now; it then does, as
    // long as no other record goes first (the receiver only frees cells).
    bool may_push_pull(uint64_t sender) {
        if (!return_slot_free(sender)) {
            return false;
        }
        const size_t need = cells_for(sizeof(PullDescriptor));
        const size_t index = static_cast<size_t>(head_ & mask_);
        return room((index + need > cells_ ? cells_ - index : 0) + need);
    }

    // A message the receiver reads from `data` (which stays valid until
    // reap() hands `sender` back); false when the ring or the return slots
    // are full, or `sender` cannot be handed back in a slot.
    bool push_pull(const WireHeader &h, const void *data, size_t length, uint64_t sender) {
        if (!return_slot_free(sender)) {
            return false;
        }
        WireHeader pull = h;
        pull.flags = static_cast<uint16_t>(h.flags | kFlagPull);
        const PullDescriptor d{reinterpret_cast<uint64_t>(data), length, sender};
        if (!push(pull, &d, sizeof d)) {
            return false;
        }
        pulled_.store(pulled_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        return true;
    }
    // With threads, pushes (one writer at a time, under the peer's lock) and
    // reap (one thread: the progress gate) run at once: each counter has one
    // writer, and a stale read of the other only delays.
    uint64_t pulls_out() const {
        return pulled_.load(std::memory_order_acquire) - reaped_.load(std::memory_order_acquire);
    }
    // Hands f(sender, ok) every pull the receiver has finished, in order.
    template <typename F>
    int reap(F &&f) {
        int n = 0;
        const uint64_t pulled = pulled_.load(std::memory_order_acquire);
        for (uint64_t r = reaped_.load(std::memory_order_relaxed); r != pulled; ++r) {
            const uint64_t w = seg_->returns[r % kReturns].load(std::memory_order_acquire);
            if ((w >> kLapShift) != ((r / kReturns + 1) & 0xffff)) {
                break;
            }
            reaped_.store(r + 1, std::memory_order_release); // the slot is read: it may be written again
            ++n;
            f(w & ((uint64_t{1} << kLapShift) - 8), (w & 1) == 0);
        }
        return n;
    }

private:
    // payload_: a bit per cell, set when the sender last wrote payload at the
    // cell's start, clear when it wrote a stamp there (or nothing yet).
    bool held_payload(size_t cell) const { return (payload_[cell >> 6] >> (cell & 63)) & 1; }
    void mark_stamp(size_t cell) { payload_[cell >> 6] &= ~(uint64_t{1} << (cell & 63)); }
    // [from, to), from < to, within the ring; a record's own stamp cell is not in it
    void mark_payload(size_t from, size_t to);
    // The pad to the ring's end that a record of `need` cells from the head
    // takes first (no record wraps).
    size_t pad_for(size_t need) const {
        const size_t index = static_cast<size_t>(head_ & mask_);
        return index + need > cells_ ? cells_ - index : 0;
    }
    // Room for `cells` from the head, and the cell after them (the next
    // record's stamp); tail_ is read again only when the last one read is short.
    bool room(size_t cells) {
        const uint64_t end = head_ + cells + 1;
        if (end - tail_ > cells_) {
            tail_ = seg_->tail.position.load(std::memory_order_acquire);
        }
        return end - tail_ <= cells_;
    }
    // A pull of this sender's cookie may be handed back in a free return slot.
    bool return_slot_free(uint64_t sender) const {
        return pulls_out() != kReturns && (sender >> kLapShift) == 0 && (sender & 7) == 0;
    }

    Segment *seg_ = nullptr;
    uint32_t cells_ = 0;
    uint64_t mask_ = 0;
    uint64_t head_ = 0;
    uint64_t tail_ = 0; // last tail read
    std::unique_ptr<uint64_t[]> payload_;
    std::string name_;
    bool linked_ = false;
    bool arena_named_ = false;
    bool failed_ = false; // fail_packing(), pulls still out
    std::atomic<uint64_t> pulled_{0}; // pull records pushed
    std::atomic<uint64_t> reaped_{0}; // of those, handed back
};

// The receiver's end.
class Receiver {
public:
    // Maps the ring `name` and unlinks it; empty `err` on success.
    Receiver(const std::string &name, std::string &err);
    ~Receiver();
    Receiver(const Receiver &) = delete;
    Receiver &operator=(const Receiver &) = delete;

    // Hands up to `budget` records to f(const RecordHeader &, const void *payload)
    // in ring order; returns how many. A record that f refuses (returns false:
    // nothing to keep it in now) stays first in the ring for the next poll.
    template <typename F>
    int poll(int budget, F &&f) {
        int n = 0;
        while (n < budget) {
            RecordHeader *r = seg_->at(static_cast<size_t>(pos_ & mask_));
            if (r->stamp.load(std::memory_order_acquire) != pos_ + 1) {
                break;
            }
            size_t used;
            if (r->length == kPad) {
                used = cells_ - static_cast<size_t>(pos_ & mask_);
            } else {
                if (!f(*r, static_cast<const void *>(reinterpret_cast<unsigned char *>(r) + sizeof *r))) {
                    break;
                }
                used = cells_for(r->length);
                ++n;
            }
            pos_ += used;
        }
        if (pos_ - published_ >= kPublish) {
            seg_->tail.position.store(pos_, std::memory_order_release);
            published_ = pos_;
        }
        return n;
    }

    // Whether this process can read `pid`'s memory (the ring's control line
    // at `segment` there, compared with ours): pulls from this ring are then
    // read from `pid`.
    bool enable_pull(int32_t pid, uint64_t segment);
    // n bytes at `address` in the sender into dst; false on a failed read.
    bool read(void *dst, uint64_t address, size_t n) const;
    // Where n bytes at `address` in the sender are in this process: in the
    // sender's arena, mapped here at the first call that needs it; nullptr
    // when they are not in it, or it cannot be mapped (then read()). Any
    // thread; the ring's pull record for them is taken.
    const unsigned char *mapped(uint64_t address, size_t n);
    // Of the first n bytes of the pull at `address` (its record taken), those
    // packed: n unless its sender is still packing it. A value read while
    // the sender has gone on to a later pull is that pull's, and this one is
    // then whole anyway.
    // kPackFailed: its packing failed.
    uint64_t packed_of(uint64_t address, size_t n) const {
        if (seg_->arena.packing.load(std::memory_order_acquire) != address) {
            return n;
        }
        const uint64_t packed = seg_->arena.packed.load(std::memory_order_acquire);
        return packed == kPackFailed ? kPackFailed : std::min<uint64_t>(n, packed);
    }
    // Whether the sender still runs (a pull it packs would never end).
    bool sender_alive() const;
    // A pull is done with: its sender may reuse the buffer. Any thread.
    void give_back(uint64_t sender, bool ok) {
        const uint64_t n = returned_.fetch_add(1, std::memory_order_relaxed);
        seg_->returns[n % kReturns].store(return_word(sender, n, ok), std::memory_order_release);
    }

private:
    Segment *seg_ = nullptr;
    size_t bytes_ = 0;
    uint32_t cells_ = 0;
    uint64_t mask_ = 0;
    uint64_t pos_ = 0;       // next cell to read
    uint64_t published_ = 0; // cells given back to the sender
    int32_t pid_ = 0;        // the sender, once enable_pull succeeded
    std::atomic<uint64_t> returned_{0}; // pulls handed back
    // The sender's arena mapped here (at arena_base_ there), once tried.
    std::atomic<const unsigned char *> arena_{nullptr};
    std::atomic<bool> arena_tried_{false};
    uint64_t arena_base_ = 0, arena_bytes_ = 0;

public:
    // Polls in a row that found this ring empty (Protocol::poll_hot_rings
    // cools the ring after many; last, after what every poll reads).
    uint32_t idle_polls = 0;
};

} // namespace ubermatch::protocol::shm

#endif

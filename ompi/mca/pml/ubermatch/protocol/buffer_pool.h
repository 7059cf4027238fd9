// Buffers kept for reuse in power-of-two classes, for copies that outlive a
// call: unexpected eager payloads (a ring's record goes back to its sender
// before a receive takes it) and packed non-contiguous sends (the PML glue,
// through um_proto_send_buffer). malloc and free of a few KiB per message were 14%
// of a receiver taking 4 KiB messages by MPI_Iprobe and MPI_Recv, and memory
// that glibc trims at a free comes back as fresh pages whose faults cost more
// than the copy (64 KiB strided sends: half of the sender's time). Free
// buffers are linked through their first word, so put() never allocates. Not
// thread-safe: each user holds its own lock around it.
//
// Buffers may be carved from a region given once (the packed sends' arena of
// shared memory, shm::Arena): a class with none free carves its next buffer
// there while the region has room, else allocates. Carved buffers stay the
// pool's; past the bound, the memory of other classes' carved buffers is
// released (the region's release function: its pages go back to the system),
// those of the class put back to longest ago first, to keep the one just put
// back, which the next message of its size takes; one larger than the bound
// has its own released. Released buffers are kept as addresses, whose pages
// come back when used again. (Once the bound was met, the buffer put back used
// to be the one released: 64 MiB strided sends after 8 MiB ones faulted
// 64 MiB of shared pages in at both ends per message: docs/message-path.md
// round 22.)
//
// Carved buffers of the larger classes may also rotate (rotate_within): such
// a class has as many buffers as fit the given bytes, and hands out the one
// put back longest ago. A packed send's buffer is read by the receiver's
// core; written again at once, its lines wait for that core's copies to be
// invalidated, where a buffer last used several messages ago has left that
// core's cache (docs/message-path.md round 17).
#ifndef UBERMATCH_PROTOCOL_BUFFER_POOL_H
#define UBERMATCH_PROTOCOL_BUFFER_POOL_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>

namespace ubermatch::protocol {

class BufferPool {
public:
    // Classes 2^min_shift .. 2^max_shift bytes (min_shift >= 4: a class holds
    // the free list's node), at most max_kept bytes of free buffers kept in all.
    BufferPool(unsigned min_shift, unsigned max_shift, size_t max_kept) noexcept
        : min_shift_(min_shift < 4 ? 4 : min_shift),
          max_shift_(max_shift >= kShifts ? kShifts - 1 : max_shift), max_kept_(max_kept) {}
    BufferPool(const BufferPool &) = delete;
    BufferPool &operator=(const BufferPool &) = delete;
    ~BufferPool() {
        for (Free *&head : free_) {
            while (head != nullptr) {
                Free *next = head->next;
                if (!carved(head)) {
                    std::free(head);
                }
                head = next;
            }
        }
    }
    // Releases the memory of n bytes at p in the region (ctx: its owner).
    using Release = void (*)(void *ctx, void *p, size_t n);
    // Buffers carved from [base, base + bytes) from now on, base aligned to
    // the smallest class.
    void carve_from(unsigned char *base, size_t bytes, Release release, void *ctx) noexcept {
        region_ = base;
        region_bytes_ = bytes;
        carved_ = 0;
        release_ = release;
        release_ctx_ = ctx;
    }
    // From now on, a class of buffers of `from` bytes or more, of which two or
    // more fit `bytes`, has that many (carved while the region has room) and
    // hands out the one put back longest ago; other classes the newest.
    void rotate_within(size_t bytes, size_t from) noexcept {
        rotate_bytes_ = bytes;
        rotate_from_ = from;
    }
    // At least length bytes, nullptr when there is no memory. Past the
    // largest class a plain allocation.
    void *get(size_t length) noexcept {
        const int c = class_of(length);
        if (c < 0) {
            return std::malloc(length);
        }
        const size_t size = size_t{1} << c;
        const bool can_carve = region_bytes_ - carved_ >= size;
        Free *head = free_[c];
        if (head == nullptr || (can_carve && in_use_[c] + count_[c] < rotation(c))) {
            void *p = nullptr;
            if (can_carve) {
                p = region_ + carved_;
                carved_ += size; // sizes are multiples of the smallest: still aligned
            } else {
                p = std::malloc(size);
            }
            in_use_[c] += p != nullptr;
            return p;
        }
        free_[c] = head->next;
        if (free_[c] == nullptr) {
            last_[c] = nullptr;
        }
        --count_[c];
        ++in_use_[c];
        if (!head->released) {
            kept_bytes_ -= size;
        }
        return head;
    }
    // p came from get(length): kept while the pool holds under max_kept
    // bytes; past them freed, or if carved, kept with its memory released.
    void put(void *p, size_t length) noexcept {
        const int c = class_of(length);
        const bool ours = carved(p);
        if (c >= 0) {
            --in_use_[c];
            last_put_[c] = ++puts_;
        }
        const bool room = c >= 0 && (kept_bytes_ + (size_t{1} << c) <= max_kept_ ||
                                     (ours && release_others(c, size_t{1} << c)));
        if (!ours && !room) {
            std::free(p);
            return;
        }
        if (!room) {
            release_(release_ctx_, p, size_t{1} << c);
        }
        Free *f = static_cast<Free *>(p);
        f->released = !room;
        if (rotation(c) > 1 && last_[c] != nullptr) { // behind the others
            f->next = nullptr;
            last_[c]->next = f;
        } else {
            f->next = free_[c];
            free_[c] = f;
        }
        if (f->next == nullptr) {
            last_[c] = f;
        }
        ++count_[c];
        if (room) {
            kept_bytes_ += size_t{1} << c;
        }
    }
    bool carved(const void *p) const noexcept {
        const uintptr_t b = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(region_);
        return b < carved_; // wraps below the region
    }
    // Buffers kept in length's class, and bytes kept whose memory is held (tests).
    size_t kept(size_t length) const noexcept {
        const int c = class_of(length);
        return c < 0 ? 0 : count_[c];
    }
    size_t kept_bytes() const noexcept { return kept_bytes_; }

private:
    static constexpr unsigned kShifts = 48;
    struct Free {
        Free *next;
        bool released; // carved, its memory released
    };
    // Releases the memory of free carved buffers of classes other than c,
    // those of the class put back to longest ago first, until size more bytes
    // fit the bound; false, releasing nothing, if they cannot (allocated
    // buffers count in the bound too). Past the bound only: a sort of the
    // classes by last use is cheap there.
    bool release_others(int c, size_t size) noexcept {
        if (size > max_kept_ || release_ == nullptr) {
            return false;
        }
        int order[kShifts];
        int n = 0;
        for (int k = static_cast<int>(min_shift_); k <= static_cast<int>(max_shift_); ++k) {
            if (k != c && free_[k] != nullptr) {
                order[n++] = k;
            }
        }
        std::sort(order, order + n, [this](int a, int b) { return last_put_[a] < last_put_[b]; });
        const size_t need = kept_bytes_ + size - max_kept_;
        for (bool act : {false, true}) { // first whether they suffice, then release them
            size_t freed = 0;
            for (int i = 0; i < n && freed < need; ++i) {
                const int k = order[i];
                for (Free *f = free_[k]; f != nullptr && freed < need; f = f->next) {
                    if (f->released || !carved(f)) {
                        continue;
                    }
                    freed += size_t{1} << k;
                    if (act) {
                        Free *const next = f->next; // the link is in the memory released
                        release_(release_ctx_, f, size_t{1} << k);
                        f->next = next;
                        f->released = true;
                    }
                }
            }
            if (freed < need) {
                return false;
            }
            if (act) {
                kept_bytes_ -= freed;
            }
        }
        return true;
    }
    // The buffers class c rotates among (0 or 1: it does not rotate).
    size_t rotation(int c) const noexcept { return (size_t{1} << c) >= rotate_from_ ? rotate_bytes_ >> c : 0; }
    // The class (its shift) of a buffer of length bytes; -1 past the largest.
    int class_of(size_t length) const noexcept {
        unsigned s = min_shift_;
        while (s <= max_shift_ && (size_t{1} << s) < length) {
            ++s;
        }
        return s <= max_shift_ ? static_cast<int>(s) : -1;
    }
    const unsigned min_shift_;
    const unsigned max_shift_;
    const size_t max_kept_;
    size_t kept_bytes_ = 0;
    unsigned char *region_ = nullptr; // the region buffers are carved from
    size_t region_bytes_ = 0;
    size_t carved_ = 0; // of it, bytes carved
    Release release_ = nullptr;
    void *release_ctx_ = nullptr;
    size_t rotate_bytes_ = 0; // rotate_within()
    size_t rotate_from_ = 0;
    Free *free_[kShifts] = {};    // per class, the next buffer handed out first
    Free *last_[kShifts] = {};    // the last of free_'s list
    size_t count_[kShifts] = {};  // free buffers
    size_t in_use_[kShifts] = {}; // handed out, not put back
    uint64_t last_put_[kShifts] = {}; // per class, puts_ at its last put
    uint64_t puts_ = 0;
};

} // namespace ubermatch::protocol

#endif

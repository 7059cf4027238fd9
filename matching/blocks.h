// The queue of the `vector` and `fuzzy*` backends: a list of blocks of kSlots
// slots, filled in order at the tail. Removing an element leaves a hole (its
// handle NULL, its keys unmatchable) so that the rest keep their places;
// removing the last used slot of a block gives back the holes before it, and a
// block with nothing left is freed. Holes in the middle stay until the list is
// compacted: when more than `compact_threshold` of the slots before the tail's
// free space are holes, the live elements are packed to the front in order, so
// that long-lived elements cannot leave a queue of mostly holes (1: never).
//
// A Block is a struct with `Block *next, *prev; uint32_t used; void
// *handle[kSlots];` and fill / clear / move of one slot (vector.h, fuzzy.h).
// Searches compare all kSlots slots of a block and keep the bits below `used`
// (used_bits), so slots past `used` may hold anything; the last used slot of a
// block always holds an element.
#ifndef UBERMATCH_MATCHING_BLOCKS_H
#define UBERMATCH_MATCHING_BLOCKS_H

#include <cstdint>

#include "matching/simd/kernels.h"

namespace ubermatch {

using simd::kSlots;

// Bits of the used slots of a block.
inline uint64_t used_bits(uint32_t used) {
    return used >= kSlots ? ~uint64_t{0} : (uint64_t{1} << used) - 1;
}

// A receive's (source, tag) as value and mask pairs: a message (s, t) matches
// when (s & src_mask) == src_val and (t & tag_mask) == tag_val. ANY_SOURCE
// masks everything away; ANY_TAG keeps only the sign bit, which must be 0, so
// that it never matches a negative (collective) tag.
struct MaskedKey {
    int32_t src_val, src_mask, tag_val, tag_mask;
};

inline MaskedKey masked_key(int32_t source, int32_t tag) {
    MaskedKey k;
    k.src_val = source == UM_ANY_SOURCE ? 0 : source;
    k.src_mask = source == UM_ANY_SOURCE ? 0 : -1;
    k.tag_val = tag == UM_ANY_TAG ? 0 : tag;
    k.tag_mask = tag == UM_ANY_TAG ? INT32_MIN : -1;
    return k;
}

// What a removed slot holds: a source no message has and, for the messages'
// side, the ANY_TAG value, which no message carries and whose sign bit ANY_TAG
// receives refuse. No search, exact or wildcard, matches it.
constexpr int32_t kHoleSource = -2;
constexpr int32_t kHoleTag = UM_ANY_TAG;

// Where a search stopped: the block and slot of the element found.
template <class Block>
struct Hit {
    Block *block = nullptr;
    unsigned slot = 0;
    explicit operator bool() const { return block != nullptr; }
};

template <class Block>
class BlockList {
public:
    explicit BlockList(double compact_threshold) : threshold_(compact_threshold) {}
    ~BlockList() {
        clear();
        delete spare_;
    }
    BlockList(const BlockList &) = delete;
    BlockList &operator=(const BlockList &) = delete;

    Block *head() const { return head_; }
    uint64_t live() const { return live_; }
    uint64_t blocks() const { return blocks_; }
    // Slots before the tail's free space that hold no element.
    uint64_t holes() const { return span() - live_; }
    uint64_t compactions() const { return compactions_; }
    uint64_t bytes() const { return (blocks_ + (spare_ != nullptr ? 1 : 0)) * sizeof(Block); }

    template <typename... Args>
    void push_back(const Args &...args) {
        if (tail_ == nullptr || tail_->used == kSlots) {
            append_block();
        }
        tail_->fill(tail_->used++, args...);
        ++live_;
    }

    // Frees every block but the spare: the list is empty.
    void clear() {
        while (head_ != nullptr) {
            Block *b = head_;
            head_ = b->next;
            delete b;
        }
        tail_ = nullptr;
        blocks_ = 0;
        live_ = 0;
    }

    // Removes the element in slot i of b.
    void remove(Block *b, unsigned i) {
        b->clear(i);
        --live_;
        if (i + 1 == b->used) {
            unsigned used = i;
            while (used > 0 && b->handle[used - 1] == nullptr) {
                --used;
            }
            b->used = used;
            if (used == 0) {
                free_block(b);
            }
            return;
        }
        if (blocks_ >= 2 && static_cast<double>(holes()) > threshold_ * static_cast<double>(span())) {
            compact();
        }
    }

    // Calls f(block, slot) for every element, in queue order.
    template <typename F>
    void for_each(F &&f) const {
        for (const Block *b = head_; b != nullptr; b = b->next) {
            for (unsigned i = 0; i < b->used; ++i) {
                if (b->handle[i] != nullptr) {
                    f(*b, i);
                }
            }
        }
    }

    // Finds the element with this handle (cancel: rare, a plain scan).
    bool find_handle(const void *handle, Block *&where, unsigned &slot) const {
        for (Block *b = head_; b != nullptr; b = b->next) {
            for (unsigned i = 0; i < b->used; ++i) {
                if (b->handle[i] == handle) {
                    where = b;
                    slot = i;
                    return true;
                }
            }
        }
        return false;
    }

private:
    uint64_t span() const {
        return tail_ == nullptr ? 0 : (blocks_ - 1) * kSlots + tail_->used;
    }

    void append_block() {
        Block *b = spare_ != nullptr ? spare_ : new Block{};
        spare_ = nullptr;
        b->used = 0;
        b->next = nullptr;
        b->prev = tail_;
        (tail_ != nullptr ? tail_->next : head_) = b;
        tail_ = b;
        ++blocks_;
    }

    // Unlinks b; one freed block is kept for the next append (no allocation
    // when a queue keeps going from empty to one element and back).
    void free_block(Block *b) {
        (b->prev != nullptr ? b->prev->next : head_) = b->next;
        (b->next != nullptr ? b->next->prev : tail_) = b->prev;
        --blocks_;
        if (spare_ == nullptr) {
            spare_ = b;
        } else {
            delete b;
        }
    }

    // Packs the live elements to the front, in order, and frees the blocks left empty.
    void compact() {
        ++compactions_;
        Block *w = head_;
        unsigned ws = 0;
        for (Block *r = head_; r != nullptr; r = r->next) {
            for (unsigned rs = 0; rs < r->used; ++rs) {
                if (r->handle[rs] == nullptr) {
                    continue;
                }
                if (w != r || ws != rs) {
                    w->move(ws, *r, rs);
                }
                if (++ws == kSlots) {
                    w = w->next; // never past r: the write position trails the read one
                    ws = 0;
                }
            }
        }
        // w: the first block not full (or none). Blocks before it are full.
        for (Block *b = head_; b != w; b = b->next) {
            b->used = kSlots;
        }
        if (w == nullptr) {
            return;
        }
        while (w->next != nullptr) {
            free_block(w->next);
        }
        w->used = ws;
        if (ws == 0) {
            free_block(w);
        }
    }

    double threshold_;
    Block *head_ = nullptr;
    Block *tail_ = nullptr;
    Block *spare_ = nullptr;
    uint64_t blocks_ = 0;
    uint64_t live_ = 0;
    uint64_t compactions_ = 0;
};

} // namespace ubermatch

#endif

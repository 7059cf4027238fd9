// The hash tables of the overtaking engine (overtake.h): a map from an
// element's (source, tag) to the one slot that holds the elements of that
// key. Two shapes, measured against each other (docs/relaxed.md):
//
//  OpenTable      linear probing over one power-of-two array, at most a
//                 quarter full (half full measured 1.6x slower: longer probe
//                 runs, mispredicted), Fibonacci (multiplicative) hashing
//                 (Jenkins' hash, half full, measured 1.25x slower: the backward
//                 shift rehashes every slot it moves), deletion by backward
//                 shift (no tombstones); a miss ends at the empty slot where
//                 the key then goes. SmallMap (smallmap.h) probes the same
//                 way; it is not reused because its keys are 32-bit, it
//                 searches again to insert and erases by key, and its separate
//                 "used" flag makes a slot 40 bytes here instead of 24.
//  TwoLevelTable  seed 001's table (Klenk et al., section C): a direct-mapped
//                 primary table five times the size of a direct-mapped
//                 secondary one, no probe loop and no shifting on erase. The
//                 registry's. Indexed by a multiplicative hash, not the
//                 paper's Jenkins 32-bit 6-shift hash (its dependent shifts
//                 measured 1.1-1.15x slower a match). Where the GPU keeps an
//                 element that collides in both for its next iteration, a CPU
//                 engine must queue it now: in a stash after both levels,
//                 itself an OpenTable (a scanned list of tens of keys at 8192
//                 made misses 1.5x slower than linear probing); a long stash
//                 doubles both levels. While no key is past the primary
//                 table, a miss is one load.
//
// Every slot holds a distinct key, so collisions come only from the hash,
// never from a deep queue of one key (its elements chain off its slot).
#ifndef UBERMATCH_MATCHING_OVERTAKE_TABLE_H
#define UBERMATCH_MATCHING_OVERTAKE_TABLE_H

#include <cstdint>
#include <vector>

#include "matching/queue.h"

namespace ubermatch::overtake {

// Bit 63 of a slot's key: the element is a message (clear: a receive). A valid
// source is below 2^31, so the bit is free; the rest is (source << 32 | tag).
inline constexpr uint64_t kMessage = uint64_t{1} << 63;
// No element has tag UM_ANY_TAG (0xffffffff), so no key equals this.
inline constexpr uint64_t kEmpty = ~uint64_t{0};

// The source and tag of a slot's key (pack_key's inverse, kMessage ignored).
inline int32_t source_of(uint64_t key) { return static_cast<int32_t>((key & ~kMessage) >> 32); }
inline int32_t tag_of(uint64_t key) { return static_cast<int32_t>(static_cast<uint32_t>(key)); }

// One key's elements: `handle` and, beyond one, a FIFO of pooled entries.
struct Slot {
    uint64_t key;  // pack_key() | kMessage for messages; kEmpty: a free slot
    void *handle;
    Entry *more;   // further elements of the key: the newest, whose next is the oldest (overtake.cc)
    bool same(uint64_t k) const { return (key & ~kMessage) == k; }
};

// A slot filled field by field from scalars. Building a Slot in the caller
// and copying it made GCC store the fields one by one and load them back as
// one 16-byte word, which store forwarding cannot serve: the load waited for
// the stores to reach the cache, a third of a random-key match's time.
inline void put(Slot &s, uint64_t key, void *handle, Entry *more) {
    s.key = key;
    s.handle = handle;
    s.more = more;
}

// 2^64 / golden ratio (odd): both tables hash a key by multiplying by it and
// keeping high bits, where source and tag both reach.
inline constexpr uint64_t kFibonacci = 0x9e3779b97f4a7c15ull;

// The two-level table's 32-bit hash: the product's high half (one multiply:
// the match's critical path is this hash, then one load).
inline uint32_t hash_key(uint64_t key) { return static_cast<uint32_t>((key * kFibonacci) >> 32); }

class OpenTable {
public:
    static constexpr const char *kName = "open";
    struct Pos {
        uint32_t index;
    };

    OpenTable() : slots_(kFirst, Slot{kEmpty, nullptr, nullptr}), mask_(kFirst - 1) {}

    // The slot of key k (kMessage ignored), or nullptr and where k would go.
    Slot *find(uint64_t k, uint32_t &inspected, Pos &pos) {
        for (uint32_t i = home(k);; i = (i + 1) & mask_) {
            Slot &s = slots_[i];
            ++inspected;
            if (s.same(k)) {
                return &s;
            }
            if (s.key == kEmpty) {
                pos.index = i;
                return nullptr;
            }
        }
    }

    // A new key at the position find() gave for it.
    void insert(Pos pos, uint64_t key, void *handle, Entry *more) {
        if (4 * (size_ + 1) > slots_.size()) { // at most a quarter full
            grow();
            uint32_t ignored = 0;
            find(key & ~kMessage, ignored, pos);
        }
        put(slots_[pos.index], key, handle, more);
        ++size_;
    }

    // Backward shift: the slots after s move up while that brings them no
    // nearer than their home, so that no search meets a hole before its key.
    void erase(Slot *s) {
        uint32_t hole = static_cast<uint32_t>(s - slots_.data());
        for (uint32_t j = (hole + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
            const uint32_t home = this->home(slots_[j].key & ~kMessage);
            if (((j - home) & mask_) >= ((j - hole) & mask_)) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole].key = kEmpty;
        --size_;
    }

    template <class F>
    void for_each(F &&f) const {
        for (const Slot &s : slots_) {
            if (s.key != kEmpty) {
                f(s);
            }
        }
    }

    size_t bytes() const { return slots_.capacity() * sizeof(Slot); }
    uint32_t size() const { return size_; }
    bool holds(const Slot *s) const { return s >= slots_.data() && s < slots_.data() + slots_.size(); }

private:
    static constexpr uint32_t kFirst = 16;
    // The high bits of the key times kFibonacci (shift_: 64 - log2 of the size).
    uint32_t home(uint64_t k) const { return static_cast<uint32_t>((k * kFibonacci) >> shift_); }
    unsigned shift_ = 60;

    void grow() {
        std::vector<Slot> old(2 * slots_.size(), Slot{kEmpty, nullptr, nullptr});
        old.swap(slots_);
        mask_ = static_cast<uint32_t>(slots_.size() - 1);
        --shift_;
        for (const Slot &s : old) {
            if (s.key != kEmpty) {
                uint32_t i = home(s.key & ~kMessage);
                while (slots_[i].key != kEmpty) {
                    i = (i + 1) & mask_;
                }
                slots_[i] = s;
            }
        }
    }

    std::vector<Slot> slots_;
    uint32_t mask_;
    uint32_t size_ = 0;
};

// One key's slot, with its elements, moved into another table.
template <class Table>
void adopt(Table &t, const Slot &s) {
    typename Table::Pos pos{};
    uint32_t ignored = 0;
    t.find(s.key & ~kMessage, ignored, pos);
    t.insert(pos, s.key, s.handle, s.more);
}

class TwoLevelTable {
public:
    static constexpr const char *kName = "two-level";
    struct Pos {
        uint32_t primary;
        uint32_t secondary;
    };

    TwoLevelTable() { resize(kFirstSecondary); }

    Slot *find(uint64_t k, uint32_t &inspected, Pos &pos) {
        const uint32_t h = hash_key(k);
        pos = positions(h);
        Slot &p = primary_[pos.primary];
        ++inspected;
        if (p.same(k)) {
            return &p;
        }
        if (spilled_ == 0) { // nothing past the primary table: a miss is one load
            return nullptr;
        }
        Slot &s = secondary_[pos.secondary];
        ++inspected;
        if (s.same(k)) {
            return &s;
        }
        OpenTable::Pos ignored{};
        return stash_.find(k, inspected, ignored);
    }

    void insert(Pos pos, uint64_t key, void *handle, Entry *more) {
        place(pos, key, handle, more);
        ++size_;
        // The primary table at most a quarter full, and a short stash, as long
        // as doubling can shorten it (it cannot when most keys are in it).
        if (4 * size_ > primary_.size() ||
            (stash_.size() > kMaxStash && 8 * size_ > primary_.size())) {
            resize(2 * secondary_.size());
        }
    }

    void erase(Slot *s) {
        --size_;
        if (s >= primary_.data() && s < primary_.data() + primary_.size()) {
            s->key = kEmpty; // the common case first: one range check
            return;
        }
        --spilled_;
        if (stash_.holds(s)) {
            stash_.erase(s);
        } else {
            s->key = kEmpty;
        }
    }

    template <class F>
    void for_each(F &&f) const {
        for (const std::vector<Slot> *v : {&primary_, &secondary_}) {
            for (const Slot &s : *v) {
                if (s.key != kEmpty) {
                    f(s);
                }
            }
        }
        stash_.for_each(f);
    }

    size_t bytes() const {
        return (primary_.capacity() + secondary_.capacity()) * sizeof(Slot) + stash_.bytes();
    }
    uint32_t size() const { return size_; }

private:
    static constexpr uint32_t kFirstSecondary = 4;
    static constexpr size_t kMaxStash = 2;

    // Multiply-shift maps the hash onto the tables without a division: the
    // secondary's size is a power of two and the primary's five times it, so
    // both are shifts of the hash (times 5: one lea). The secondary index takes
    // the hash rotated, so that keys colliding in the primary table (equal high
    // bits) spread over the secondary one.
    Pos positions(uint32_t h) const {
        const uint32_t r = (h << 16) | (h >> 16);
        return {static_cast<uint32_t>((uint64_t{h} * 5) >> shift_), r >> shift_};
    }

    void place(Pos pos, uint64_t key, void *handle, Entry *more) {
        if (primary_[pos.primary].key == kEmpty) {
            put(primary_[pos.primary], key, handle, more);
            return;
        }
        if (secondary_[pos.secondary].key == kEmpty) {
            put(secondary_[pos.secondary], key, handle, more);
        } else {
            adopt(stash_, Slot{key, handle, more});
        }
        ++spilled_;
    }

    void resize(size_t secondary) {
        std::vector<Slot> old;
        for (std::vector<Slot> *v : {&primary_, &secondary_}) {
            old.insert(old.end(), v->begin(), v->end());
        }
        stash_.for_each([&old](const Slot &s) { old.push_back(s); });
        primary_.assign(5 * secondary, Slot{kEmpty, nullptr, nullptr});
        shift_ = 32 - static_cast<unsigned>(__builtin_ctzll(secondary)); // secondary: a power of two
        secondary_.assign(secondary, Slot{kEmpty, nullptr, nullptr});
        stash_ = OpenTable{};
        spilled_ = 0;
        for (const Slot &s : old) {
            if (s.key != kEmpty) {
                place(positions(hash_key(s.key & ~kMessage)), s.key, s.handle, s.more);
            }
        }
    }

    std::vector<Slot> primary_;
    std::vector<Slot> secondary_;
    OpenTable stash_;
    uint32_t size_ = 0;
    uint32_t spilled_ = 0; // keys in the secondary table and the stash
    unsigned shift_ = 30;  // 32 - log2(the secondary's size)
};

} // namespace ubermatch::overtake

#endif

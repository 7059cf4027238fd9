// A hash index from a (source, tag) key to the FIFO of the elements that carry
// it, for `auto`, `exact` and `nosource`; a key may hold one wildcard (UM_ANY_SOURCE or
// UM_ANY_TAG), never both (that is the empty slot's key). Open addressing with linear probing, at
// most half full; a key leaves when its FIFO empties (backward-shift
// deletion: no tombstones, so probes stay short however long the run), except
// the last key emptied, which waits, empty and invisible to find(), until
// another key empties: a queue that keeps going from one element to none and
// back (a receive and its message at a time) then neither erases nor re-inserts.
//
// Every element of one key matches the same searches, so a search takes the
// head of its key's FIFO: one probe instead of a walk over other keys.
#ifndef UBERMATCH_MATCHING_KEY_INDEX_H
#define UBERMATCH_MATCHING_KEY_INDEX_H

#include <cstdint>
#include <type_traits>
#include <vector>

#include "matching/queue.h"

namespace ubermatch {

template <class Fifo>
class BasicKeyIndex {
public:
    // Bytes the table would hold after adding one key (for the memory bound).
    size_t bytes_after_insert() const {
        return needs_growth() ? grown_capacity() * sizeof(Slot) : bytes();
    }
    // Whether adding one more key would grow the table (and so its bytes).
    bool needs_growth() const { return (count_ + 1) * 2 > slots_.size(); }
    // Bytes a table of `keys` keys holds at most.
    static size_t bytes_for(size_t keys) { return capacity_for(keys) * sizeof(Slot); }
    size_t bytes() const { return slots_.size() * sizeof(Slot); }
    size_t keys() const { return count_ - (idle_ != kNone ? 1 : 0); }

    // Its own loop, as before: a version through probe() measured 7-16% slower
    // in engine_bench (exact, nosource), from code generation not understood.
    Fifo *find(int32_t source, int32_t tag) {
        if (count_ == 0) {
            return nullptr;
        }
        const uint64_t k = pack_key(source, tag);
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            if (slots_[i].key == k) {
                return i != idle_ ? &slots_[i].fifo : nullptr;
            }
            if (slots_[i].key == kEmpty) {
                return nullptr;
            }
        }
    }

    // The FIFO of (source, tag), added empty when the key is new.
    Fifo &insert(int32_t source, int32_t tag) {
        if (needs_growth()) {
            rehash(grown_capacity());
        }
        const uint64_t k = pack_key(source, tag);
        const size_t i = probe(k);
        if (slots_[i].key == kEmpty) {
            slots_[i].key = k;
            slots_[i].fifo = Fifo{};
            ++count_;
        } else if (i == idle_) {
            idle_ = kNone; // the waiting key is in use again
        }
        return slots_[i].fifo;
    }

    // Takes e out of f, a FIFO of this index (find() or insert() gave it);
    // when f empties its key waits, its slot known from f's address (no
    // second probe), and the key that waited before leaves. The second form
    // finds f itself.
    template <class E>
    void remove(Fifo &f, E *e) {
        f.remove(e);
        if (f.empty()) {
            size_t i = static_cast<size_t>(reinterpret_cast<Slot *>(&f) - slots_.data());
            if (idle_ != kNone) { // one key waits at most: the earlier one leaves
                const uint64_t k = slots_[i].key;
                erase_at(idle_); // may shift slot i back along its probe run
                i = probe(k);
            }
            idle_ = i;
        }
    }
    template <class E>
    void remove(int32_t source, int32_t tag, E *e) {
        remove(*find(source, tag), e);
    }

    void clear() {
        std::vector<Slot>().swap(slots_);
        mask_ = 0;
        count_ = 0;
        idle_ = kNone;
    }

    template <typename F>
    void for_each(F &&f) const {
        for (size_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].key != kEmpty && i != idle_) {
                f(slots_[i].fifo);
            }
        }
    }

private:
    // Drops the key in slot i (its FIFO empty).
    void erase_at(size_t i) {
        // Backward shift: pull later members of the probe run into the hole,
        // unless their home lies cyclically after the hole.
        for (size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
            const size_t h = home(slots_[j].key);
            const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i].key = kEmpty;
        --count_;
    }

    // The slot of key k, or the empty slot where it would go (the table has slots).
    size_t probe(uint64_t k) const {
        size_t i = home(k);
        while (slots_[i].key != k && slots_[i].key != kEmpty) {
            i = (i + 1) & mask_;
        }
        return i;
    }

    // The FIFO first: a FIFO's address is its slot's (remove()).
    struct Slot {
        Fifo fifo;
        uint64_t key = kEmpty;
    };
    static_assert(std::is_standard_layout_v<Slot>, "a Slot is reached from its FIFO's address");
    // No exact key has source 0xFFFFFFFF (UM_ANY_SOURCE).
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    static constexpr size_t kNone = ~size_t{0};
    static constexpr size_t kMinCapacity = 16;

    // Fibonacci hashing: the high bits of the product, spread over the table.
    size_t home(uint64_t k) const {
        return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
    }
    size_t grown_capacity() const { return slots_.empty() ? kMinCapacity : slots_.size() * 2; }
    static size_t capacity_for(size_t keys) {
        size_t c = kMinCapacity;
        while (keys * 2 > c) {
            c *= 2;
        }
        return c;
    }

    void rehash(size_t capacity) {
        std::vector<Slot> old(capacity);
        old.swap(slots_);
        mask_ = capacity - 1;
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
        const size_t idle = idle_;
        if (idle != kNone) { // the waiting key does not move: it leaves
            idle_ = kNone;
            --count_;
        }
        for (size_t j = 0; j < old.size(); ++j) {
            const Slot &s = old[j];
            if (s.key == kEmpty || j == idle) {
                continue;
            }
            size_t i = home(s.key);
            while (slots_[i].key != kEmpty) {
                i = (i + 1) & mask_;
            }
            slots_[i] = s;
        }
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t count_ = 0;     // keys in the table, the waiting one included
    size_t idle_ = kNone;  // the slot of the key that waits with an empty FIFO
};

using KeyIndex = BasicKeyIndex<PeerQueue>;

// Removes the element `handle` (a cancelled receive) from the FIFO of
// (source, tag) into `pool`; the key leaves when its FIFO empties. False:
// not queued under that key.
template <class Pool>
bool take_keyed_handle(KeyIndex &index, Pool &pool, int32_t source, int32_t tag, const void *handle) {
    PeerQueue *q = index.find(source, tag);
    Entry *e = q != nullptr ? q->find_handle(handle) : nullptr;
    if (e == nullptr) {
        return false;
    }
    index.remove(*q, e);
    pool.put(e);
    return true;
}

} // namespace ubermatch

#endif

// A small open-addressing hash map from a 32-bit key to a value: linear
// probing, power-of-two capacity at most half full, deletion by backward
// shift (no tombstones). No allocation while it does not grow, and its size
// follows what is stored, not the communicator size: the partner table of
// `pnp` and the bucket and tag tables of `col` are kept in it.
#ifndef UBERMATCH_MATCHING_SMALLMAP_H
#define UBERMATCH_MATCHING_SMALLMAP_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ubermatch {

template <typename V>
class SmallMap {
public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

    V *find(uint32_t key) {
        if (size_ == 0) {
            return nullptr;
        }
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            Slot &s = slots_[i];
            if (!s.used) {
                return nullptr;
            }
            if (s.key == key) {
                return &s.value;
            }
        }
    }
    const V *find(uint32_t key) const { return const_cast<SmallMap *>(this)->find(key); }

    // The value of key, inserted as `init` when absent.
    V &get(uint32_t key, const V &init) {
        if (V *v = find(key)) {
            return *v;
        }
        if (2 * (size_ + 1) > slots_.size()) {
            grow();
        }
        size_t i = home(key);
        while (slots_[i].used) {
            i = (i + 1) & mask_;
        }
        slots_[i] = Slot{key, true, init};
        ++size_;
        return slots_[i].value;
    }

    void erase(uint32_t key) {
        if (size_ == 0) {
            return;
        }
        size_t i = home(key);
        while (slots_[i].used && slots_[i].key != key) {
            i = (i + 1) & mask_;
        }
        if (!slots_[i].used) {
            return;
        }
        // Backward shift: pull later members of the probe run into the hole
        // when their home slot does not lie (cyclically) between hole and them.
        size_t hole = i;
        for (size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
            const size_t h = home(slots_[j].key);
            if (((j - h) & mask_) >= ((j - hole) & mask_)) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole].used = false;
        --size_;
    }

    template <typename F>
    void for_each(F &&f) const {
        for (const Slot &s : slots_) {
            if (s.used) {
                f(s.key, s.value);
            }
        }
    }

private:
    struct Slot {
        uint32_t key = 0;
        bool used = false;
        V value{};
    };

    size_t home(uint32_t key) const {
        return static_cast<size_t>((key * 0x9E3779B9u) >> shift_) & mask_;
    }

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        const size_t cap = old.empty() ? 8 : 2 * old.size();
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        shift_ = 32;
        for (size_t c = cap; c > 1; c >>= 1) {
            --shift_;
        }
        size_ = 0;
        for (const Slot &s : old) {
            if (s.used) {
                get(s.key, s.value);
            }
        }
    }

    std::vector<Slot> slots_;
    size_t size_ = 0;
    size_t mask_ = 0;
    unsigned shift_ = 32;
};

} // namespace ubermatch

#endif

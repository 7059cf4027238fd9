// `fuzzy32`, `fuzzy16`, `fuzzy8`: fuzzy matching (Dosanjh et al., "Fuzzy
// matching", §IV-B). Like `vector`, but each slot also has one compressed
// fast-match key of K bits, so that one compare covers 16, 32 or 64 slots
// (AVX-512). The key is
//   32 bits: the low 8 tag bits over the low 24 rank bits (§IV-B-1-a);
//   16, 8:   rank and tag each folded to K bits with xor, then xored (§IV-B-1-b).
// Different (source, tag) pairs can share a key, so every fast hit is checked
// against the full source and tag kept beside it, and a refuted one is counted
// as a false positive. A receive with a wildcard gets the match-all key kWild;
// no exact key takes kWild or kHole (the value of removed slots): the two keys
// they would fold to are moved two below.
//
// Searches of the posted queue (by a message) compare the fast keys. Searches
// of the unexpected queue compare the fast keys for an exact receive; a
// receive with a wildcard would hit every key, so it compares the full sources
// and tags instead, with masks (as `vector` does), and meets no false positive.
#ifndef UBERMATCH_MATCHING_FUZZY_H
#define UBERMATCH_MATCHING_FUZZY_H

#include <cstdint>
#include <limits>

#include "matching/block_engine.h"

namespace ubermatch {

// The fast-match keys of K bits.
template <typename K>
struct FuzzyKey {
    static constexpr K kWild = std::numeric_limits<K>::max();
    static constexpr K kHole = kWild - 1;

    // The fast-match key of a receive or message.
    static K fast_key(int32_t source, int32_t tag) {
        if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
            return kWild;
        }
        const K k = fold(static_cast<uint32_t>(source), static_cast<uint32_t>(tag));
        return k >= kHole ? static_cast<K>(k - 2) : k;
    }

    static K fold(uint32_t s, uint32_t t) {
        if constexpr (sizeof(K) == 4) {
            return ((t & 0xFFu) << 24) | (s & 0xFFFFFFu);
        } else if constexpr (sizeof(K) == 2) {
            return static_cast<K>(s ^ (s >> 16) ^ t ^ (t >> 16));
        } else {
            uint32_t x = s ^ t;
            x ^= x >> 16;
            x ^= x >> 8;
            return static_cast<K>(x);
        }
    }
};

// Receives (source or tag may be a wildcard) and messages alike.
template <typename K>
struct alignas(64) FuzzyBlock {
    FuzzyBlock *next;
    FuzzyBlock *prev;
    uint32_t used;
    alignas(64) K key[kSlots];
    int32_t src[kSlots];
    int32_t tag[kSlots];
    void *handle[kSlots];

    void fill(unsigned i, int32_t source, int32_t t, void *h) {
        key[i] = FuzzyKey<K>::fast_key(source, t);
        src[i] = source;
        tag[i] = t;
        handle[i] = h;
    }
    void clear(unsigned i) {
        key[i] = FuzzyKey<K>::kHole;
        src[i] = kHoleSource;
        tag[i] = kHoleTag;
        handle[i] = nullptr;
    }
    void move(unsigned to, const FuzzyBlock &from, unsigned i) {
        key[to] = from.key[i];
        src[to] = from.src[i];
        tag[to] = from.tag[i];
        handle[to] = from.handle[i];
    }
};

template <typename K>
class FuzzyEngine final : public BlockEngine<FuzzyEngine<K>, FuzzyBlock<K>, FuzzyBlock<K>> {
    using Base = BlockEngine<FuzzyEngine<K>, FuzzyBlock<K>, FuzzyBlock<K>>;
    using Block = FuzzyBlock<K>;

public:
    static constexpr K kWild = FuzzyKey<K>::kWild;
    static constexpr K kHole = FuzzyKey<K>::kHole;
    static K fast_key(int32_t source, int32_t tag) { return FuzzyKey<K>::fast_key(source, tag); }

    FuzzyEngine(int32_t comm_size, const simd::SimdParams &params);
    const char *name() const override {
        return sizeof(K) == 4 ? "fuzzy32" : sizeof(K) == 2 ? "fuzzy16" : "fuzzy8";
    }

protected:
    void visit(const Engine::Visitor &f) const override;
    void backend_stats(um_stats_t &s) const override;

private:
    friend Base;
    using Base::k_;
    using Base::posted_;
    using Base::unexpected_;

    using HitsFn = uint64_t (*)(const K *keys, unsigned n, K key, K wild);
    static HitsFn hits_of(const simd::Kernels &k) {
        if constexpr (sizeof(K) == 4) {
            return k.key32_hits;
        } else if constexpr (sizeof(K) == 2) {
            return k.key16_hits;
        } else {
            return k.key8_hits;
        }
    }

    Hit<Block> find_message(int32_t source, int32_t tag, uint32_t &inspected);
    Hit<Block> find_recv(int32_t source, int32_t tag, uint32_t &inspected);

    const HitsFn hits_;
    uint64_t false_positives_ = 0;
};

extern template class FuzzyEngine<uint32_t>;
extern template class FuzzyEngine<uint16_t>;
extern template class FuzzyEngine<uint8_t>;

} // namespace ubermatch

#endif

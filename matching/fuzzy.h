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

#include "matching/blocks.h"
#include "matching/engine.h"
#include "matching/simd/dispatch.h"

namespace ubermatch {

template <typename K>
class FuzzyEngine final : public Engine {
public:
    static constexpr K kWild = std::numeric_limits<K>::max();
    static constexpr K kHole = kWild - 1;

    FuzzyEngine(int32_t comm_size, const simd::SimdParams &params);
    const char *name() const override {
        return sizeof(K) == 4 ? "fuzzy32" : sizeof(K) == 2 ? "fuzzy16" : "fuzzy8";
    }

    // The fast-match key of a receive or message.
    static K fast_key(int32_t source, int32_t tag) {
        if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
            return kWild;
        }
        const K k = fold(static_cast<uint32_t>(source), static_cast<uint32_t>(tag));
        return k >= kHole ? static_cast<K>(k - 2) : k;
    }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override { return 2; }
    uint64_t bytes_used() const override {
        return sizeof(*this) + posted_.bytes() + unexpected_.bytes();
    }
    void backend_stats(um_stats_t &s) const override;

private:
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

    // Receives (source or tag may be a wildcard) and messages alike.
    struct alignas(64) Block {
        Block *next;
        Block *prev;
        uint32_t used;
        alignas(64) K key[kSlots];
        int32_t src[kSlots];
        int32_t tag[kSlots];
        void *handle[kSlots];

        void fill(unsigned i, int32_t source, int32_t t, void *h) {
            key[i] = fast_key(source, t);
            src[i] = source;
            tag[i] = t;
            handle[i] = h;
        }
        void clear(unsigned i) {
            key[i] = kHole;
            src[i] = kHoleSource;
            tag[i] = kHoleTag;
            handle[i] = nullptr;
        }
        void move(unsigned to, const Block &from, unsigned i) {
            key[to] = from.key[i];
            src[to] = from.src[i];
            tag[to] = from.tag[i];
            handle[to] = from.handle[i];
        }
    };

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

    const simd::Kernels &k_;
    const HitsFn hits_;
    const bool fell_back_;
    uint64_t false_positives_ = 0;
    BlockList<Block> posted_;
    BlockList<Block> unexpected_;
};

extern template class FuzzyEngine<uint32_t>;
extern template class FuzzyEngine<uint16_t>;
extern template class FuzzyEngine<uint8_t>;

} // namespace ubermatch

#endif

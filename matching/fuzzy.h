// `fuzzy32`, `fuzzy16`, `fuzzy8`: fuzzy matching (Dosanjh et al., "Fuzzy
// matching", §IV-B). Like `vector`, but each slot also has one compressed
// fast-match key of K bits, so that one compare covers 16, 32 or 64 slots
// (AVX-512). The key is a source part over a tag part, the paper's
// concatenated form (§IV-B-1-a): 24 + 8 bits (fuzzy32: the low 24 rank bits
// and the tag modulo 254), 8 + 8 (fuzzy16) and 4 + 4 (fuzzy8), each part the
// value modulo the part's range less its reserved values. A part of all ones
// stands for a wildcard: an MPI_ANY_SOURCE receive keeps its tag part and an
// MPI_ANY_TAG receive its source part, so both still filter on the field they
// name (the paper's xor-folded 16- and 8-bit keys made every wildcard a
// match-all key, which every message then had to verify: deep ANY_SOURCE
// queues were as slow as a list). The hole is the source wildcard over the
// tag part's second reserved value, which no search key carries.
//
// Different (source, tag) pairs can share a key, so every fast hit is checked
// against the full source and tag kept beside it, and a refuted one is counted
// as a false positive. A message searching the posted queue compares each
// block with its exact key and its ANY_SOURCE key, and, only in blocks that
// have held an ANY_TAG receive, with its ANY_TAG key and the match-all key.
// Searches of the unexpected queue compare the fast keys for an exact
// receive; a receive with a wildcard compares the full sources and tags, with
// masks (as `vector` does), and meets no false positive.
#ifndef UBERMATCH_MATCHING_FUZZY_H
#define UBERMATCH_MATCHING_FUZZY_H

#include <cstdint>
#include <limits>

#include "matching/block_engine.h"

namespace ubermatch {

// The fast-match keys of K bits.
template <typename K>
struct FuzzyKey {
    static constexpr unsigned kTagBits = sizeof(K) == 1 ? 4 : 8;
    static constexpr unsigned kSrcBits = 8 * sizeof(K) - kTagBits;
    static constexpr uint32_t kSrcWild = (uint32_t{1} << kSrcBits) - 1; // source part of ANY_SOURCE
    static constexpr uint32_t kTagWild = (uint32_t{1} << kTagBits) - 1; // tag part of ANY_TAG
    static constexpr uint32_t kTagHole = kTagWild - 1;                  // under kSrcWild: the hole
    static constexpr K kWild = static_cast<K>((kSrcWild << kTagBits) | kTagWild);
    static constexpr K kHole = static_cast<K>((kSrcWild << kTagBits) | kTagHole);

    static uint32_t src_part(int32_t source) {
        return source == UM_ANY_SOURCE ? kSrcWild : static_cast<uint32_t>(source) % kSrcWild;
    }
    static uint32_t tag_part(int32_t tag) {
        return tag == UM_ANY_TAG ? kTagWild : static_cast<uint32_t>(tag) % kTagHole;
    }
    static K join(uint32_t src, uint32_t tag) { return static_cast<K>((src << kTagBits) | tag); }

    // The fast-match key of a receive or message.
    static K fast_key(int32_t source, int32_t tag) { return join(src_part(source), tag_part(tag)); }
    // The keys of the receives a message (source, tag) may match, beside its own.
    static K any_source_key(int32_t tag) { return join(kSrcWild, tag_part(tag)); }
    static K any_tag_key(int32_t source) { return join(src_part(source), kTagWild); }
};

// Receives (source or tag may be a wildcard) and messages alike.
template <typename K>
struct alignas(64) FuzzyBlock {
    FuzzyBlock *next;
    FuzzyBlock *prev;
    uint32_t used;
    // Has held a receive with MPI_ANY_TAG since the block was started (a
    // "maybe": removal leaves it set). Only then are its slots compared with a
    // message's ANY_TAG and match-all keys.
    bool any_tag = false;
    alignas(64) K key[kSlots];
    int32_t src[kSlots];
    int32_t tag[kSlots];
    void *handle[kSlots];

    void fill(unsigned i, int32_t source, int32_t t, void *h) {
        if (i == 0 && used == 1) { // the block's first element (fill comes after used++)
            any_tag = false;
        }
        any_tag |= t == UM_ANY_TAG;
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
        any_tag |= from.tag[i] == UM_ANY_TAG;
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

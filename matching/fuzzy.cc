#include "matching/fuzzy.h"

#include "matching/queue.h" // recv_matches

namespace ubermatch {

template <typename K>
FuzzyEngine<K>::FuzzyEngine(int32_t comm_size, const simd::SimdParams &params)
    : Base(comm_size, params), hits_(hits_of(k_)) {}

template <typename K>
Hit<FuzzyBlock<K>> FuzzyEngine<K>::find_message(int32_t source, int32_t tag,
                                                                uint32_t &inspected) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        // The fast key cannot tell; the full keys can, with the wildcards as masks.
        const MaskedKey m = masked_key(source, tag);
        for (Block *b = unexpected_.head(); b != nullptr; b = b->next) {
            const uint64_t bits =
                k_.msg_hits(b->src, b->tag, b->used, m.src_val, m.src_mask, m.tag_val, m.tag_mask) &
                used_bits(b->used);
            if (bits != 0) {
                const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
                inspected += i + 1;
                return {b, i};
            }
            inspected += b->used;
        }
        return {};
    }
    const K key = fast_key(source, tag);
    for (Block *b = unexpected_.head(); b != nullptr; b = b->next) {
        for (uint64_t bits = hits_(b->key, b->used, key, key) & used_bits(b->used); bits != 0;
             bits &= bits - 1) {
            const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
            if (b->src[i] == source && b->tag[i] == tag) {
                inspected += i + 1;
                return {b, i};
            }
            ++false_positives_;
        }
        inspected += b->used;
    }
    return {};
}

template <typename K>
Hit<FuzzyBlock<K>> FuzzyEngine<K>::find_recv(int32_t source, int32_t tag,
                                                             uint32_t &inspected) {
    const K key = fast_key(source, tag);
    const K any_source = FuzzyKey<K>::any_source_key(tag);
    const K any_tag = FuzzyKey<K>::any_tag_key(source);
    for (Block *b = posted_.head(); b != nullptr; b = b->next) {
        uint64_t hits = hits_(b->key, b->used, key, any_source);
        if (b->any_tag) {
            hits |= hits_(b->key, b->used, any_tag, kWild);
        }
        for (uint64_t bits = hits & used_bits(b->used); bits != 0; bits &= bits - 1) {
            const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
            if (recv_matches(b->src[i], b->tag[i], source, tag)) {
                inspected += i + 1;
                return {b, i};
            }
            ++false_positives_; // another key folded alike, or a wildcard's tag or source
        }
        inspected += b->used;
    }
    return {};
}

template <typename K>
void FuzzyEngine<K>::visit(const Engine::Visitor &f) const {
    // No sequence numbers are kept: the slot order is the queue order.
    uint64_t pos = 0;
    posted_.for_each([&](const Block &b, unsigned i) {
        f(true, QueuedElement{++pos, b.handle[i], b.src[i], b.tag[i]});
    });
    pos = 0;
    unexpected_.for_each([&](const Block &b, unsigned i) {
        f(false, QueuedElement{++pos, b.handle[i], b.src[i], b.tag[i]});
    });
}

template <typename K>
void FuzzyEngine<K>::backend_stats(um_stats_t &s) const {
    Base::backend_stats(s);
    s.false_positives = false_positives_;
}

template class FuzzyEngine<uint32_t>;
template class FuzzyEngine<uint16_t>;
template class FuzzyEngine<uint8_t>;

} // namespace ubermatch

#include "matching/fuzzy.h"

#include "matching/queue.h" // recv_matches

namespace ubermatch {

template <typename K>
FuzzyEngine<K>::FuzzyEngine(int32_t comm_size, const simd::SimdParams &params)
    : Engine(comm_size), k_(*params.kernel.kernels), hits_(hits_of(k_)),
      fell_back_(params.kernel.fell_back), posted_(params.compact_threshold),
      unexpected_(params.compact_threshold) {}

template <typename K>
Hit<typename FuzzyEngine<K>::Block> FuzzyEngine<K>::find_message(int32_t source, int32_t tag,
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
Hit<typename FuzzyEngine<K>::Block> FuzzyEngine<K>::find_recv(int32_t source, int32_t tag,
                                                             uint32_t &inspected) {
    const K key = fast_key(source, tag);
    for (Block *b = posted_.head(); b != nullptr; b = b->next) {
        for (uint64_t bits = hits_(b->key, b->used, key, kWild) & used_bits(b->used); bits != 0;
             bits &= bits - 1) {
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
Found FuzzyEngine<K>::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    uint32_t inspected = 0;
    if (const Hit<Block> m = find_message(source, tag, inspected)) {
        void *handle = m.block->handle[m.slot];
        unexpected_.remove(m.block, m.slot);
        return {handle, inspected};
    }
    posted_.push_back(source, tag, request);
    return {nullptr, inspected};
}

template <typename K>
Found FuzzyEngine<K>::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    if (const Hit<Block> r = find_recv(source, tag, inspected)) {
        void *handle = r.block->handle[r.slot];
        posted_.remove(r.block, r.slot);
        return {handle, inspected};
    }
    unexpected_.push_back(source, tag, message);
    return {nullptr, inspected};
}

template <typename K>
Found FuzzyEngine<K>::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    uint32_t inspected = 0;
    const Hit<Block> m = find_message(source, tag, inspected);
    if (!m) {
        return {nullptr, inspected};
    }
    void *handle = m.block->handle[m.slot];
    if (remove) {
        unexpected_.remove(m.block, m.slot);
    }
    return {handle, inspected};
}

template <typename K>
bool FuzzyEngine<K>::do_cancel(int32_t, int32_t, void *request) {
    Block *b = nullptr;
    unsigned i = 0;
    if (!posted_.find_handle(request, b, i)) {
        return false;
    }
    posted_.remove(b, i);
    return true;
}

template <typename K>
void FuzzyEngine<K>::visit(const Visitor &f) const {
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
    s.false_positives = false_positives_;
    s.blocks = posted_.blocks() + unexpected_.blocks();
    s.holes = posted_.holes() + unexpected_.holes();
    s.compactions = posted_.compactions() + unexpected_.compactions();
    s.kernel = k_.id;
    s.kernel_fallback = fell_back_ ? 1 : 0;
}

template class FuzzyEngine<uint32_t>;
template class FuzzyEngine<uint16_t>;
template class FuzzyEngine<uint8_t>;

} // namespace ubermatch

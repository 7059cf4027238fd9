// `vector`: vector matching (Dosanjh et al., "Fuzzy matching", §IV-A). One
// posted and one unexpected queue, each a list of blocks holding a vector of
// sources, a vector of tags (and, for receives, the wildcard masks) with the
// handles beside them. A search broadcasts its key, compares a whole block at
// once with the SIMD kernel chosen at start-up, and takes the lowest set bit:
// the queue order is the slot order. Removed elements become holes; compaction
// (blocks.h) keeps long-lived elements from leaving a queue of mostly holes.
#ifndef UBERMATCH_MATCHING_VECTOR_H
#define UBERMATCH_MATCHING_VECTOR_H

#include "matching/block_engine.h"

namespace ubermatch {

// Receives: a message (s, t) matches slot i when (s & src_mask[i]) ==
// src_val[i] and (t & tag_mask[i]) == tag_val[i] (masked_key()).
struct alignas(64) VectorRecvBlock {
    VectorRecvBlock *next;
    VectorRecvBlock *prev;
    uint32_t used;
    alignas(64) int32_t src_val[kSlots];
    int32_t src_mask[kSlots];
    int32_t tag_val[kSlots];
    int32_t tag_mask[kSlots];
    void *handle[kSlots];

    void fill(unsigned i, int32_t source, int32_t tag, void *h) {
        const MaskedKey k = masked_key(source, tag);
        src_val[i] = k.src_val;
        src_mask[i] = k.src_mask;
        tag_val[i] = k.tag_val;
        tag_mask[i] = k.tag_mask;
        handle[i] = h;
    }
    void clear(unsigned i) { fill(i, kHoleSource, kHoleTag, nullptr); }
    void move(unsigned to, const VectorRecvBlock &from, unsigned i) {
        src_val[to] = from.src_val[i];
        src_mask[to] = from.src_mask[i];
        tag_val[to] = from.tag_val[i];
        tag_mask[to] = from.tag_mask[i];
        handle[to] = from.handle[i];
    }
    int32_t source(unsigned i) const { return src_mask[i] == 0 ? UM_ANY_SOURCE : src_val[i]; }
    int32_t tag(unsigned i) const { return tag_mask[i] == INT32_MIN ? UM_ANY_TAG : tag_val[i]; }
};

// Messages: exact keys; the receive's wildcards are masks of the search key.
struct alignas(64) VectorMsgBlock {
    VectorMsgBlock *next;
    VectorMsgBlock *prev;
    uint32_t used;
    alignas(64) int32_t src[kSlots];
    int32_t tag[kSlots];
    void *handle[kSlots];

    void fill(unsigned i, int32_t source, int32_t t, void *h) {
        src[i] = source;
        tag[i] = t;
        handle[i] = h;
    }
    void clear(unsigned i) { fill(i, kHoleSource, kHoleTag, nullptr); }
    void move(unsigned to, const VectorMsgBlock &from, unsigned i) {
        fill(to, from.src[i], from.tag[i], from.handle[i]);
    }
};

class VectorEngine final : public BlockEngine<VectorEngine, VectorRecvBlock, VectorMsgBlock> {
public:
    VectorEngine(int32_t comm_size, const simd::SimdParams &params);
    const char *name() const override { return "vector"; }

protected:
    void visit(const Visitor &f) const override;

private:
    friend BlockEngine;

    Hit<VectorMsgBlock> find_message(int32_t source, int32_t tag, uint32_t &inspected) const;
    Hit<VectorRecvBlock> find_recv(int32_t source, int32_t tag, uint32_t &inspected) const;
};

} // namespace ubermatch

#endif

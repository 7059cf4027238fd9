// `vector`: vector matching (Dosanjh et al., "Fuzzy matching", §IV-A). One
// posted and one unexpected queue, each a list of blocks holding a vector of
// sources, a vector of tags (and, for receives, the wildcard masks) with the
// handles beside them. A search broadcasts its key, compares a whole block at
// once with the SIMD kernel chosen at start-up, and takes the lowest set bit:
// the queue order is the slot order. Removed elements become holes; compaction
// (blocks.h) keeps long-lived elements from leaving a queue of mostly holes.
#ifndef UBERMATCH_MATCHING_VECTOR_H
#define UBERMATCH_MATCHING_VECTOR_H

#include "matching/blocks.h"
#include "matching/engine.h"
#include "matching/simd/dispatch.h"

namespace ubermatch {

class VectorEngine final : public Engine {
public:
    VectorEngine(int32_t comm_size, const simd::SimdParams &params);
    const char *name() const override { return "vector"; }

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
    // Receives: a message (s, t) matches slot i when (s & src_mask[i]) ==
    // src_val[i] and (t & tag_mask[i]) == tag_val[i] (masked_key()).
    struct alignas(64) RecvBlock {
        RecvBlock *next;
        RecvBlock *prev;
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
        void move(unsigned to, const RecvBlock &from, unsigned i) {
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
    struct alignas(64) MsgBlock {
        MsgBlock *next;
        MsgBlock *prev;
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
        void move(unsigned to, const MsgBlock &from, unsigned i) {
            fill(to, from.src[i], from.tag[i], from.handle[i]);
        }
    };

    Hit<MsgBlock> find_message(int32_t source, int32_t tag, uint32_t &inspected) const;
    Hit<RecvBlock> find_recv(int32_t source, int32_t tag, uint32_t &inspected) const;

    const simd::Kernels &k_;
    const bool fell_back_;
    BlockList<RecvBlock> posted_;
    BlockList<MsgBlock> unexpected_;
};

} // namespace ubermatch

#endif

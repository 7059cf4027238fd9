#include "matching/vector.h"

namespace ubermatch {

VectorEngine::VectorEngine(int32_t comm_size, const simd::SimdParams &params)
    : BlockEngine(comm_size, params) {}

Hit<VectorMsgBlock> VectorEngine::find_message(int32_t source, int32_t tag,
                                                       uint32_t &inspected) const {
    const MaskedKey key = masked_key(source, tag);
    for (VectorMsgBlock *b = unexpected_.head(); b != nullptr; b = b->next) {
        const uint64_t bits =
            k_.msg_hits(b->src, b->tag, b->used, key.src_val, key.src_mask, key.tag_val,
                        key.tag_mask) &
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

Hit<VectorRecvBlock> VectorEngine::find_recv(int32_t source, int32_t tag,
                                                     uint32_t &inspected) const {
    for (VectorRecvBlock *b = posted_.head(); b != nullptr; b = b->next) {
        const uint64_t bits =
            k_.recv_hits(b->src_val, b->src_mask, b->tag_val, b->tag_mask, b->used, source, tag) &
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

void VectorEngine::visit(const Visitor &f) const {
    // No sequence numbers are kept: the slot order is the queue order.
    uint64_t pos = 0;
    posted_.for_each([&](const VectorRecvBlock &b, unsigned i) {
        f(true, QueuedElement{++pos, b.handle[i], b.source(i), b.tag(i)});
    });
    pos = 0;
    unexpected_.for_each([&](const VectorMsgBlock &b, unsigned i) {
        f(false, QueuedElement{++pos, b.handle[i], b.src[i], b.tag[i]});
    });
}

} // namespace ubermatch

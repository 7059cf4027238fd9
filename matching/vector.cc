#include "matching/vector.h"

namespace ubermatch {

VectorEngine::VectorEngine(int32_t comm_size, const simd::SimdParams &params)
    : Engine(comm_size), k_(*params.kernel.kernels), fell_back_(params.kernel.fell_back),
      posted_(params.compact_threshold), unexpected_(params.compact_threshold) {}

Hit<VectorEngine::MsgBlock> VectorEngine::find_message(int32_t source, int32_t tag,
                                                       uint32_t &inspected) const {
    const MaskedKey key = masked_key(source, tag);
    for (MsgBlock *b = unexpected_.head(); b != nullptr; b = b->next) {
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

Hit<VectorEngine::RecvBlock> VectorEngine::find_recv(int32_t source, int32_t tag,
                                                     uint32_t &inspected) const {
    for (RecvBlock *b = posted_.head(); b != nullptr; b = b->next) {
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

Found VectorEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    uint32_t inspected = 0;
    if (const Hit<MsgBlock> m = find_message(source, tag, inspected)) {
        void *handle = m.block->handle[m.slot];
        unexpected_.remove(m.block, m.slot);
        return {handle, inspected};
    }
    posted_.push_back(source, tag, request);
    return {nullptr, inspected};
}

Found VectorEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    uint32_t inspected = 0;
    if (const Hit<RecvBlock> r = find_recv(source, tag, inspected)) {
        void *handle = r.block->handle[r.slot];
        posted_.remove(r.block, r.slot);
        return {handle, inspected};
    }
    unexpected_.push_back(source, tag, message);
    return {nullptr, inspected};
}

Found VectorEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    uint32_t inspected = 0;
    const Hit<MsgBlock> m = find_message(source, tag, inspected);
    if (!m) {
        return {nullptr, inspected};
    }
    void *handle = m.block->handle[m.slot];
    if (remove) {
        unexpected_.remove(m.block, m.slot);
    }
    return {handle, inspected};
}

bool VectorEngine::do_cancel(int32_t, int32_t, void *request) {
    RecvBlock *b = nullptr;
    unsigned i = 0;
    if (!posted_.find_handle(request, b, i)) {
        return false;
    }
    posted_.remove(b, i);
    return true;
}

void VectorEngine::visit(const Visitor &f) const {
    // No sequence numbers are kept: the slot order is the queue order.
    uint64_t pos = 0;
    posted_.for_each([&](const RecvBlock &b, unsigned i) {
        f(true, QueuedElement{++pos, b.handle[i], b.source(i), b.tag(i)});
    });
    pos = 0;
    unexpected_.for_each([&](const MsgBlock &b, unsigned i) {
        f(false, QueuedElement{++pos, b.handle[i], b.src[i], b.tag[i]});
    });
}

void VectorEngine::backend_stats(um_stats_t &s) const {
    s.blocks = posted_.blocks() + unexpected_.blocks();
    s.holes = posted_.holes() + unexpected_.holes();
    s.compactions = posted_.compactions() + unexpected_.compactions();
    s.kernel = k_.id;
    s.kernel_fallback = fell_back_ ? 1 : 0;
}

} // namespace ubermatch

// What the `vector` and `fuzzy*` backends share: a posted and an unexpected
// BlockList, the SIMD kernels chosen at start-up, and the engine operations,
// written once over the backend's two searches (Derived::find_recv and
// Derived::find_message, reached without a virtual call).
#ifndef UBERMATCH_MATCHING_BLOCK_ENGINE_H
#define UBERMATCH_MATCHING_BLOCK_ENGINE_H

#include "matching/blocks.h"
#include "matching/engine.h"
#include "matching/simd/dispatch.h"

namespace ubermatch {

template <class Derived, class RecvBlock, class MsgBlock>
class BlockEngine : public Engine {
protected:
    BlockEngine(int32_t comm_size, const simd::SimdParams &params)
        : Engine(comm_size), k_(*params.kernel.kernels), fell_back_(params.kernel.fell_back),
          posted_(params.compact_threshold), unexpected_(params.compact_threshold) {}

    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) override {
        uint32_t inspected = 0;
        if (const Hit<MsgBlock> m = self().find_message(source, tag, inspected)) {
            return take(unexpected_, m, inspected);
        }
        posted_.push_back(source, tag, request);
        return {nullptr, inspected};
    }

    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) override {
        uint32_t inspected = 0;
        if (const Hit<RecvBlock> r = self().find_recv(source, tag, inspected)) {
            return take(posted_, r, inspected);
        }
        unexpected_.push_back(source, tag, message);
        return {nullptr, inspected};
    }

    Found do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) override {
        uint32_t inspected = 0;
        const Hit<MsgBlock> m = self().find_message(source, tag, inspected);
        if (!m) {
            return {nullptr, inspected};
        }
        return remove ? take(unexpected_, m, inspected) : Found{m.block->handle[m.slot], inspected};
    }

    bool do_cancel(int32_t, int32_t, void *request) override {
        RecvBlock *b = nullptr;
        unsigned i = 0;
        if (!posted_.find_handle(request, b, i)) {
            return false;
        }
        posted_.remove(b, i);
        return true;
    }

    uint64_t queues_allocated() const override { return 2; }
    uint64_t bytes_used() const override {
        return sizeof(Derived) + posted_.bytes() + unexpected_.bytes();
    }
    void backend_stats(um_stats_t &s) const override {
        s.blocks = posted_.blocks() + unexpected_.blocks();
        s.holes = posted_.holes() + unexpected_.holes();
        s.compactions = posted_.compactions() + unexpected_.compactions();
        s.kernel = k_.id;
        s.kernel_fallback = fell_back_ ? 1 : 0;
    }

    const simd::Kernels &k_;
    const bool fell_back_;
    BlockList<RecvBlock> posted_;
    BlockList<MsgBlock> unexpected_;

private:
    Derived &self() { return static_cast<Derived &>(*this); }

    // Removes the element a search found; the search's result.
    template <class Block>
    static Found take(BlockList<Block> &q, const Hit<Block> &h, uint32_t inspected) {
        void *handle = h.block->handle[h.slot];
        q.remove(h.block, h.slot);
        return {handle, inspected};
    }
};

} // namespace ubermatch

#endif

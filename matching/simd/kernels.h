// The SIMD kernels of the `vector` and `fuzzy*` backends: one table of
// functions per instruction set, each built in its own translation unit with
// its own target flags (kernels_<isa>.cc) and picked once at run time
// (dispatch.h). A kernel compares the first n (1 .. kSlots) slots of a block
// with a search key and returns a bit per slot, bit i for slot i. It may
// compare, and set bits for, slots up to n rounded up to its vector width
// (the arrays always have kSlots entries): callers mask the bits past n.
//
// This header is included by the per-ISA translation units: it must hold no
// inline function, or the linker could keep an AVX-512 copy of it for callers
// on any CPU.
#ifndef UBERMATCH_MATCHING_SIMD_KERNELS_H
#define UBERMATCH_MATCHING_SIMD_KERNELS_H

#include <cstdint>

#include "matching/ubermatch_engine.h"

namespace ubermatch::simd {

// Slots per block: one 64-bit result mask; one AVX-512 compare of 8-bit keys.
constexpr unsigned kSlots = 64;

struct Kernels {
    um_kernel_t id;
    const char *name;

    // Receives in a block (`vector`'s posted queue), wildcards as per-slot
    // masks: bit i when (src & src_mask[i]) == src_val[i] and
    // (tag & tag_mask[i]) == tag_val[i] for the message (src, tag).
    uint64_t (*recv_hits)(const int32_t *src_val, const int32_t *src_mask, const int32_t *tag_val,
                          const int32_t *tag_mask, unsigned n, int32_t src, int32_t tag);

    // Messages in a block, the receive's wildcards as masks of the key:
    // bit i when (src[i] & src_mask) == src_val and (tag[i] & tag_mask) == tag_val.
    uint64_t (*msg_hits)(const int32_t *src, const int32_t *tag, unsigned n, int32_t src_val,
                         int32_t src_mask, int32_t tag_val, int32_t tag_mask);

    // Fast-match keys of `fuzzy*`: bit i when keys[i] == key or keys[i] == wild.
    uint64_t (*key8_hits)(const uint8_t *keys, unsigned n, uint8_t key, uint8_t wild);
    uint64_t (*key16_hits)(const uint16_t *keys, unsigned n, uint16_t key, uint16_t wild);
    uint64_t (*key32_hits)(const uint32_t *keys, unsigned n, uint32_t key, uint32_t wild);
};

// One table per translation unit; the AVX tables must only be called on a CPU
// that has the instruction set (dispatch.h checks).
const Kernels &scalar_kernels();
const Kernels &avx2_kernels();
const Kernels &avx512_kernels();

} // namespace ubermatch::simd

#endif

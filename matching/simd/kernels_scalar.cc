// Plain C++ kernels, for every CPU. The compares are written so that the
// compiler can vectorize them with the base instruction set (SSE2 on x86-64):
// one byte per slot first, then eight bytes at a time packed into eight bits.
#include <cstring>

#include "matching/simd/kernels.h"

namespace ubermatch::simd {

namespace {

// hit[0..n) are 0 or 1: bit i of the result is hit[i].
uint64_t pack(const uint8_t *hit, unsigned n) {
    uint64_t bits = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (unsigned i = 0; i < n; i += 8) {
        uint64_t x;
        std::memcpy(&x, hit + i, sizeof x);
        // Byte k (0 or 1) lands on bit 56 + k; no two partial products overlap.
        bits |= ((x * 0x0102040810204080ull) >> 56) << i;
    }
#else
    for (unsigned i = 0; i < n; ++i) {
        bits |= uint64_t{hit[i]} << i;
    }
#endif
    return bits;
}

uint64_t recv_hits(const int32_t *src_val, const int32_t *src_mask, const int32_t *tag_val,
                   const int32_t *tag_mask, unsigned n, int32_t src, int32_t tag) {
    uint8_t hit[kSlots];
    for (unsigned i = 0; i < kSlots; ++i) {
        hit[i] = ((src & src_mask[i]) == src_val[i]) & ((tag & tag_mask[i]) == tag_val[i]);
    }
    return pack(hit, n);
}

uint64_t msg_hits(const int32_t *src, const int32_t *tag, unsigned n, int32_t src_val,
                  int32_t src_mask, int32_t tag_val, int32_t tag_mask) {
    uint8_t hit[kSlots];
    for (unsigned i = 0; i < kSlots; ++i) {
        hit[i] = ((src[i] & src_mask) == src_val) & ((tag[i] & tag_mask) == tag_val);
    }
    return pack(hit, n);
}

template <typename K>
uint64_t key_hits(const K *keys, unsigned n, K key, K wild) {
    uint8_t hit[kSlots];
    for (unsigned i = 0; i < kSlots; ++i) {
        hit[i] = (keys[i] == key) | (keys[i] == wild);
    }
    return pack(hit, n);
}

const Kernels kScalar = {
    UM_KERNEL_SCALAR, "scalar", recv_hits, msg_hits,
    key_hits<uint8_t>, key_hits<uint16_t>, key_hits<uint32_t>,
};

} // namespace

const Kernels &scalar_kernels() { return kScalar; }

} // namespace ubermatch::simd

// Plain C++ kernels: every CPU, and the reference the SIMD ones are tested against.
#include "matching/simd/kernels.h"

namespace ubermatch::simd {

namespace {

uint64_t recv_hits(const int32_t *src_val, const int32_t *src_mask, const int32_t *tag_val,
                   const int32_t *tag_mask, int32_t src, int32_t tag) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < kSlots; ++i) {
        const bool hit = (src & src_mask[i]) == src_val[i] && (tag & tag_mask[i]) == tag_val[i];
        bits |= uint64_t{hit} << i;
    }
    return bits;
}

uint64_t msg_hits(const int32_t *src, const int32_t *tag, int32_t src_val, int32_t src_mask,
                  int32_t tag_val, int32_t tag_mask) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < kSlots; ++i) {
        const bool hit = (src[i] & src_mask) == src_val && (tag[i] & tag_mask) == tag_val;
        bits |= uint64_t{hit} << i;
    }
    return bits;
}

template <typename K>
uint64_t key_hits(const K *keys, K key, K wild) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < kSlots; ++i) {
        bits |= uint64_t{keys[i] == key || keys[i] == wild} << i;
    }
    return bits;
}

const Kernels kScalar = {
    UM_KERNEL_SCALAR, "scalar", recv_hits, msg_hits,
    key_hits<uint8_t>, key_hits<uint16_t>, key_hits<uint32_t>,
};

} // namespace

const Kernels &scalar_kernels() { return kScalar; }

} // namespace ubermatch::simd

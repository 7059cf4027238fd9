// AVX2 kernels: 8 lanes of 32 bits, 16 of 16, 32 of 8 per compare. Built with
// -mavx2 alone (matching/local.mk); called only when the CPU has AVX2.
#include <immintrin.h>

#include "matching/simd/kernels.h"

namespace ubermatch::simd {

namespace {

__m256i load(const void *p) { return _mm256_loadu_si256(static_cast<const __m256i *>(p)); }

// One bit per 32-bit lane whose compare result is all ones.
uint64_t bits32(__m256i eq) {
    return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(eq)));
}

uint64_t recv_hits(const int32_t *src_val, const int32_t *src_mask, const int32_t *tag_val,
                   const int32_t *tag_mask, unsigned n, int32_t src, int32_t tag) {
    const __m256i s = _mm256_set1_epi32(src);
    const __m256i t = _mm256_set1_epi32(tag);
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 8) {
        const __m256i es = _mm256_cmpeq_epi32(_mm256_and_si256(s, load(src_mask + i)), load(src_val + i));
        const __m256i et = _mm256_cmpeq_epi32(_mm256_and_si256(t, load(tag_mask + i)), load(tag_val + i));
        bits |= bits32(_mm256_and_si256(es, et)) << i;
    }
    return bits;
}

uint64_t msg_hits(const int32_t *src, const int32_t *tag, unsigned n, int32_t src_val,
                  int32_t src_mask, int32_t tag_val, int32_t tag_mask) {
    const __m256i sv = _mm256_set1_epi32(src_val);
    const __m256i sm = _mm256_set1_epi32(src_mask);
    const __m256i tv = _mm256_set1_epi32(tag_val);
    const __m256i tm = _mm256_set1_epi32(tag_mask);
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 8) {
        const __m256i es = _mm256_cmpeq_epi32(_mm256_and_si256(load(src + i), sm), sv);
        const __m256i et = _mm256_cmpeq_epi32(_mm256_and_si256(load(tag + i), tm), tv);
        bits |= bits32(_mm256_and_si256(es, et)) << i;
    }
    return bits;
}

uint64_t key8_hits(const uint8_t *keys, unsigned n, uint8_t key, uint8_t wild) {
    const __m256i k = _mm256_set1_epi8(static_cast<char>(key));
    const __m256i w = _mm256_set1_epi8(static_cast<char>(wild));
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 32) {
        const __m256i v = load(keys + i);
        const __m256i eq = _mm256_or_si256(_mm256_cmpeq_epi8(v, k), _mm256_cmpeq_epi8(v, w));
        bits |= uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(eq))} << i;
    }
    return bits;
}

uint64_t key16_hits(const uint16_t *keys, unsigned n, uint16_t key, uint16_t wild) {
    const __m256i k = _mm256_set1_epi16(static_cast<short>(key));
    const __m256i w = _mm256_set1_epi16(static_cast<short>(wild));
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 32) {
        const __m256i a = load(keys + i);
        const __m256i b = load(keys + i + 16);
        const __m256i ea = _mm256_or_si256(_mm256_cmpeq_epi16(a, k), _mm256_cmpeq_epi16(a, w));
        const __m256i eb = _mm256_or_si256(_mm256_cmpeq_epi16(b, k), _mm256_cmpeq_epi16(b, w));
        // Pack the 16-bit results to bytes (per 128-bit lane: a0 b0 a1 b1),
        // then put the quarters back in slot order: a0 a1 b0 b1.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi16(ea, eb), 0xD8);
        bits |= uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(packed))} << i;
    }
    return bits;
}

uint64_t key32_hits(const uint32_t *keys, unsigned n, uint32_t key, uint32_t wild) {
    const __m256i k = _mm256_set1_epi32(static_cast<int>(key));
    const __m256i w = _mm256_set1_epi32(static_cast<int>(wild));
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 8) {
        const __m256i v = load(keys + i);
        bits |= bits32(_mm256_or_si256(_mm256_cmpeq_epi32(v, k), _mm256_cmpeq_epi32(v, w))) << i;
    }
    return bits;
}

const Kernels kAvx2 = {
    UM_KERNEL_AVX2, "avx2", recv_hits, msg_hits, key8_hits, key16_hits, key32_hits,
};

} // namespace

const Kernels &avx2_kernels() { return kAvx2; }

} // namespace ubermatch::simd

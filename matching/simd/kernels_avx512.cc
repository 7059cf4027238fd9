// AVX-512 kernels: 16 lanes of 32 bits (AVX-512F), 32 of 16 and 64 of 8
// (AVX-512BW) per compare, results straight into mask registers. Built with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq (matching/local.mk); called only
// when the CPU has all four.
#include <immintrin.h>

#include "matching/simd/kernels.h"

namespace ubermatch::simd {

namespace {

__m512i load(const void *p) { return _mm512_loadu_si512(p); }

uint64_t recv_hits(const int32_t *src_val, const int32_t *src_mask, const int32_t *tag_val,
                   const int32_t *tag_mask, unsigned n, int32_t src, int32_t tag) {
    const __m512i s = _mm512_set1_epi32(src);
    const __m512i t = _mm512_set1_epi32(tag);
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 16) {
        const __mmask16 es = _mm512_cmpeq_epi32_mask(_mm512_and_si512(s, load(src_mask + i)),
                                                     load(src_val + i));
        const __mmask16 et = _mm512_mask_cmpeq_epi32_mask(
            es, _mm512_and_si512(t, load(tag_mask + i)), load(tag_val + i));
        bits |= uint64_t{et} << i;
    }
    return bits;
}

uint64_t msg_hits(const int32_t *src, const int32_t *tag, unsigned n, int32_t src_val,
                  int32_t src_mask, int32_t tag_val, int32_t tag_mask) {
    const __m512i sv = _mm512_set1_epi32(src_val);
    const __m512i sm = _mm512_set1_epi32(src_mask);
    const __m512i tv = _mm512_set1_epi32(tag_val);
    const __m512i tm = _mm512_set1_epi32(tag_mask);
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 16) {
        const __mmask16 es = _mm512_cmpeq_epi32_mask(_mm512_and_si512(load(src + i), sm), sv);
        const __mmask16 et =
            _mm512_mask_cmpeq_epi32_mask(es, _mm512_and_si512(load(tag + i), tm), tv);
        bits |= uint64_t{et} << i;
    }
    return bits;
}

uint64_t key8_hits(const uint8_t *keys, unsigned /* n */, uint8_t key, uint8_t wild) {
    const __m512i v = load(keys); // the whole block in one compare
    return _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(static_cast<char>(key))) |
           _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(static_cast<char>(wild)));
}

uint64_t key16_hits(const uint16_t *keys, unsigned n, uint16_t key, uint16_t wild) {
    const __m512i k = _mm512_set1_epi16(static_cast<short>(key));
    const __m512i w = _mm512_set1_epi16(static_cast<short>(wild));
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 32) {
        const __m512i v = load(keys + i);
        bits |= uint64_t{_mm512_cmpeq_epi16_mask(v, k) | _mm512_cmpeq_epi16_mask(v, w)} << i;
    }
    return bits;
}

uint64_t key32_hits(const uint32_t *keys, unsigned n, uint32_t key, uint32_t wild) {
    const __m512i k = _mm512_set1_epi32(static_cast<int>(key));
    const __m512i w = _mm512_set1_epi32(static_cast<int>(wild));
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i += 16) {
        const __m512i v = load(keys + i);
        bits |= uint64_t{static_cast<uint16_t>(_mm512_cmpeq_epi32_mask(v, k) |
                                               _mm512_cmpeq_epi32_mask(v, w))}
                << i;
    }
    return bits;
}

const Kernels kAvx512 = {
    UM_KERNEL_AVX512, "avx512", recv_hits, msg_hits, key8_hits, key16_hits, key32_hits,
};

} // namespace

const Kernels &avx512_kernels() { return kAvx512; }

} // namespace ubermatch::simd

// float -> bf16 (kernels.h cvt_f32_bf16), AVX-512F integer arithmetic: the
// scalar reference's rounding bit for bit (round to nearest even on the
// bits, denormals kept, NaN quieted). Not vcvtneps2bf16: that flushes
// denormals and is AVX512-BF16 only.
#include <immintrin.h>

#include "avx512.h"

static inline __m512i round16(__m512i u)
{
    const __m512i lsb =
        _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r =
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    r = _mm512_srli_epi32(r, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
        _mm512_set1_epi32(0x7f800000));
    const __m512i q =
        _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_mask_mov_epi32(r, nan, q);
}

void clef_cvt_f32_bf16__avx512(size_t n, const float *x, uint16_t *y)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_loadu_si512((const void *)(x + i));
        _mm256_storeu_si256((__m256i *)(y + i),
                            _mm512_cvtepi32_epi16(round16(u)));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        const __m512i u = _mm512_maskz_loadu_epi32(m, x + i);
        _mm512_mask_cvtepi32_storeu_epi16(y + i, m, round16(u));
    }
}

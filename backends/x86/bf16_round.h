// float -> bf16 rounding on 16 lanes, AVX-512F integer arithmetic: the
// scalar reference's rounding bit for bit (clef_cvt_f32_bf16__scalar: round
// to nearest even on the bits, denormals kept, NaN quieted). Not
// vcvtneps2bf16: that flushes denormals and is AVX512-BF16 only. Included
// only by files built with AVX-512 flags (the avx512 conversion kernel, the
// bf16 GEMMs' packs).
#ifndef CLEF_X86_BF16_ROUND_H
#define CLEF_X86_BF16_ROUND_H

#include <immintrin.h>

// u: 16 float bit patterns -> 16 dwords, each the bf16 in its low half.
static inline __m512i bf16_round16(__m512i u)
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

#endif

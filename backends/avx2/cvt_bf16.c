// float -> bf16 (kernels.h cvt_f32_bf16), AVX2 integer arithmetic: the
// scalar reference's rounding bit for bit (round to nearest even on the
// bits, denormals kept, NaN quieted).
#include <immintrin.h>
#include <string.h>

#include "avx2.h"

void clef_cvt_f32_bf16__avx2(size_t n, const float *x, uint16_t *y)
{
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
    const __m256i abs = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
        const __m256i hi = _mm256_srli_epi32(u, 16);
        __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, bias),
                                     _mm256_and_si256(hi, one));
        r = _mm256_srli_epi32(r, 16);
        // |u| > Inf as signed: both sides are below 2^31
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
        r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
        // 0..0xffff each: packus keeps them; lanes interleave, fix the order
        r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)(y + i), _mm256_castsi256_si128(r));
    }
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            y[i] = (uint16_t)((u >> 16) | 0x0040u);
        else
            y[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

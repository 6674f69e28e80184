// float -> bf16 (kernels.h cvt_f32_bf16), AVX-512F integer arithmetic: the
// scalar reference's rounding bit for bit (backends/x86/bf16_round.h).
#include <immintrin.h>

#include "avx512.h"
#include "backends/x86/bf16_round.h"

void clef_cvt_f32_bf16__avx512(size_t n, const float *x, uint16_t *y)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_loadu_si512((const void *)(x + i));
        _mm256_storeu_si256((__m256i *)(y + i),
                            _mm512_cvtepi32_epi16(bf16_round16(u)));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        const __m512i u = _mm512_maskz_loadu_epi32(m, x + i);
        _mm512_mask_cvtepi32_storeu_epi16(y + i, m, bf16_round16(u));
    }
}

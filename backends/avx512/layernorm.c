// layernorm kernels for avx512: clef_f32_layernorm_fwd__avx512 clef_f32_layernorm_bwd__avx512 
// Written once for both ISAs: helpers in backends/x86/tmpl_layernorm.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>
#include <string.h>

#include "vec.h"
#include "avx512.h"

// The template's hooks (backends/x86/tmpl_layernorm.h): none. Rows of 8
// floats or fewer, the only ones AVX2 takes its own way, never get here (the
// kernels hand them to AVX2).
#define LN_FWD_ISA_ROWS(rows, n, x, gamma, beta, y, xhat, rstd)                \
    do {                                                                       \
    } while (0)
#define LN_BWD_ISA_ROWS(r, rows, n, dy, xhat, rstd, gamma, dx, sg, sb)         \
    do {                                                                       \
    } while (0)

#include "backends/x86/tmpl_layernorm.h"

// The wide bodies stay out of line: inlined, their register saves and
// stack realignment ran before the narrow test, on every call of the tiny
// heads' rows of 8 (avx512/gemm.c does the same).
static __attribute__((noinline)) void
ln_fwd_wide(int rows, int n, const float *x, const float *gamma,
            const float *beta, float *y, float *xhat, float *rstd)
{
#include "backends/x86/body/layernorm_fwd.h"
}

static __attribute__((noinline)) void
ln_bwd_wide(int rows, int n, const float *dy, const float *xhat,
            const float *rstd, const float *gamma, float *dx, float *dgamma,
            float *dbeta)
{
#include "backends/x86/body/layernorm_bwd.h"
}

// Rows of exactly 8 floats, 16 at a time: AVX2's ln_fwd_rows8 on two
// blocks of 8 rows at once, one per 256-bit half (vf_transpose8x2), with
// the same operations in every lane. Its transposes bound it (port 5), and
// here each shuffle serves two blocks (the memory_norm LayerNorms over a
// tiny head's T rows).
static __attribute__((noinline)) void
ln_fwd_rows16(int rows, const float *x, const float *gamma, const float *beta,
              float *y, float *xhat, float *rstd)
{
    const __m512 inv_n = _mm512_set1_ps(0.125f); // 1/8, exact
    const __m512 eps = _mm512_set1_ps(CLEF_LN_EPS), one = _mm512_set1_ps(1.0f);
    for (int r = 0; r + 16 <= rows; r += 16) {
        __m512 v[8], out[8];
        for (int i = 0; i < 8; i++)
            v[i] = _mm512_insertf32x8(
                _mm512_castps256_ps512(_mm256_loadu_ps(x + (size_t)(r + i) * 8)),
                _mm256_loadu_ps(x + (size_t)(r + 8 + i) * 8), 1);
        vf_transpose8x2(v); // v[c] = column c of both blocks
        __m512 sum = _mm512_add_ps(
            _mm512_add_ps(_mm512_add_ps(v[0], v[1]), _mm512_add_ps(v[2], v[3])),
            _mm512_add_ps(_mm512_add_ps(v[4], v[5]), _mm512_add_ps(v[6], v[7])));
        __m512 mean = _mm512_mul_ps(sum, inv_n), ss = _mm512_setzero_ps();
        for (int c = 0; c < 8; c++) {
            v[c] = _mm512_sub_ps(v[c], mean);
            ss = _mm512_fmadd_ps(v[c], v[c], ss);
        }
        __m512 rs = _mm512_div_ps(
            one, _mm512_sqrt_ps(_mm512_add_ps(_mm512_mul_ps(ss, inv_n), eps)));
        for (int c = 0; c < 8; c++) {
            v[c] = _mm512_mul_ps(v[c], rs);
            out[c] = _mm512_fmadd_ps(_mm512_set1_ps(gamma[c]), v[c],
                                     _mm512_set1_ps(beta[c]));
        }
        vf_transpose8x2(v);
        vf_transpose8x2(out);
        for (int i = 0; i < 8; i++) {
            const size_t lo = (size_t)(r + i) * 8, hi = (size_t)(r + 8 + i) * 8;
            _mm256_storeu_ps(xhat + lo, _mm512_castps512_ps256(v[i]));
            _mm256_storeu_ps(xhat + hi, _mm512_extractf32x8_ps(v[i], 1));
            _mm256_storeu_ps(y + lo, _mm512_castps512_ps256(out[i]));
            _mm256_storeu_ps(y + hi, _mm512_extractf32x8_ps(out[i], 1));
        }
        _mm512_storeu_ps(rstd + r, rs); // rows r .. r + 15 in lane order
    }
}

void clef_f32_layernorm_fwd__avx512(int rows, int n, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y, float *xhat, float *rstd)
{
    if (n == 8 && rows >= 16) { // whole 16-row blocks, the rest below
        const int r16 = rows / 16 * 16;
        ln_fwd_rows16(r16, x, gamma, beta, y, xhat, rstd);
        x += (size_t)r16 * 8, y += (size_t)r16 * 8, xhat += (size_t)r16 * 8;
        rstd += r16, rows -= r16;
    }
    CLEF_NARROW(n <= 8, clef_f32_layernorm_fwd__avx2(rows, n, x, gamma, beta, y,
                                                     xhat, rstd));
    ln_fwd_wide(rows, n, x, gamma, beta, y, xhat, rstd);
}

void clef_f32_layernorm_bwd__avx512(int rows, int n, const float *dy,
                                    const float *xhat, const float *rstd,
                                    const float *gamma, float *dx,
                                    float *dgamma, float *dbeta)
{
    CLEF_NARROW(n <= 8, clef_f32_layernorm_bwd__avx2(rows, n, dy, xhat, rstd,
                                                     gamma, dx, dgamma, dbeta));
    ln_bwd_wide(rows, n, dy, xhat, rstd, gamma, dx, dgamma, dbeta);
}

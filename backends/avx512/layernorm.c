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
static __attribute__((noinline)) void ln_fwd_rows16(int rows, const float *x,
                                                    const float *gamma,
                                                    const float *beta, float *y,
                                                    float *xhat, float *rstd)
{
    const __m512 inv_n = _mm512_set1_ps(0.125f); // 1/8, exact
    const __m512 eps = _mm512_set1_ps(CLEF_LN_EPS), one = _mm512_set1_ps(1.0f);
    for (int r = 0; r + 16 <= rows; r += 16) {
        __m512 v[8], out[8];
        for (int i = 0; i < 8; i++)
            v[i] = _mm512_insertf32x8(
                _mm512_castps256_ps512(
                    _mm256_loadu_ps(x + (size_t)(r + i) * 8)),
                _mm256_loadu_ps(x + (size_t)(r + 8 + i) * 8), 1);
        vf_transpose8x2(v); // v[c] = column c of both blocks
        __m512 sum = _mm512_add_ps(
            _mm512_add_ps(_mm512_add_ps(v[0], v[1]), _mm512_add_ps(v[2], v[3])),
            _mm512_add_ps(_mm512_add_ps(v[4], v[5]),
                          _mm512_add_ps(v[6], v[7])));
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

// Backward for rows of exactly 8 floats: AVX2's bits. Its dgamma and dbeta
// partial sums run every row in turn from zero (ymm, the reference's order)
// and are added once; dx of each whole 16-row block is AVX2's ln_bwd_rows8
// on two 8-row blocks at once, one per 256-bit half (each shuffle of the
// transposes serves both); the rows after the last whole 16 (8-row blocks
// from a multiple of 8, as AVX2 cuts them) go to the AVX2 kernel for dx
// alone, its partial sums dropped.
static __attribute__((noinline)) void
ln_bwd_rows16(int rows, const float *dy, const float *xhat, const float *rstd,
              const float *gamma, float *dx, float *dgamma, float *dbeta)
{
    const __m512 inv_n = _mm512_set1_ps(0.125f);
    __m256 sg = _mm256_setzero_ps(), sb = _mm256_setzero_ps();
    const int r16 = rows / 16 * 16;
    for (int r = 0; r < r16; r += 16) {
        __m512 g[8], h[8];
        for (int i = 0; i < 16; i++) { // rows in order
            const __m256 gi = _mm256_loadu_ps(dy + (size_t)(r + i) * 8);
            const __m256 hi = _mm256_loadu_ps(xhat + (size_t)(r + i) * 8);
            sg = _mm256_add_ps(sg, _mm256_mul_ps(gi, hi)); // no FMA
            sb = _mm256_add_ps(sb, gi);
        }
        if (!dx)
            continue;
        for (int i = 0; i < 8; i++) {
            const size_t lo = (size_t)(r + i) * 8, hi = (size_t)(r + 8 + i) * 8;
            g[i] = _mm512_insertf32x8(
                _mm512_castps256_ps512(_mm256_loadu_ps(dy + lo)),
                _mm256_loadu_ps(dy + hi), 1);
            h[i] = _mm512_insertf32x8(
                _mm512_castps256_ps512(_mm256_loadu_ps(xhat + lo)),
                _mm256_loadu_ps(xhat + hi), 1);
        }
        vf_transpose8x2(g);
        vf_transpose8x2(h);
        __m512 s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps();
        for (int c = 0; c < 8; c++) {
            g[c] = _mm512_mul_ps(g[c], _mm512_set1_ps(gamma[c])); // dxh
            s1 = _mm512_add_ps(s1, g[c]);
            s2 = _mm512_fmadd_ps(g[c], h[c], s2);
        }
        const __m512 m1 = _mm512_mul_ps(s1, inv_n),
                     m2 = _mm512_mul_ps(s2, inv_n);
        const __m512 rs = _mm512_loadu_ps(rstd + r); // rows r .. r + 15
        for (int c = 0; c < 8; c++)
            g[c] = _mm512_mul_ps(
                rs, _mm512_fnmadd_ps(h[c], m2, _mm512_sub_ps(g[c], m1)));
        vf_transpose8x2(g);
        for (int i = 0; i < 8; i++) {
            float *d0 = dx + (size_t)(r + i) * 8,
                  *d1 = dx + (size_t)(r + 8 + i) * 8;
            _mm256_storeu_ps(d0, _mm256_add_ps(_mm256_loadu_ps(d0),
                                               _mm512_castps512_ps256(g[i])));
            _mm256_storeu_ps(d1,
                             _mm256_add_ps(_mm256_loadu_ps(d1),
                                           _mm512_extractf32x8_ps(g[i], 1)));
        }
    }
    for (int r = r16; r < rows; r++) {
        const __m256 gi = _mm256_loadu_ps(dy + (size_t)r * 8);
        const __m256 hi = _mm256_loadu_ps(xhat + (size_t)r * 8);
        sg = _mm256_add_ps(sg, _mm256_mul_ps(gi, hi));
        sb = _mm256_add_ps(sb, gi);
    }
    if (dx && rows > r16) {
        float drop_g[8], drop_b[8];
        clef_f32_layernorm_bwd__avx2(rows - r16, 8, dy + (size_t)r16 * 8,
                                     xhat + (size_t)r16 * 8, rstd + r16, gamma,
                                     dx + (size_t)r16 * 8, drop_g, drop_b);
    }
    _mm256_storeu_ps(dgamma, _mm256_add_ps(_mm256_loadu_ps(dgamma), sg));
    _mm256_storeu_ps(dbeta, _mm256_add_ps(_mm256_loadu_ps(dbeta), sb));
}

void clef_f32_layernorm_bwd__avx512(int rows, int n, const float *dy,
                                    const float *xhat, const float *rstd,
                                    const float *gamma, float *dx,
                                    float *dgamma, float *dbeta)
{
    if (n == 8 && rows >= 16) {
        ln_bwd_rows16(rows, dy, xhat, rstd, gamma, dx, dgamma, dbeta);
        return;
    }
    CLEF_NARROW(n <= 8, clef_f32_layernorm_bwd__avx2(rows, n, dy, xhat, rstd,
                                                     gamma, dx, dgamma, dbeta));
    ln_bwd_wide(rows, n, dy, xhat, rstd, gamma, dx, dgamma, dbeta);
}

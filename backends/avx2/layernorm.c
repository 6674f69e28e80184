// layernorm kernels for avx2: clef_f32_layernorm_fwd__avx2 clef_f32_layernorm_bwd__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_layernorm.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>
#include <string.h>

#include "vec.h"
#include "avx2.h"

// Rows of exactly 8 floats (the tiny head's width), 8 rows at a time: the
// rows are transposed so each ymm holds one column of 8 rows, and the row
// reductions become plain vector adds (no horizontal sums). Same two-pass
// mean and variance as the generic path.
static void ln_fwd_rows8(int rows, const float *x, const float *gamma,
                         const float *beta, float *y, float *xhat, float *rstd)
{
    const vf inv_n = vf_set1(0.125f); // 1/8, exact: the same as dividing by 8
    for (int r = 0; r < rows; r += 8) {
        __m256 v[8];
        for (int i = 0; i < 8; i++)
            v[i] = _mm256_loadu_ps(x + (size_t)(r + i) * 8);
        transpose8(v); // v[c] = column c of these 8 rows
        vf sum = vf_add(vf_add(vf_add(v[0], v[1]), vf_add(v[2], v[3])),
                        vf_add(vf_add(v[4], v[5]), vf_add(v[6], v[7])));
        vf mean = vf_mul(sum, inv_n);
        vf ss = vf_zero();
        for (int c = 0; c < 8; c++) {
            v[c] = vf_sub(v[c], mean);
            ss = vf_fma(v[c], v[c], ss);
        }
        vf rs =
            vf_div(vf_set1(1.0f),
                   vf_sqrt(vf_add(vf_mul(ss, inv_n), vf_set1(CLEF_LN_EPS))));
        __m256 out[8];
        for (int c = 0; c < 8; c++) {
            v[c] = vf_mul(v[c], rs);
            out[c] = vf_fma(vf_set1(gamma[c]), v[c], vf_set1(beta[c]));
        }
        transpose8(v);
        transpose8(out);
        for (int i = 0; i < 8; i++) {
            _mm256_storeu_ps(xhat + (size_t)(r + i) * 8, v[i]);
            _mm256_storeu_ps(y + (size_t)(r + i) * 8, out[i]);
        }
        _mm256_storeu_ps(rstd + r, rs);
    }
}

// Backward for rows of exactly 8 floats, 8 rows at a time (see above):
// dgamma/dbeta partial sums stay in registers in row order (the reference's
// order), dx goes through the transposed layout.
static void ln_bwd_rows8(int rows, const float *dy, const float *xhat,
                         const float *rstd, const float *gamma, float *dx,
                         vf *sg, vf *sb)
{
    const vf inv_n = vf_set1(0.125f);
    for (int r = 0; r < rows; r += 8) {
        __m256 g[8], h[8];
        for (int i = 0; i < 8; i++) {
            g[i] = _mm256_loadu_ps(dy + (size_t)(r + i) * 8);
            h[i] = _mm256_loadu_ps(xhat + (size_t)(r + i) * 8);
            *sg = vf_add(
                *sg, vf_mul(g[i], h[i])); // no FMA: the reference's rounding
            *sb = vf_add(*sb, g[i]);
        }
        if (!dx)
            continue;
        transpose8(g);
        transpose8(h);
        vf s1 = vf_zero(), s2 = vf_zero();
        for (int c = 0; c < 8; c++) {
            g[c] = vf_mul(g[c], vf_set1(gamma[c])); // dxh, column c
            s1 = vf_add(s1, g[c]);
            s2 = vf_fma(g[c], h[c], s2);
        }
        vf m1 = vf_mul(s1, inv_n), m2 = vf_mul(s2, inv_n);
        vf rs = _mm256_loadu_ps(rstd + r);
        for (int c = 0; c < 8; c++)
            g[c] = vf_mul(rs, vf_fnma(h[c], m2, vf_sub(g[c], m1)));
        transpose8(g);
        for (int i = 0; i < 8; i++) {
            float *d = dx + (size_t)(r + i) * 8;
            _mm256_storeu_ps(d, vf_add(_mm256_loadu_ps(d), g[i]));
        }
    }
}

// The template's hooks (backends/x86/tmpl_layernorm.h): whole blocks of 8
// rows of exactly 8 floats go through the transposed paths above.
#define LN_FWD_ISA_ROWS(rows, n, x, gamma, beta, y, xhat, rstd)                \
    do {                                                                       \
        if (n == 8 && rows >= 8) {                                             \
            int r8 = rows / 8 * 8;                                             \
            ln_fwd_rows8(r8, x, gamma, beta, y, xhat, rstd);                   \
            x += (size_t)r8 * 8, y += (size_t)r8 * 8, xhat += (size_t)r8 * 8;  \
            rstd += r8, rows -= r8;                                            \
        }                                                                      \
    } while (0)
#define LN_BWD_ISA_ROWS(r, rows, n, dy, xhat, rstd, gamma, dx, sg, sb)         \
    do {                                                                       \
        if (n == 8 && rows >= 8) {                                             \
            vf g8 = vf_zero(), b8 = vf_zero();                                 \
            r = rows / 8 * 8;                                                  \
            ln_bwd_rows8(r, dy, xhat, rstd, gamma, dx, &g8, &b8);              \
            vf_store(sg, g8);                                                  \
            vf_store(sb, b8);                                                  \
        }                                                                      \
    } while (0)

#include "backends/x86/tmpl_layernorm.h"

void clef_f32_layernorm_fwd__avx2(int rows, int n, const float *x,
                                  const float *gamma, const float *beta,
                                  float *y, float *xhat, float *rstd)
{
#include "backends/x86/body/layernorm_fwd.h"
}

void clef_f32_layernorm_bwd__avx2(int rows, int n, const float *dy,
                                  const float *xhat, const float *rstd,
                                  const float *gamma, float *dx, float *dgamma,
                                  float *dbeta)
{
#include "backends/x86/body/layernorm_bwd.h"
}

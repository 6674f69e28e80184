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

void clef_f32_layernorm_fwd__avx512(int rows, int n, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y, float *xhat, float *rstd)
{
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

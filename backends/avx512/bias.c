// bias kernels for avx512: clef_f32_bias_add__avx512 clef_f32_colsum__avx512
// Written once for both ISAs: helpers in backends/x86/tmpl_bias.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_bias.h"

// The wide bodies stay out of line, so the tiny heads' rows of 8 reach
// AVX2 without their register saves (avx512/gemm.c does the same).
static __attribute__((noinline)) void bias_add_wide(int rows, int n,
                                                    const float *b, float *y)
{
#include "backends/x86/body/bias_add.h"
}

static __attribute__((noinline)) void colsum_wide(int rows, int n,
                                                  const float *dy, float *db)
{
#include "backends/x86/body/colsum.h"
}

void clef_f32_bias_add__avx512(int rows, int n, const float *b, float *y)
{
    CLEF_NARROW(n <= 8, clef_f32_bias_add__avx2(rows, n, b, y));
    bias_add_wide(rows, n, b, y);
}

void clef_f32_colsum__avx512(int rows, int n, const float *dy, float *db)
{
    CLEF_NARROW(n <= 8, clef_f32_colsum__avx2(rows, n, dy, db));
    colsum_wide(rows, n, dy, db);
}

// The vector erf of the ISA backends (clef_f32_erf__avx2, clef_f32_erf__avx512,
// backends/x86/tmpl_math.h) against double-precision erf, and the GELU
// kernels built on it against the scalar reference (double-evaluated).
//
// erf sweep: every 1021st float bit pattern (both signs, all exponents:
// subnormals, tiny, ~1, large magnitudes) plus ±0, ±FLT_MIN, ±denormal
// minimum, ±FLT_MAX, ±Inf, NaN, and a fine sweep of [−5, 5]. Error in ulps
// of the correctly rounded float result; the bound is ERF_MAX_ULP.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/avx2/avx2.h"
#include "backends/avx512/avx512.h"
#include "scheduler/registry.h"
#include "backends/scalar/scalar.h"
#include "util.h"

#define ERF_MAX_ULP 4.0
#define ERF_STRIDE 1021u

typedef void (*erf_fn)(size_t n, const float *x, float *y);

static void skip_unless(const char *isa)
{
    const char *why = clef_backend_unavailable(clef_backend_find(isa));
    if (why)
        cr_skip_test("%s: %s", isa, why);
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// Sweep inputs: the strided bit patterns, specials and [−5, 5] finely.
static float *sweep_inputs(size_t *n)
{
    size_t cap = (size_t)(UINT32_MAX / ERF_STRIDE) + 64 + 2000001;
    float *x = clef_test_falloc(cap);
    size_t k = 0;
    for (uint64_t u = 0; u <= UINT32_MAX; u += ERF_STRIDE)
        x[k++] = from_bits((uint32_t)u);
    const float specials[] = {
        0.0f,     -0.0f,    FLT_MIN,   -FLT_MIN, 1e-45f,   -1e-45f, FLT_MAX,
        -FLT_MAX, INFINITY, -INFINITY, NAN,      0.875f,   -0.875f, 4.0f,
        -4.0f,    10.1f,    -10.1f,    3.9192f,  -3.9192f, 1e-20f,  -1e-20f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        x[k++] = specials[i];
    for (int i = -1000000; i <= 1000000; i++)
        x[k++] = (float)i * 5e-6f;
    *n = k;
    return x;
}

static void erf_sweep(const char *isa, erf_fn fn)
{
    skip_unless(isa);
    size_t n;
    float *x = sweep_inputs(&n);
    float *y = clef_test_falloc(n);
    fn(n, x, y);
    double worst = 0.0;
    float worst_x = 0.0f;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) {
            cr_assert(isnan(y[i]), "%s: erf(NaN) = %g, want NaN", isa, y[i]);
            continue;
        }
        double e = clef_test_ulp_err(y[i], erf((double)x[i]));
        if (e > worst) {
            worst = e;
            worst_x = x[i];
        }
    }
    fprintf(stderr, "[erf] %s: %zu inputs, max error %.2f ulp at x = %a\n", isa,
            n, worst, worst_x);
    cr_assert(worst <= ERF_MAX_ULP, "%s: erf error %.2f ulp at x = %a (%g)",
              isa, worst, worst_x, worst_x);
    cr_assert(y[n - 2000001 - 21 + 8] == 1.0f &&
                  y[n - 2000001 - 21 + 9] == -1.0f,
              "%s: erf(±Inf) must be ±1", isa);
    free(x), free(y);
}

Test(erf, avx512_dense_sweep)
{
    erf_sweep("avx512", clef_f32_erf__avx512);
}
Test(erf, avx2_dense_sweep)
{
    erf_sweep("avx2", clef_f32_erf__avx2);
}

// GELU forward and backward against the scalar reference (double-evaluated,
// within half an ulp): |Δy| ≤ GELU_ULP FLT_EPSILON |y_ref| + FLT_MIN (results
// below FLT_MIN, x < −13, may flush to 0).
#define GELU_ULP 4.0

static void gelu_vs_scalar(const char *isa, const clef_kernels *k)
{
    skip_unless(isa);
    size_t n = 400003; // odd: exercises the masked tail
    float *x = clef_test_falloc(n), *y = clef_test_falloc(n),
          *yr = clef_test_falloc(n);
    float *dy = clef_test_falloc(n), *dx = clef_test_falloc(n),
          *dxr = clef_test_falloc(n);
    uint64_t rng = 0x9e1u;
    for (size_t i = 0; i < n; i++)
        x[i] = -20.0f + 40.0f * (float)i / (float)n;
    x[0] = INFINITY, x[1] = -INFINITY, x[2] = 0.0f, x[3] = -0.0f;
    clef_test_fill_uniform(dy, n, -1.0f, 1.0f, &rng);
    clef_test_fill_pattern(dx, n);
    clef_test_fcopy(dxr, dx, n);
    k->gelu_fwd(n, x, y);
    clef_scalar_kernels.gelu_fwd(n, x, yr);
    double worst = 0.0;
    float wx = 0.0f;
    for (size_t i = 2; i < n; i++)
        if (fabsf(yr[i]) >= FLT_MIN) {
            double e =
                fabs((double)y[i] - yr[i]) / (CLEF_TEST_EPS * fabsf(yr[i]));
            if (e > worst)
                worst = e, wx = x[i];
        }
    fprintf(stderr,
            "[gelu] %s: max relative error %.2f eps vs the scalar reference (x "
            "= %g)\n",
            isa, worst, wx);
    cr_assert(clef_test_close(y + 2, yr + 2, n - 2, FLT_MIN,
                              GELU_ULP * CLEF_TEST_EPS),
              "%s: gelu_fwd differs from the scalar reference", isa);
    // the limits (the scalar reference gives NaN for −Inf: Inf·0)
    cr_assert(y[0] == INFINITY && y[1] == 0.0f, "%s: gelu(±Inf) = %g, %g", isa,
              y[0], y[1]);
    float inf2[2] = {INFINITY, -INFINITY}, g2[2] = {1.0f, 1.0f},
          d2[2] = {0.0f, 0.0f};
    k->gelu_bwd(2, inf2, g2, d2);
    cr_assert(d2[0] == 1.0f && d2[1] == 0.0f, "%s: gelu'(±Inf) = %g, %g", isa,
              d2[0], d2[1]);
    k->gelu_bwd(n - 2, x + 2, dy + 2, dx + 2);
    clef_scalar_kernels.gelu_bwd(n - 2, x + 2, dy + 2, dxr + 2);
    // dx = dx0 + dy·gelu'(x): the sum rounds once more (|dx0| ≤ 0.75)
    cr_assert(clef_test_close(dx + 2, dxr + 2, n - 2, 2 * CLEF_TEST_EPS,
                              GELU_ULP * CLEF_TEST_EPS),
              "%s: gelu_bwd differs from the scalar reference", isa);
    free(x), free(y), free(yr), free(dy), free(dx), free(dxr);
}

Test(erf, avx512_gelu_vs_scalar)
{
    gelu_vs_scalar("avx512", &clef_avx512_kernels);
}
Test(erf, avx2_gelu_vs_scalar)
{
    gelu_vs_scalar("avx2", &clef_avx2_kernels);
}

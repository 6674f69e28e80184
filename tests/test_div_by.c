// Division by one value on the FMA units (vf_div_by, backends/x86/tmpl_math.h:
// the softmax rows' division by their sum, AdamW's by √(1 − β2ᵗ)) against
// the division, in bits: clef_f32_div_by__avx2 and __avx512 over a sweep of
// a and a battery of divisors b.
//
// a: every DIV_BY_STRIDE-th bit pattern (both signs, every exponent,
// subnormals, Inf, NaN), the edges of the fast path's range (2^±100 and
// their neighbours, ±0, FLT_MIN, the smallest subnormal) and softmax-like
// values in [0, 1]. b: 1 and its neighbours, the ends of each binade,
// softmax sums in [1, 96], AdamW's √(1 − β2ᵗ) for several β2 and t, the
// ends of vf_divisor_of's fast range and divisors outside it (the division
// itself then runs). CLEF_DIV_BY_STRIDE=1 sweeps all 2^32 patterns.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/avx2/avx2.h"
#include "backends/avx512/avx512.h"
#include "isa_common.h"

#define DIV_BY_STRIDE 4099u

typedef void (*div_by_fn)(size_t n, const float *a, float b, float *y);

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float *sweep_a(size_t *n)
{
    const char *env = getenv("CLEF_DIV_BY_STRIDE");
    const uint64_t stride =
        env && atoi(env) > 0 ? (uint64_t)atoi(env) : DIV_BY_STRIDE;
    const size_t cap = (size_t)(UINT32_MAX / stride) + 1 + 64 + 100003;
    float *a = clef_test_falloc(cap);
    size_t k = 0;
    for (uint64_t u = 0; u <= UINT32_MAX; u += stride)
        a[k++] = from_bits((uint32_t)u);
    const float edges[] = {0x1p-100f, 0x1p100f, FLT_MIN, 1e-45f,        FLT_MAX,
                           INFINITY,  1.0f,     0.5f,    0x1.fffffep-1f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        const float e = edges[i];
        const float around[] = {e, nextafterf(e, 0.0f),
                                nextafterf(e, INFINITY)};
        for (int j = 0; j < 3; j++)
            a[k++] = around[j], a[k++] = -around[j];
    }
    a[k++] = 0.0f, a[k++] = -0.0f, a[k++] = NAN;
    uint64_t rng = 0xd1b5u;
    for (int i = 0; i < 100003; i++) // odd: the masked tail runs too
        a[k++] = (float)clef_test_rand_unit(&rng);
    *n = k;
    return a;
}

static size_t divisors(float *b)
{
    size_t k = 0;
    const float fixed[] = {
        1.0f,     0x1.000002p0f, 0x1.fffffep0f,  0x1.fffffep-1f, 2.0f,
        1.5f,     3.0f,          7.0f,           96.0f,          95.99999f,
        0x1p-20f, 0x1p20f,       0x1.fffffep19f, 0x1.000002p-20f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        b[k++] = fixed[i];
    uint64_t rng = 0x5eedu;
    for (int i = 0; i < 24; i++)
        b[k++] = 1.0f + 95.0f * (float)clef_test_rand_unit(&rng);
    const double beta2[] = {0.999, 0.99, 0.95, 0.9999};
    const int steps[] = {1, 2, 3, 10, 100, 1000, 10000};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 7; j++)
            b[k++] = (float)sqrt(1.0 - pow(beta2[i], steps[j]));
    // outside the fast range: the division runs, and must still be exact
    b[k++] = 0x1p-21f, b[k++] = 0x1p21f, b[k++] = 1e30f, b[k++] = 1e-40f;
    return k;
}

static void div_by_sweep(const char *isa, div_by_fn fn)
{
    (void)isa_table_or_skip(isa);
    size_t n;
    float *a = sweep_a(&n), *y = clef_test_falloc(n);
    float b[128];
    const size_t nb = divisors(b);
    size_t checked = 0;
    for (size_t j = 0; j < nb; j++) {
        fn(n, a, b[j], y);
        for (size_t i = 0; i < n; i++) {
            const float want = a[i] / b[j];
            if (isnan(want)) {
                cr_assert(isnan(y[i]), "%s: %a / %a = %a, want NaN", isa, a[i],
                          b[j], y[i]);
                continue;
            }
            cr_assert(bits(y[i]) == bits(want), "%s: %a / %a = %a, want %a",
                      isa, a[i], b[j], y[i], want);
        }
        checked += n;
    }
    fprintf(stderr, "[div_by] %s: %zu quotients (%zu divisors), all bitwise\n",
            isa, checked, nb);
    free(a), free(y);
}

Test(div_by, avx512_bitwise)
{
    div_by_sweep("avx512", clef_f32_div_by__avx512);
}
Test(div_by, avx2_bitwise)
{
    div_by_sweep("avx2", clef_f32_div_by__avx2);
}

// The vector exp of the ISA backends (vf_exp, backends/x86/tmpl_math.h: the
// softmax, attention and loss kernels' exp) against double-precision exp,
// through clef_f32_exp__avx2 and __avx512: every 1021st float bit pattern
// (both signs, every exponent) and a fine sweep of [−100, 100], each in a
// full vector and again in a masked tail. Its stated behaviour:
//   x < −87.3365447505531 (ln 2⁻¹²⁶ rounded down)   exactly +0
//   x > 88.72283905206835                            +Inf
//   NaN                                              NaN
//   88.3762626647949 < x ≤ 88.72283905206835         e^88.3762626647949 (the
//                      argument's clamp, where 2ⁿ stays a float; no kernel
//                      passes such x: softmax and loss arguments are ≤ 0)
//   otherwise within EXP_MAX_ULP of e^x (ulps of the correctly rounded
//   float, subnormal spacing at the bottom).
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

#define EXP_MAX_ULP 2.0
#define EXP_STRIDE 1021u
#define EXP_LO -87.3365447505531f
#define EXP_HI 88.72283905206835f
#define EXP_CLAMP 88.3762626647949f

typedef void (*exp_fn)(size_t n, const float *x, float *y);

static void exp_sweep(const char *isa, exp_fn fn)
{
    (void)isa_table_or_skip(isa);
    const size_t cap = (size_t)(UINT32_MAX / EXP_STRIDE) + 2000003 + 8;
    float *x = clef_test_falloc(cap), *y = clef_test_falloc(cap);
    size_t n = 0;
    for (uint64_t u = 0; u <= UINT32_MAX; u += EXP_STRIDE) {
        uint32_t b = (uint32_t)u;
        memcpy(&x[n++], &b, 4);
    }
    for (int i = -1000000; i <= 1000000; i++)
        x[n++] = (float)i * 1e-4f;
    const float specials[] = {NAN,
                              INFINITY,
                              -INFINITY,
                              EXP_LO,
                              nextafterf(EXP_LO, 0.0f),
                              nextafterf(EXP_LO, -INFINITY),
                              EXP_CLAMP};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        x[n++] = specials[i];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            fn(n, x, y);
        else // every input once as the last lane of a masked tail
            for (size_t i = 0; i < n; i += 3)
                fn(i + 3 <= n ? 3 : n - i, x + i, y + i);
        double worst = 0.0;
        float worst_x = 0.0f;
        for (size_t i = 0; i < n; i++) {
            const float xi = x[i];
            if (isnan(xi)) {
                cr_assert(isnan(y[i]), "%s: exp(NaN) = %a", isa, y[i]);
            } else if (xi < EXP_LO) {
                cr_assert(y[i] == 0.0f && !signbit(y[i]),
                          "%s: exp(%a) = %a, want +0", isa, xi, y[i]);
            } else if (xi > EXP_HI) {
                cr_assert(isinf(y[i]) && y[i] > 0,
                          "%s: exp(%a) = %a, want +Inf", isa, xi, y[i]);
            } else if (xi > EXP_CLAMP) {
                cr_assert(y[i] == y[n - 1],
                          "%s: exp(%a) = %a, want exp's clamp %a", isa, xi,
                          y[i], y[n - 1]);
            } else {
                const double e = clef_test_ulp_err(y[i], exp((double)xi));
                if (e > worst)
                    worst = e, worst_x = xi;
            }
        }
        fprintf(stderr,
                "[exp] %s (%s): %zu inputs, max error %.2f ulp at x = %a\n",
                isa, pass ? "masked tails" : "full vectors", n, worst, worst_x);
        cr_assert(worst <= EXP_MAX_ULP, "%s: exp error %.2f ulp at x = %a", isa,
                  worst, worst_x);
    }
    free(x), free(y);
}

Test(exp, avx512_dense_sweep)
{
    exp_sweep("avx512", clef_f32_exp__avx512);
}
Test(exp, avx2_dense_sweep)
{
    exp_sweep("avx2", clef_f32_exp__avx2);
}

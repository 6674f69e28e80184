// Exact-erf GELU of the scalar backend.
//   forward:  against x Φ(x) in long double; the scalar reference evaluates in
//             double and rounds once, so 1 FLT_EPSILON relative (+ the
//             smallest subnormal where the result underflows).
//   backward: against Φ(x) + x φ(x) in long double (2 FLT_EPSILON relative to
//             |dy gelu'|, 1 rounding for the product + 1 for the +=), and by
//             central finite differences in double of L = Σ w ⊙ gelu(x);
//             it must accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

// x (n): a uniform spread plus the awkward points (0, −0, tiny, the far tails).
static size_t gelu_inputs(float *x, size_t n, uint64_t *rng)
{
    static const float special[] = {
        0.0f,  -0.0f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 0.5f,   -0.5f, 3.0f,
        -3.0f, -6.0f, -9.0f,  -12.0f,  9.0f,  40.0f,  -40.0f, 1e30f, -1e30f};
    size_t ns = sizeof(special) / sizeof(special[0]);
    clef_test_fill_uniform(x, n, -8.0f, 8.0f, rng);
    for (size_t i = 0; i < ns && i < n; i++)
        x[i] = special[i];
    return n;
}

Test(gelu, forward_vs_long_double)
{
    uint64_t rng = 21;
    size_t n = 4099;
    float *x = clef_test_falloc(n), *y = clef_test_falloc(n);
    double *want = clef_test_dalloc(n);
    gelu_inputs(x, n, &rng);
    for (size_t i = 0; i < n; i++)
        want[i] = clef_test_ref_gelu(x[i]);
    clef_scalar_kernels.gelu_fwd(n, x, y);
    bool ok = clef_test_close_d(y, want, n, FLT_TRUE_MIN, CLEF_TEST_EPS);
    free(x), free(y), free(want);
    cr_assert(ok, "gelu_fwd");
}

Test(gelu, backward_vs_long_double_and_accumulates)
{
    uint64_t rng = 22;
    size_t n = 4099;
    float *x = clef_test_falloc(n), *dy = clef_test_falloc(n);
    float *dx = clef_test_falloc(n), *pre = clef_test_falloc(n);
    float *acc = clef_test_falloc(n);
    double *want = clef_test_dalloc(n);
    gelu_inputs(x, n, &rng);
    clef_test_fill_uniform(dy, n, -2, 2, &rng);
    for (size_t i = 0; i < n; i++)
        want[i] = dy[i] * clef_test_ref_gelu_grad(x[i]);
    clef_scalar_kernels.gelu_bwd(n, x, dy, dx);
    bool ok = clef_test_close_d(dx, want, n, FLT_TRUE_MIN, 2 * CLEF_TEST_EPS);

    clef_test_fill_pattern(pre, n);
    clef_test_fcopy(acc, pre, n);
    clef_scalar_kernels.gelu_bwd(n, x, dy, acc);
    bool ok2 = clef_test_accumulated(pre, dx, acc, n);
    free(x), free(dy), free(dx), free(pre), free(acc), free(want);
    cr_assert(ok, "gelu_bwd values");
    cr_assert(ok2, "gelu_bwd must accumulate");
}

typedef struct gelu_ctx {
    size_t n;
    double *x;
    const double *w;
} gelu_ctx;

static double gelu_objective(void *p)
{
    gelu_ctx *c = p;
    double L = 0.0;
    for (size_t i = 0; i < c->n; i++)
        L += c->w[i] * clef_test_ref_gelu(c->x[i]);
    return L;
}

Test(gelu, backward_fd)
{
    static const int sizes[] = {1, 2, 3, 7, 13, 17, 31, 33, 257};
    uint64_t rng = 23;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t n = sizes[si];
        float *x = clef_test_falloc(n), *w = clef_test_falloc(n);
        float *dx = clef_test_falloc(n);
        double *xd = clef_test_dalloc(n), *wd = clef_test_dalloc(n);
        double *fd = clef_test_dalloc(n);
        clef_test_fill_uniform(x, n, -5, 5, &rng);
        clef_test_fill_uniform(w, n, -1, 1, &rng);
        clef_test_to_double(x, xd, n);
        clef_test_to_double(w, wd, n);
        gelu_ctx c = {n, xd, wd};
        clef_test_fd_grad(xd, n, 1e-6, gelu_objective, &c, fd);
        clef_scalar_kernels.gelu_bwd(n, x, w, dx);
        char what[48];
        snprintf(what, sizeof what, "gelu_bwd n=%zu", n);
        bool ok = clef_test_grad_close(what, dx, fd, n, 4);
        free(x), free(w), free(dx), free(xd), free(wd), free(fd);
        cr_assert(ok, "%s", what);
    }
}

// The limits at ±Inf, where x Φ(x) and x φ(x) are Inf · 0 if written plainly.
Test(gelu, infinities_give_the_limits)
{
    const float x[3] = {INFINITY, -INFINITY, NAN};
    float y[3], dx[3] = {0, 0, 0};
    const float dy[3] = {2.f, 2.f, 1.f};
    clef_scalar_kernels.gelu_fwd(3, x, y);
    clef_scalar_kernels.gelu_bwd(3, x, dy, dx);
    cr_expect(isinf(y[0]) && y[0] > 0, "gelu(+Inf) = %g", y[0]);
    cr_expect(y[1] == 0.f && signbit(y[1]), "gelu(-Inf) = %g, want -0", y[1]);
    cr_expect(isnan(y[2]), "gelu(NaN) = %g", y[2]);
    cr_expect_eq(dx[0], 2.f, "gelu'(+Inf) dy = %g, want dy", dx[0]);
    cr_expect_eq(dx[1], 0.f, "gelu'(-Inf) dy = %g, want 0", dx[1]);
    cr_expect(isnan(dx[2]), "gelu'(NaN) = %g", dx[2]);
}

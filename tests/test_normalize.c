// normalize (forward and backward) of the scalar backend, rows × n over
// {1, 2, 3, 7, 13, 17, 31, 33}², with eps = CLEF_NORMALIZE_EPS and a large
// eps = 0.5 that puts some rows on the x / eps branch.
//   forward:  y and |x| against double, relative (n + 4) FLT_EPSILON; a zero
//             row gives y = 0, |x| = 0.
//   backward: central finite differences in double of L = Σ w ⊙ normalize(x),
//             tolerance 4 (n + 8) FLT_EPSILON · scale, scale = max(max|grad|,
//             max|w| / max(|x|, eps)) (the size of the terms dx subtracts);
//             the zero row's gradient is dy / eps exactly as HEAD.md §7 says;
//             it must accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int shapes[] = {1, 2, 3, 7, 13, 17, 31, 33};
#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

// x (rows, n): rows alternate between norm ≈ 1..2 and norm ≈ 0.1 (below 0.5),
// each drawn at random; with zero_last the last row is 0 (when rows > 1).
static void normalize_inputs(float *x, int rows, int n, int zero_last,
                             uint64_t *rng)
{
    for (int r = 0; r < rows; r++) {
        float *xr = x + (size_t)r * n;
        clef_test_fill_uniform(xr, n, -1, 1, rng);
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += (double)xr[i] * xr[i];
        double want = (r % 2) ? 0.1 : 1.0 + clef_test_rand_unit(rng);
        double f = ss > 0 ? want / sqrt(ss) : 0;
        for (int i = 0; i < n; i++)
            xr[i] = (float)(xr[i] * f);
    }
    if (zero_last && rows > 1)
        clef_test_fill_const(x + (size_t)(rows - 1) * n, n, 0.0f);
}

static bool normalize_forward_case(int rows, int n, float eps, uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    float *x = clef_test_falloc(sz), *y = clef_test_falloc(sz);
    float *nrm = clef_test_falloc(rows);
    double *xd = clef_test_dalloc(sz), *yd = clef_test_dalloc(sz);
    double *nd = clef_test_dalloc(rows);
    normalize_inputs(x, rows, n, 1, rng);
    clef_test_to_double(x, xd, sz);
    for (int r = 0; r < rows; r++)
        nd[r] = clef_test_ref_normalize(n, xd + (size_t)r * n, eps,
                                        yd + (size_t)r * n);
    clef_test_fill_const(y, sz, NAN);
    clef_scalar_kernels.normalize_fwd(rows, n, eps, x, y, nrm);
    bool ok = clef_test_close_d(y, yd, sz, 0, (n + 4) * CLEF_TEST_EPS) &&
              clef_test_close_d(nrm, nd, rows, 0, (n + 4) * CLEF_TEST_EPS);
    free(x), free(y), free(nrm), free(xd), free(yd), free(nd);
    return ok;
}

Test(normalize, forward)
{
    uint64_t rng = 91;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++) {
            int rows = shapes[ri], n = shapes[ni];
            cr_assert(normalize_forward_case(rows, n, CLEF_NORMALIZE_EPS, &rng),
                      "normalize_fwd rows=%d n=%d eps=1e-12", rows, n);
            cr_assert(normalize_forward_case(rows, n, 0.5f, &rng),
                      "normalize_fwd rows=%d n=%d eps=0.5", rows, n);
        }
}

typedef struct normalize_ctx {
    int rows, n;
    double eps;
    double *x, *y;
    const double *w;
} normalize_ctx;

static double normalize_objective(void *p)
{
    normalize_ctx *c = p;
    for (int r = 0; r < c->rows; r++)
        clef_test_ref_normalize(c->n, c->x + (size_t)r * c->n, c->eps,
                                c->y + (size_t)r * c->n);
    return clef_test_dot_d(c->w, c->y, (size_t)c->rows * c->n);
}

static bool normalize_backward_case(int rows, int n, float eps, uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    float *x = clef_test_falloc(sz), *y = clef_test_falloc(sz);
    float *nrm = clef_test_falloc(rows), *w = clef_test_falloc(sz);
    float *dx = clef_test_falloc(sz), *pre = clef_test_falloc(sz);
    float *acc = clef_test_falloc(sz);
    double *xd = clef_test_dalloc(sz), *yd = clef_test_dalloc(sz);
    double *wd = clef_test_dalloc(sz), *fd = clef_test_dalloc(sz);
    normalize_inputs(x, rows, n, 0, rng);
    clef_test_fill_uniform(w, sz, -1, 1, rng);
    clef_test_to_double(x, xd, sz);
    clef_test_to_double(w, wd, sz);

    normalize_ctx c = {rows, n, eps, xd, yd, wd};
    clef_test_fd_grad(xd, sz, 1e-7, normalize_objective, &c, fd);
    clef_scalar_kernels.normalize_fwd(rows, n, eps, x, y, nrm);
    clef_scalar_kernels.normalize_bwd(rows, n, eps, y, nrm, w, dx);
    double mag = 0.0;
    for (int r = 0; r < rows; r++) {
        double den = nrm[r] > eps ? nrm[r] : eps;
        double t = clef_test_max_abs(w + (size_t)r * n, n) / den;
        mag = t > mag ? t : mag;
    }
    char what[64];
    snprintf(what, sizeof what, "normalize_bwd rows=%d n=%d eps=%g", rows, n,
             eps);
    bool ok = clef_test_grad_close_scaled(what, dx, fd, sz, 4.0 * (n + 8), mag);

    clef_test_fill_pattern(pre, sz);
    clef_test_fcopy(acc, pre, sz);
    clef_scalar_kernels.normalize_bwd(rows, n, eps, y, nrm, w, acc);
    bool ok2 = clef_test_accumulated(pre, dx, acc, sz);
    if (!ok2)
        fprintf(stderr, "%s: does not accumulate\n", what);
    free(x), free(y), free(nrm), free(w), free(dx), free(pre), free(acc);
    free(xd), free(yd), free(wd), free(fd);
    return ok && ok2;
}

Test(normalize, backward_fd_and_accumulates)
{
    uint64_t rng = 92;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++) {
            int rows = shapes[ri], n = shapes[ni];
            cr_assert(
                normalize_backward_case(rows, n, CLEF_NORMALIZE_EPS, &rng),
                "normalize_bwd rows=%d n=%d eps=1e-12", rows, n);
            cr_assert(normalize_backward_case(rows, n, 0.5f, &rng),
                      "normalize_bwd rows=%d n=%d eps=0.5", rows, n);
        }
}

// A zero row (|x| = 0 ≤ eps): dx += dy / eps (HEAD.md §7).
Test(normalize, zero_row_backward_is_dy_over_eps)
{
    uint64_t rng = 93;
    int n = 13;
    float x[13] = {0}, y[13], nrm[1], dy[13], dx[13] = {0};
    double want[13];
    clef_test_fill_uniform(dy, n, -1, 1, &rng);
    clef_scalar_kernels.normalize_fwd(1, n, CLEF_NORMALIZE_EPS, x, y, nrm);
    cr_assert(nrm[0] == 0.0f);
    for (int i = 0; i < n; i++) {
        cr_assert(y[i] == 0.0f, "y[%d] = %g", i, y[i]);
        want[i] = (double)dy[i] / (double)CLEF_NORMALIZE_EPS;
    }
    clef_scalar_kernels.normalize_bwd(1, n, CLEF_NORMALIZE_EPS, y, nrm, dy, dx);
    cr_assert(clef_test_close_d(dx, want, n, 0, 2 * CLEF_TEST_EPS));
}

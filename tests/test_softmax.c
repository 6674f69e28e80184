// Row softmax of the scalar backend, rows × n over {1, 2, 3, 7, 13, 17, 31, 33}².
//   forward:  against double, relative (n + 12) FLT_EPSILON per element (n for
//             the float sum, 8 for expf of a rounded x − max with |x − max| ≤ 8,
//             a few roundings); inputs with −INF entries, an all −INF row (must
//             give zeros, no NaN) and large logits (needs max subtraction).
//   backward: central finite differences in double of L = Σ w ⊙ softmax(x),
//             tolerance 4 (n + 8) FLT_EPSILON · scale, scale = max(max|grad|,
//             max y · max|w|) (dx is a difference of such terms), −INF entries
//             get 0;
//             it must accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int shapes[] = {1, 2, 3, 7, 13, 17, 31, 33};
#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

// x (rows, n) ~ U[lo, lo + 8); with ninf, about one entry in four is −INF and
// the last row (when rows > 1) is entirely −INF.
static void softmax_inputs(float *x, int rows, int n, float lo, int ninf,
                           uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    clef_test_fill_uniform(x, sz, lo, lo + 8.0f, rng);
    if (!ninf)
        return;
    for (size_t i = 0; i < sz; i++)
        if (clef_test_rand_int(rng, 0, 3) == 0)
            x[i] = -INFINITY;
    if (rows > 1)
        for (int i = 0; i < n; i++)
            x[(size_t)(rows - 1) * n + i] = -INFINITY;
}

static bool softmax_forward_case(int rows, int n, float lo, int ninf,
                                 uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    float *x = clef_test_falloc(sz), *y = clef_test_falloc(sz);
    double *xd = clef_test_dalloc(sz), *yd = clef_test_dalloc(sz);
    softmax_inputs(x, rows, n, lo, ninf, rng);
    clef_test_to_double(x, xd, sz);
    for (int r = 0; r < rows; r++)
        clef_test_ref_softmax(n, xd + (size_t)r * n, yd + (size_t)r * n);
    clef_test_fill_const(y, sz, NAN); // overwritten
    clef_scalar_kernels.softmax_fwd(rows, n, x, y);
    bool ok = clef_test_close_d(y, yd, sz, 0, (n + 12) * CLEF_TEST_EPS);
    free(x), free(y), free(xd), free(yd);
    return ok;
}

Test(softmax, forward)
{
    uint64_t rng = 41;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++) {
            int rows = shapes[ri], n = shapes[ni];
            cr_assert(softmax_forward_case(rows, n, -4.0f, 0, &rng),
                      "softmax_fwd rows=%d n=%d", rows, n);
            cr_assert(softmax_forward_case(rows, n, 100.0f, 0, &rng),
                      "softmax_fwd rows=%d n=%d logits near 100", rows, n);
            cr_assert(softmax_forward_case(rows, n, -4.0f, 1, &rng),
                      "softmax_fwd rows=%d n=%d with -INF entries", rows, n);
        }
}

Test(softmax, all_neg_inf_row_gives_zeros)
{
    float x[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    float y[5] = {NAN, NAN, NAN, NAN, NAN};
    clef_scalar_kernels.softmax_fwd(1, 5, x, y);
    for (int i = 0; i < 5; i++)
        cr_assert(y[i] == 0.0f, "y[%d] = %g, want 0", i, y[i]);
    float dy[5] = {1, -2, 3, -4, 5}, dx[5] = {0};
    clef_scalar_kernels.softmax_bwd(1, 5, y, dy, dx);
    for (int i = 0; i < 5; i++)
        cr_assert(dx[i] == 0.0f, "dx[%d] = %g, want 0", i, dx[i]);
}

typedef struct softmax_ctx {
    int rows, n;
    double *x, *y;
    const double *w;
} softmax_ctx;

static double softmax_objective(void *p)
{
    softmax_ctx *c = p;
    for (int r = 0; r < c->rows; r++)
        clef_test_ref_softmax(c->n, c->x + (size_t)r * c->n,
                              c->y + (size_t)r * c->n);
    return clef_test_dot_d(c->w, c->y, (size_t)c->rows * c->n);
}

static bool softmax_backward_case(int rows, int n, int ninf, uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    float *x = clef_test_falloc(sz), *y = clef_test_falloc(sz);
    float *w = clef_test_falloc(sz), *dx = clef_test_falloc(sz);
    float *pre = clef_test_falloc(sz), *acc = clef_test_falloc(sz);
    double *xd = clef_test_dalloc(sz), *yd = clef_test_dalloc(sz);
    double *wd = clef_test_dalloc(sz), *fd = clef_test_dalloc(sz);
    softmax_inputs(x, rows, n, -4.0f, ninf, rng);
    clef_test_fill_uniform(w, sz, -1, 1, rng);
    clef_test_to_double(x, xd, sz);
    clef_test_to_double(w, wd, sz);

    softmax_ctx c = {rows, n, xd, yd, wd};
    clef_test_fd_grad(xd, sz, 1e-6, softmax_objective, &c, fd);
    clef_scalar_kernels.softmax_fwd(rows, n, x, y);
    clef_scalar_kernels.softmax_bwd(rows, n, y, w, dx);
    char what[64];
    snprintf(what, sizeof what, "softmax_bwd rows=%d n=%d%s", rows, n,
             ninf ? " -INF" : "");
    // dx_i = y_i (w_i − Σ w y) is a difference of terms of size y_i max|w|
    double mag = clef_test_max_abs(y, sz) * clef_test_max_abs(w, sz);
    bool ok = clef_test_grad_close_scaled(what, dx, fd, sz, 4.0 * (n + 8), mag);

    clef_test_fill_pattern(pre, sz);
    clef_test_fcopy(acc, pre, sz);
    clef_scalar_kernels.softmax_bwd(rows, n, y, w, acc);
    bool ok2 = clef_test_accumulated(pre, dx, acc, sz);
    if (!ok2)
        fprintf(stderr, "%s: does not accumulate\n", what);
    free(x), free(y), free(w), free(dx), free(pre), free(acc);
    free(xd), free(yd), free(wd), free(fd);
    return ok && ok2;
}

Test(softmax, backward_fd_and_accumulates)
{
    uint64_t rng = 42;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++)
            for (int ninf = 0; ninf <= 1; ninf++)
                cr_assert(
                    softmax_backward_case(shapes[ri], shapes[ni], ninf, &rng),
                    "softmax_bwd rows=%d n=%d ninf=%d", shapes[ri], shapes[ni],
                    ninf);
}

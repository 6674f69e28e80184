// bias_add (forward) and colsum (its gradient) of the scalar backend.
//   bias_add: against double, one rounding per element (1 FLT_EPSILON).
//   colsum:   central finite differences in double of L = Σ w ⊙ (y + b) with
//             respect to b, tolerance 2 (rows + 4) FLT_EPSILON · max|grad|;
//             and it must accumulate (+=).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int shapes[] = {1, 2, 3, 7, 13, 17, 31, 33};
#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

Test(bias, add_forward)
{
    uint64_t rng = 11;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++) {
            int rows = shapes[ri], n = shapes[ni];
            size_t sz = (size_t)rows * n;
            float *y = clef_test_falloc(sz), *b = clef_test_falloc(n);
            double *want = clef_test_dalloc(sz);
            clef_test_fill_uniform(y, sz, -3, 3, &rng);
            clef_test_fill_uniform(b, n, -3, 3, &rng);
            for (size_t i = 0; i < sz; i++)
                want[i] = (double)y[i] + b[i % n];
            clef_scalar_kernels.bias_add(rows, n, b, y);
            bool ok = clef_test_close_d(y, want, sz, 0, CLEF_TEST_EPS);
            free(y), free(b), free(want);
            cr_assert(ok, "bias_add rows=%d n=%d", rows, n);
        }
}

// L(b) = Σ w ⊙ (y0 + b broadcast over rows)
typedef struct bias_ctx {
    int rows, n;
    const double *y0, *w;
    double *b;
} bias_ctx;

static double bias_objective(void *p)
{
    bias_ctx *c = p;
    double L = 0.0;
    for (int r = 0; r < c->rows; r++)
        for (int i = 0; i < c->n; i++) {
            size_t o = (size_t)r * c->n + i;
            L += c->w[o] * (c->y0[o] + c->b[i]);
        }
    return L;
}

Test(bias, colsum_fd_and_accumulates)
{
    uint64_t rng = 12;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++) {
            int rows = shapes[ri], n = shapes[ni];
            size_t sz = (size_t)rows * n;
            float *w = clef_test_falloc(sz), *y0 = clef_test_falloc(sz);
            float *b = clef_test_falloc(n), *db = clef_test_falloc(n);
            float *pre = clef_test_falloc(n), *acc = clef_test_falloc(n);
            double *wd = clef_test_dalloc(sz), *y0d = clef_test_dalloc(sz);
            double *bd = clef_test_dalloc(n), *fd = clef_test_dalloc(n);
            clef_test_fill_uniform(w, sz, -1, 1, &rng);
            clef_test_fill_uniform(y0, sz, -1, 1, &rng);
            clef_test_fill_uniform(b, n, -1, 1, &rng);
            clef_test_to_double(w, wd, sz);
            clef_test_to_double(y0, y0d, sz);
            clef_test_to_double(b, bd, n);

            bias_ctx c = {rows, n, y0d, wd, bd};
            clef_test_fd_grad(bd, n, 1e-6, bias_objective, &c, fd);
            clef_scalar_kernels.colsum(rows, n, w, db); // db was zero
            char what[64];
            snprintf(what, sizeof what, "colsum rows=%d n=%d", rows, n);
            bool ok = clef_test_grad_close(what, db, fd, n, 2 * (rows + 4));

            clef_test_fill_pattern(pre, n);
            clef_test_fcopy(acc, pre, n);
            clef_scalar_kernels.colsum(rows, n, w, acc);
            bool ok2 = clef_test_accumulated(pre, db, acc, n);

            free(w), free(y0), free(b), free(db), free(pre), free(acc);
            free(wd), free(y0d), free(bd), free(fd);
            cr_assert(ok, "%s: gradient", what);
            cr_assert(ok2, "%s: must accumulate", what);
        }
}

// span_mean (forward) and span_scatter (its backward) of the scalar backend:
// spans of length 1, the whole range, the last row, overlapping spans and
// random ones, over T = 33 rows of n in {1, 2, 3, 7, 13, 17, 31, 33} columns.
//   span_mean:    against double, per element (len + 2) FLT_EPSILON · mean|x|.
//   span_scatter: central finite differences in double of L = Σ w ⊙ Y,
//                 tolerance 4 (nspan + 4) FLT_EPSILON · max|grad| (a row adds
//                 one term per span covering it); it must accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

#define T 33
#define NFIXED 7
#define NSPAN 12
static const int ncols[] = {1, 2, 3, 7, 13, 17, 31, 33};

// spans (NSPAN, 2): fixed awkward ones, then random non-empty ones
static void make_spans(int *spans, uint64_t *rng)
{
    static const int fixed[NFIXED][2] = {{0, 1},   {T - 1, T}, {0, T},  {5, 12},
                                         {10, 14}, {3, 4},     {16, 33}};
    for (int s = 0; s < NFIXED; s++)
        spans[2 * s] = fixed[s][0], spans[2 * s + 1] = fixed[s][1];
    for (int s = NFIXED; s < NSPAN; s++) {
        int a = clef_test_rand_int(rng, 0, T - 1);
        int b = clef_test_rand_int(rng, a + 1, T);
        spans[2 * s] = a, spans[2 * s + 1] = b;
    }
}

static void span_ref(const int *spans, int n, const double *X, double *Y,
                     double *bound)
{
    for (int s = 0; s < NSPAN; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1], len = t1 - t0;
        for (int c = 0; c < n; c++) {
            double acc = 0.0, mag = 0.0;
            for (int t = t0; t < t1; t++) {
                acc += X[(size_t)t * n + c];
                mag += fabs(X[(size_t)t * n + c]);
            }
            Y[(size_t)s * n + c] = acc / len;
            if (bound)
                bound[(size_t)s * n + c] =
                    (len + 2) * CLEF_TEST_EPS * mag / len;
        }
    }
}

Test(span, mean_forward)
{
    uint64_t rng = 71;
    int spans[2 * NSPAN];
    for (size_t k = 0; k < sizeof(ncols) / sizeof(ncols[0]); k++) {
        int n = ncols[k];
        make_spans(spans, &rng);
        float *X = clef_test_falloc((size_t)T * n);
        float *Y = clef_test_falloc((size_t)NSPAN * n);
        double *Xd = clef_test_dalloc((size_t)T * n);
        double *Yd = clef_test_dalloc((size_t)NSPAN * n);
        double *bound = clef_test_dalloc((size_t)NSPAN * n);
        clef_test_fill_uniform(X, (size_t)T * n, -2, 2, &rng);
        clef_test_to_double(X, Xd, (size_t)T * n);
        span_ref(spans, n, Xd, Yd, bound);
        clef_test_fill_const(Y, (size_t)NSPAN * n, NAN);
        clef_scalar_kernels.span_mean(NSPAN, spans, n, X, Y);
        bool ok = clef_test_within(Y, Yd, bound, (size_t)NSPAN * n);
        free(X), free(Y), free(Xd), free(Yd), free(bound);
        cr_assert(ok, "span_mean n=%d", n);
    }
}

typedef struct span_ctx {
    const int *spans;
    int n;
    double *X, *Y;
    const double *w;
} span_ctx;

static double span_objective(void *p)
{
    span_ctx *c = p;
    span_ref(c->spans, c->n, c->X, c->Y, NULL);
    return clef_test_dot_d(c->w, c->Y, (size_t)NSPAN * c->n);
}

Test(span, scatter_fd_and_accumulates)
{
    uint64_t rng = 72;
    int spans[2 * NSPAN];
    for (size_t k = 0; k < sizeof(ncols) / sizeof(ncols[0]); k++) {
        int n = ncols[k];
        size_t sx = (size_t)T * n, sy = (size_t)NSPAN * n;
        make_spans(spans, &rng);
        float *w = clef_test_falloc(sy), *dX = clef_test_falloc(sx);
        float *pre = clef_test_falloc(sx), *acc = clef_test_falloc(sx);
        double *Xd = clef_test_dalloc(sx), *Yd = clef_test_dalloc(sy);
        double *wd = clef_test_dalloc(sy), *fd = clef_test_dalloc(sx);
        float *X = clef_test_falloc(sx);
        clef_test_fill_uniform(X, sx, -2, 2, &rng);
        clef_test_fill_uniform(w, sy, -1, 1, &rng);
        clef_test_to_double(X, Xd, sx);
        clef_test_to_double(w, wd, sy);

        span_ctx c = {spans, n, Xd, Yd, wd};
        clef_test_fd_grad(Xd, sx, 1e-6, span_objective, &c, fd);
        clef_scalar_kernels.span_scatter(NSPAN, spans, n, w, dX);
        char what[48];
        snprintf(what, sizeof what, "span_scatter n=%d", n);
        bool ok = clef_test_grad_close(what, dX, fd, sx, 4.0 * (NSPAN + 4));

        clef_test_fill_pattern(pre, sx);
        clef_test_fcopy(acc, pre, sx);
        clef_scalar_kernels.span_scatter(NSPAN, spans, n, w, acc);
        // several spans add into one row: allow one rounding per span
        bool ok2 = true;
        for (size_t i = 0; i < sx && ok2; i++) {
            double want = (double)pre[i] + dX[i];
            double tol = (NSPAN + 1) * CLEF_TEST_EPS *
                         (fabs((double)pre[i]) + 2 * clef_test_max_abs(w, sy));
            ok2 = fabs(acc[i] - want) <= tol;
            if (!ok2)
                fprintf(stderr, "[%zu]: %g + %g != %g\n", i, pre[i], dX[i],
                        acc[i]);
        }
        free(w), free(dX), free(pre), free(acc), free(Xd), free(Yd);
        free(wd), free(fd), free(X);
        cr_assert(ok, "%s: gradient", what);
        cr_assert(ok2, "%s: must accumulate", what);
    }
}

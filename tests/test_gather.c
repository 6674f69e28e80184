// gather_rows (forward) and scatter_add_rows (its backward) of the scalar
// backend, with repeated and out-of-order indices, n in
// {1, 2, 3, 7, 13, 17, 31, 33}.
//   gather_rows:      a copy: exact (0 FLT_EPSILON).
//   scatter_add_rows: central finite differences in double of L = Σ w ⊙ Y,
//                     tolerance 4 (nidx + 4) FLT_EPSILON · max|grad| (repeated
//                     indices add up); it must accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

#define NROWS 13 // rows of X
#define NIDX 17  // gathered rows (more than NROWS: repeats are certain)
static const int ncols[] = {1, 2, 3, 7, 13, 17, 31, 33};

static void make_idx(int *idx, uint64_t *rng)
{
    for (int i = 0; i < NIDX; i++)
        idx[i] = clef_test_rand_int(rng, 0, NROWS - 1);
    idx[0] = NROWS - 1, idx[1] = 0, idx[2] = NROWS - 1; // ends, a repeat
}

static void gather_ref(const int *idx, int n, const double *X, double *Y)
{
    for (int i = 0; i < NIDX; i++)
        for (int c = 0; c < n; c++)
            Y[(size_t)i * n + c] = X[(size_t)idx[i] * n + c];
}

Test(gather, rows_forward)
{
    uint64_t rng = 81;
    int idx[NIDX];
    for (size_t k = 0; k < sizeof(ncols) / sizeof(ncols[0]); k++) {
        int n = ncols[k];
        make_idx(idx, &rng);
        float *X = clef_test_falloc((size_t)NROWS * n);
        float *Y = clef_test_falloc((size_t)NIDX * n);
        double *Xd = clef_test_dalloc((size_t)NROWS * n);
        double *Yd = clef_test_dalloc((size_t)NIDX * n);
        clef_test_fill_uniform(X, (size_t)NROWS * n, -2, 2, &rng);
        clef_test_to_double(X, Xd, (size_t)NROWS * n);
        gather_ref(idx, n, Xd, Yd);
        clef_test_fill_const(Y, (size_t)NIDX * n, NAN);
        clef_scalar_kernels.gather_rows(NIDX, idx, n, X, Y);
        bool ok = clef_test_close_d(Y, Yd, (size_t)NIDX * n, 0, 0);
        free(X), free(Y), free(Xd), free(Yd);
        cr_assert(ok, "gather_rows n=%d", n);
    }
}

typedef struct gather_ctx {
    const int *idx;
    int n;
    double *X, *Y;
    const double *w;
} gather_ctx;

static double gather_objective(void *p)
{
    gather_ctx *c = p;
    gather_ref(c->idx, c->n, c->X, c->Y);
    return clef_test_dot_d(c->w, c->Y, (size_t)NIDX * c->n);
}

Test(gather, scatter_add_fd_and_accumulates)
{
    uint64_t rng = 82;
    int idx[NIDX];
    for (size_t k = 0; k < sizeof(ncols) / sizeof(ncols[0]); k++) {
        int n = ncols[k];
        size_t sx = (size_t)NROWS * n, sy = (size_t)NIDX * n;
        make_idx(idx, &rng);
        float *w = clef_test_falloc(sy), *dX = clef_test_falloc(sx);
        float *pre = clef_test_falloc(sx), *acc = clef_test_falloc(sx);
        double *Xd = clef_test_dalloc(sx), *Yd = clef_test_dalloc(sy);
        double *wd = clef_test_dalloc(sy), *fd = clef_test_dalloc(sx);
        clef_test_fill_uniform(w, sy, -1, 1, &rng);
        for (size_t i = 0; i < sx; i++)
            Xd[i] = 0.5 + (double)i / 7;
        clef_test_to_double(w, wd, sy);

        gather_ctx c = {idx, n, Xd, Yd, wd};
        clef_test_fd_grad(Xd, sx, 1e-6, gather_objective, &c, fd);
        clef_scalar_kernels.scatter_add_rows(NIDX, idx, n, w, dX);
        char what[48];
        snprintf(what, sizeof what, "scatter_add_rows n=%d", n);
        bool ok = clef_test_grad_close(what, dX, fd, sx, 4.0 * (NIDX + 4));

        // accumulate: acc = pre + Σ dY in index order, computed here in float
        clef_test_fill_pattern(pre, sx);
        clef_test_fcopy(acc, pre, sx);
        clef_scalar_kernels.scatter_add_rows(NIDX, idx, n, w, acc);
        float *want = clef_test_falloc(sx);
        clef_test_fcopy(want, pre, sx);
        for (int i = 0; i < NIDX; i++)
            for (int col = 0; col < n; col++)
                want[(size_t)idx[i] * n + col] += w[(size_t)i * n + col];
        bool ok2 = clef_test_close(acc, want, sx, 0, 0);
        free(w), free(dX), free(pre), free(acc), free(Xd), free(Yd);
        free(wd), free(fd), free(want);
        cr_assert(ok, "%s: gradient", what);
        cr_assert(ok2, "%s: must accumulate, in index order", what);
    }
}

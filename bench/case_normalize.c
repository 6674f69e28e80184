// The prior's normalize(lex_o): O rows of d floats (n >= 2: a 1-wide
// normalize has a zero backward). Row 1 is scaled below eps to take the
// max(|x|, eps) branch.
#include "case.h"

#include <math.h>
#include <stdio.h>

typedef struct bench_normalize {
    int rows, n;
    float eps;
    float *x, *y, *nrm; // forward (the backward's x is only the source of y,
    float *dy, *dx;     // nrm; they are its inputs)
} bench_normalize;

// Sizes, then x (rows, n) in kind `kind`: the first buffer and fill of both
// directions. Its init array is returned in *xb.
static int normalize_setup_x(clef_bench_case *c, bench_normalize *nz,
                             bench_kind kind, bench_rng *rng, bench_buf **xb)
{
    int rows = nz->rows = c->shape->O,
        n = nz->n = bench_max_int(c->shape->d, 2);
    nz->eps = CLEF_NORMALIZE_EPS;
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", rows, n);
    c->tol = &bench_tol_normalize;
    c->tol_len = n;
    BENCH_ADD(c, nz, x, kind, rows, n, n);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < n; k++)
            BENCH_LIVE(x, r, k) = bench_uniform(rng, -1, 1) *
                                  (r == 1 && rows >= 4 ? 1e-14f : 1.0f);
    *xb = x;
    return 0;
}

static int normalize_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_normalize *nz = st;
    bench_buf *x;
    if (normalize_setup_x(c, nz, BENCH_IN, rng, &x) != 0)
        return -1;
    BENCH_ADD(c, nz, y, BENCH_OUT, nz->rows, nz->n, nz->n);
    BENCH_ADD(c, nz, nrm, BENCH_OUT, 1, nz->rows, nz->rows);
    return 0;
}

static int normalize_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_normalize *nz = st;
    bench_buf *x;
    if (normalize_setup_x(c, nz, BENCH_SCRATCH, rng, &x) != 0)
        return -1;
    int rows = nz->rows, n = nz->n;
    BENCH_ADD(c, nz, y, BENCH_IN, rows, n, n);
    BENCH_ADD(c, nz, nrm, BENCH_IN, 1, rows, rows);
    BENCH_ADD(c, nz, dy, BENCH_IN, rows, n, n);
    BENCH_ADD(c, nz, dx, BENCH_ACC, rows, n, n);
    for (int r = 0; r < rows; r++) {
        double s = 0.0;
        for (int k = 0; k < n; k++)
            s += (double)BENCH_LIVE(x, r, k) * BENCH_LIVE(x, r, k);
        double norm = sqrt(s), div = fmax(norm, nz->eps);
        BENCH_LIVE(nrm, 0, r) = (float)norm;
        for (int k = 0; k < n; k++)
            BENCH_LIVE(y, r, k) = (float)(BENCH_LIVE(x, r, k) / div);
    }
    bench_fill_uniform(dy, rng, -1, 1);
    bench_fill_uniform(dx, rng, -1, 1);
    return 0;
}

static void normalize_fwd_call(const clef_kernels *k, void *st)
{
    bench_normalize *nz = st;
    k->normalize_fwd(nz->rows, nz->n, nz->eps, nz->x, nz->y, nz->nrm);
}

static void normalize_bwd_call(const clef_kernels *k, void *st)
{
    bench_normalize *nz = st;
    k->normalize_bwd(nz->rows, nz->n, nz->eps, nz->y, nz->nrm, nz->dy, nz->dx);
}

const bench_case_def bench_case_normalize_fwd = {
    sizeof(bench_normalize), normalize_fwd_setup, normalize_fwd_call};
const bench_case_def bench_case_normalize_bwd = {
    sizeof(bench_normalize), normalize_bwd_setup, normalize_bwd_call};

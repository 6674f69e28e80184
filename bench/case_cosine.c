// cosine(f_o, n_o) of the scorer: O rows of w floats (n >= 2).
#include "case.h"

#include <math.h>
#include <stdio.h>

typedef struct bench_cosine {
    int rows, n;
    float *a, *b, *ahat, *bhat, *na, *nb, *cos; // forward
    float *dc, *da, *db; // backward (ahat, bhat, na, nb are its inputs)
} bench_cosine;

static void cosine_size(clef_bench_case *c, bench_cosine *cs)
{
    cs->rows = c->shape->O, cs->n = bench_max_int(c->shape->w, 2);
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", cs->rows, cs->n);
    c->tol = &bench_tol_normalize;
    c->tol_len = cs->n;
}

static int cosine_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_cosine *cs = st;
    cosine_size(c, cs);
    int rows = cs->rows, n = cs->n;
    BENCH_ADD(c, cs, a, BENCH_IN, rows, n, n);
    BENCH_ADD(c, cs, b, BENCH_IN, rows, n, n);
    BENCH_ADD(c, cs, ahat, BENCH_OUT, rows, n, n);
    BENCH_ADD(c, cs, bhat, BENCH_OUT, rows, n, n);
    BENCH_ADD(c, cs, na, BENCH_OUT, 1, rows, rows);
    BENCH_ADD(c, cs, nb, BENCH_OUT, 1, rows, rows);
    BENCH_ADD(c, cs, cos, BENCH_OUT, 1, rows, rows);
    bench_fill_uniform(a, rng, -1, 1);
    bench_fill_uniform(b, rng, -1, 1);
    return 0;
}

// A row of unit length (hat) and its norm before scaling (nrm), per row.
static void fill_unit_rows(bench_buf *hat, bench_buf *nrm, bench_rng *rng)
{
    for (int r = 0; r < hat->rows; r++) {
        double s = 0.0;
        for (int k = 0; k < hat->cols; k++) {
            BENCH_LIVE(hat, r, k) = bench_uniform(rng, -1, 1);
            s += (double)BENCH_LIVE(hat, r, k) * BENCH_LIVE(hat, r, k);
        }
        double norm = sqrt(s), div = fmax(norm, CLEF_COSINE_EPS);
        BENCH_LIVE(nrm, 0, r) = (float)norm;
        for (int k = 0; k < hat->cols; k++)
            BENCH_LIVE(hat, r, k) = (float)(BENCH_LIVE(hat, r, k) / div);
    }
}

static int cosine_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_cosine *cs = st;
    cosine_size(c, cs);
    int rows = cs->rows, n = cs->n;
    BENCH_ADD(c, cs, ahat, BENCH_IN, rows, n, n);
    BENCH_ADD(c, cs, bhat, BENCH_IN, rows, n, n);
    BENCH_ADD(c, cs, na, BENCH_IN, 1, rows, rows);
    BENCH_ADD(c, cs, nb, BENCH_IN, 1, rows, rows);
    BENCH_ADD(c, cs, dc, BENCH_IN, 1, rows, rows);
    BENCH_ADD(c, cs, da, BENCH_ACC, rows, n, n);
    BENCH_ADD(c, cs, db, BENCH_ACC, rows, n, n);
    fill_unit_rows(ahat, na, rng);
    fill_unit_rows(bhat, nb, rng);
    bench_fill_uniform(dc, rng, -1, 1);
    bench_fill_uniform(da, rng, -1, 1);
    bench_fill_uniform(db, rng, -1, 1);
    return 0;
}

static void cosine_fwd_call(const clef_kernels *k, void *st)
{
    bench_cosine *cs = st;
    k->cosine_fwd(cs->rows, cs->n, cs->a, cs->b, cs->ahat, cs->bhat, cs->na,
                  cs->nb, cs->cos);
}

static void cosine_bwd_call(const clef_kernels *k, void *st)
{
    bench_cosine *cs = st;
    k->cosine_bwd(cs->rows, cs->n, cs->ahat, cs->bhat, cs->na, cs->nb, cs->dc,
                  cs->da, cs->db);
}

const bench_case_def bench_case_cosine_fwd = {
    sizeof(bench_cosine), cosine_fwd_setup, cosine_fwd_call};
const bench_case_def bench_case_cosine_bwd = {
    sizeof(bench_cosine), cosine_bwd_setup, cosine_bwd_call};

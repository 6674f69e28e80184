// The owner broadcast: each of O options gathers its question's row of w
// floats (Q rows); the scatter-add sums option gradients back per question.
// Indices cover every question, then repeat at random.
#include "case.h"

#include <stdio.h>
#include <string.h>

typedef struct bench_gather {
    int nidx, n, nsrc;
    int *idx;
    float *X, *Y;   // gather_rows
    float *dY, *dX; // scatter_add_rows
} bench_gather;

// Draws the indices; returns the most indices naming one row (the
// scatter-add's reduction), or -1 on OOM.
static int gather_draw(clef_bench_case *c, bench_gather *g, bench_rng *rng)
{
    int nidx = g->nidx = c->shape->O, nsrc = g->nsrc = c->shape->Q;
    g->n = c->shape->w;
    int *idx = g->idx = bench_ints_add(c, (size_t)nidx);
    if (!idx)
        return -1;
    int count[nsrc];
    memset(count, 0, sizeof count);
    for (int i = 0; i < nidx; i++)
        idx[i] = i < nsrc ? i : bench_int_in(rng, 0, nsrc - 1);
    for (int i = nidx - 1; i > 0; i--) { // shuffle
        int j = bench_int_in(rng, 0, i), t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    int deepest = 0;
    for (int i = 0; i < nidx; i++)
        deepest = bench_max_int(deepest, ++count[idx[i]]);
    snprintf(c->dims, sizeof c->dims, "nidx=%d n=%d rows=%d", nidx, g->n, nsrc);
    return deepest;
}

static int gather_rows_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_gather *g = st;
    if (gather_draw(c, g, rng) < 0)
        return -1;
    BENCH_ADD(c, g, X, BENCH_IN, g->nsrc, g->n, g->n);
    BENCH_ADD(c, g, Y, BENCH_OUT, g->nidx, g->n, g->n);
    bench_fill_uniform(X, rng, -1, 1);
    c->tol = &bench_tol_exact;
    return 0;
}

static int scatter_add_rows_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_gather *g = st;
    int deepest = gather_draw(c, g, rng);
    if (deepest < 0)
        return -1;
    BENCH_ADD(c, g, dY, BENCH_IN, g->nidx, g->n, g->n);
    BENCH_ADD(c, g, dX, BENCH_ACC, g->nsrc, g->n, g->n);
    bench_fill_uniform(dY, rng, -1, 1);
    bench_fill_uniform(dX, rng, -1, 1);
    c->tol = &bench_tol_reduction;
    c->tol_len = deepest;
    return 0;
}

static void gather_rows_call(const clef_kernels *k, void *st)
{
    bench_gather *g = st;
    k->gather_rows(g->nidx, g->idx, g->n, g->X, g->Y);
}

static void scatter_add_rows_call(const clef_kernels *k, void *st)
{
    bench_gather *g = st;
    k->scatter_add_rows(g->nidx, g->idx, g->n, g->dY, g->dX);
}

const bench_case_def bench_case_gather_rows = {
    sizeof(bench_gather), gather_rows_setup, gather_rows_call};
const bench_case_def bench_case_scatter_add_rows = {
    sizeof(bench_gather), scatter_add_rows_setup, scatter_add_rows_call};

// bias_add: a key/value projection's bias over the memory, y (T, w) += b (w).
// colsum: its gradient, db (w) += Σ_T dy (T, w).
#include "case.h"

#include <stdio.h>

typedef struct bench_bias {
    int rows, n;
    float *b, *y;   // bias_add
    float *dy, *db; // colsum
} bench_bias;

static void bias_size(clef_bench_case *c, bench_bias *bb)
{
    bb->rows = c->shape->T, bb->n = c->shape->w;
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", bb->rows, bb->n);
}

static int bias_add_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_bias *bb = st;
    bias_size(c, bb);
    int rows = bb->rows, n = bb->n;
    BENCH_ADD(c, bb, b, BENCH_IN, 1, n, n);
    BENCH_ADD(c, bb, y, BENCH_ACC, rows, n, n);
    bench_fill_uniform(b, rng, -1, 1);
    bench_fill_uniform(y, rng, -1, 1);
    c->tol = &bench_tol_elementwise;
    return 0;
}

static int colsum_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_bias *bb = st;
    bias_size(c, bb);
    int rows = bb->rows, n = bb->n;
    BENCH_ADD(c, bb, dy, BENCH_IN, rows, n, n);
    BENCH_ADD(c, bb, db, BENCH_ACC, 1, n, n);
    bench_fill_uniform(dy, rng, -1, 1);
    bench_fill_uniform(db, rng, -1, 1);
    c->tol = &bench_tol_reduction;
    c->tol_len = rows;
    return 0;
}

static void bias_add_call(const clef_kernels *k, void *st)
{
    bench_bias *bb = st;
    k->bias_add(bb->rows, bb->n, bb->b, bb->y);
}

static void colsum_call(const clef_kernels *k, void *st)
{
    bench_bias *bb = st;
    k->colsum(bb->rows, bb->n, bb->dy, bb->db);
}

const bench_case_def bench_case_bias_add = {sizeof(bench_bias), bias_add_setup,
                                            bias_add_call};
const bench_case_def bench_case_colsum = {sizeof(bench_bias), colsum_setup,
                                          colsum_call};

// GELU of the routing feed-forward: n = O·f activations (x in [-5, 5]
// reaches both tails).
#include "case.h"

#include <stdio.h>

typedef struct bench_gelu {
    int n;
    float *x, *y;   // forward
    float *dy, *dx; // backward (x is its input too)
} bench_gelu;

// x, the input of both directions, is the first buffer and the first fill.
static int gelu_setup_x(clef_bench_case *c, bench_gelu *g, bench_rng *rng)
{
    int n = g->n = c->shape->O * c->shape->f;
    snprintf(c->dims, sizeof c->dims, "n=%d", n);
    BENCH_ADD(c, g, x, BENCH_IN, 1, n, n);
    bench_fill_uniform(x, rng, -5, 5);
    c->tol = &bench_tol_gelu;
    return 0;
}

static int gelu_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_gelu *g = st;
    if (gelu_setup_x(c, g, rng) != 0)
        return -1;
    BENCH_ADD(c, g, y, BENCH_OUT, 1, g->n, g->n);
    return 0;
}

static int gelu_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_gelu *g = st;
    if (gelu_setup_x(c, g, rng) != 0)
        return -1;
    BENCH_ADD(c, g, dy, BENCH_IN, 1, g->n, g->n);
    BENCH_ADD(c, g, dx, BENCH_ACC, 1, g->n, g->n);
    bench_fill_uniform(dy, rng, -1, 1);
    bench_fill_uniform(dx, rng, -1, 1);
    return 0;
}

static void gelu_fwd_call(const clef_kernels *k, void *st)
{
    bench_gelu *g = st;
    k->gelu_fwd((size_t)g->n, g->x, g->y);
}

static void gelu_bwd_call(const clef_kernels *k, void *st)
{
    bench_gelu *g = st;
    k->gelu_bwd((size_t)g->n, g->x, g->dy, g->dx);
}

const bench_case_def bench_case_gelu_fwd = {sizeof(bench_gelu), gelu_fwd_setup,
                                            gelu_fwd_call};
const bench_case_def bench_case_gelu_bwd = {sizeof(bench_gelu), gelu_bwd_setup,
                                            gelu_bwd_call};

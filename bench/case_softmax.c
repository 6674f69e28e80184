// Softmax, row and segmented.
//   softmax_fwd/bwd: the attention rows of the routing layers, rows = h·O,
//     n = T (n >= 2: the backward of a 1-wide softmax is identically 0). The
//     forward input has -INF entries (padded keys) that must give exactly 0.
//   softmax_seg_fwd/bwd: the option-summary softmax, one segment per
//     question (nseg = Q) over max(O, 2Q) options, segment lengths >= 1
//     drawn at random.
#include "case.h"

#include <math.h>
#include <stdio.h>

typedef struct bench_softmax {
    int rows, n;
    float *x, *y;   // forward
    float *dy, *dx; // backward (y is its input)
} bench_softmax;

static void softmax_size(clef_bench_case *c, bench_softmax *sm)
{
    sm->rows = c->shape->h * c->shape->O;
    sm->n = bench_max_int(c->shape->T, 2);
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", sm->rows, sm->n);
    c->tol = &bench_tol_softmax;
    c->tol_len = sm->n;
}

static int softmax_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_softmax *sm = st;
    softmax_size(c, sm);
    int rows = sm->rows, n = sm->n;
    BENCH_ADD(c, sm, x, BENCH_IN, rows, n, n);
    BENCH_ADD(c, sm, y, BENCH_OUT, rows, n, n);
    bench_fill_uniform(x, rng, -8, 8);
    for (int r = 0; r < rows; r++)
        for (int k = 1; k < n && n >= 4; k++)
            if (bench_int_in(rng, 0, 15) == 0)
                BENCH_LIVE(x, r, k) = -INFINITY;
    return 0;
}

static int softmax_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_softmax *sm = st;
    softmax_size(c, sm);
    int rows = sm->rows, n = sm->n;
    BENCH_ADD(c, sm, y, BENCH_IN, rows, n, n);
    BENCH_ADD(c, sm, dy, BENCH_IN, rows, n, n);
    BENCH_ADD(c, sm, dx, BENCH_ACC, rows, n, n);
    for (int r = 0; r < rows; r++) {
        float *row = &BENCH_LIVE(y, r, 0);
        for (int k = 0; k < n; k++)
            row[k] = bench_uniform(rng, -4, 4);
        bench_softmax_ref(n, row, row);
    }
    bench_fill_uniform(dy, rng, -1, 1);
    bench_fill_uniform(dx, rng, -1, 1);
    return 0;
}

static void softmax_fwd_call(const clef_kernels *k, void *st)
{
    bench_softmax *sm = st;
    k->softmax_fwd(sm->rows, sm->n, sm->x, sm->y);
}

static void softmax_bwd_call(const clef_kernels *k, void *st)
{
    bench_softmax *sm = st;
    k->softmax_bwd(sm->rows, sm->n, sm->y, sm->dy, sm->dx);
}

const bench_case_def bench_case_softmax_fwd = {
    sizeof(bench_softmax), softmax_fwd_setup, softmax_fwd_call};
const bench_case_def bench_case_softmax_bwd = {
    sizeof(bench_softmax), softmax_bwd_setup, softmax_bwd_call};

// ---- segmented ----
typedef struct bench_softmax_seg {
    int nseg, n;
    int *off; // nseg + 1 segment offsets
    float *x, *y, *dy, *dx;
} bench_softmax_seg;

// Draws the segments (lengths into len[nseg]).
static int softmax_seg_size(clef_bench_case *c, bench_softmax_seg *sg, int *len,
                            bench_rng *rng)
{
    int nseg = sg->nseg, total = sg->n;
    int *off = sg->off = bench_ints_add(c, (size_t)nseg + 1);
    if (!off)
        return -1;
    for (int s = 0; s < nseg; s++)
        len[s] = 1;
    for (int i = nseg; i < total; i++)
        len[bench_int_in(rng, 0, nseg - 1)]++;
    int longest = 0;
    off[0] = 0;
    for (int s = 0; s < nseg; s++) {
        off[s + 1] = off[s] + len[s];
        longest = bench_max_int(longest, len[s]);
    }
    snprintf(c->dims, sizeof c->dims, "nseg=%d n=%d longest=%d", nseg, total,
             longest);
    c->tol = &bench_tol_softmax;
    c->tol_len = longest;
    return 0;
}

static int softmax_seg_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_softmax_seg *sg = st;
    sg->nseg = c->shape->Q;
    int total = sg->n = bench_max_int(c->shape->O, 2 * sg->nseg);
    int len[sg->nseg];
    if (softmax_seg_size(c, sg, len, rng) != 0)
        return -1;
    BENCH_ADD(c, sg, x, BENCH_IN, 1, total, total);
    BENCH_ADD(c, sg, y, BENCH_OUT, 1, total, total);
    bench_fill_uniform(x, rng, -8, 8);
    return 0;
}

static int softmax_seg_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_softmax_seg *sg = st;
    sg->nseg = c->shape->Q;
    int total = sg->n = bench_max_int(c->shape->O, 2 * sg->nseg);
    int len[sg->nseg];
    if (softmax_seg_size(c, sg, len, rng) != 0)
        return -1;
    BENCH_ADD(c, sg, y, BENCH_IN, 1, total, total);
    BENCH_ADD(c, sg, dy, BENCH_IN, 1, total, total);
    BENCH_ADD(c, sg, dx, BENCH_ACC, 1, total, total);
    for (int s = 0; s < sg->nseg; s++) {
        float *seg = &BENCH_LIVE(y, 0, sg->off[s]);
        for (int k = 0; k < len[s]; k++)
            seg[k] = bench_uniform(rng, -4, 4);
        bench_softmax_ref(len[s], seg, seg);
    }
    bench_fill_uniform(dy, rng, -1, 1);
    bench_fill_uniform(dx, rng, -1, 1);
    return 0;
}

static void softmax_seg_fwd_call(const clef_kernels *k, void *st)
{
    bench_softmax_seg *sg = st;
    k->softmax_seg_fwd(sg->nseg, sg->off, sg->x, sg->y);
}

static void softmax_seg_bwd_call(const clef_kernels *k, void *st)
{
    bench_softmax_seg *sg = st;
    k->softmax_seg_bwd(sg->nseg, sg->off, sg->y, sg->dy, sg->dx);
}

const bench_case_def bench_case_softmax_seg_fwd = {
    sizeof(bench_softmax_seg), softmax_seg_fwd_setup, softmax_seg_fwd_call};
const bench_case_def bench_case_softmax_seg_bwd = {
    sizeof(bench_softmax_seg), softmax_seg_bwd_setup, softmax_seg_bwd_call};

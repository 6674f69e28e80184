// Option-context span means: O spans over T rows of d floats, each span at
// least T/O rows long so the spans cover the sequence. span_scatter is the
// backward: dX[t] += dY[s] / len(s) for t in span s.
#include "case.h"

#include <stdio.h>
#include <string.h>

typedef struct bench_span {
    int nspan, n, T;
    int *spans;     // [start, end) per span
    float *X, *Y;   // span_mean
    float *dY, *dX; // span_scatter
} bench_span;

// Draws the spans; *longest is the longest span, *deepest the most spans
// covering one row (the reductions of mean and scatter).
static int span_draw(clef_bench_case *c, bench_span *sp, bench_rng *rng,
                     int *longest, int *deepest)
{
    int T = sp->T = c->shape->T, nspan = sp->nspan = c->shape->O;
    sp->n = c->shape->d;
    int *spans = sp->spans = bench_ints_add(c, 2 * (size_t)nspan);
    if (!spans)
        return -1;
    int lo = bench_max_int(1, T / nspan), hi = bench_max_int(1, 2 * T / nspan);
    int cover[T];
    memset(cover, 0, sizeof cover);
    *longest = 0;
    for (int s = 0; s < nspan; s++) {
        int start = (int)((long)s * T / nspan);
        int end = start + bench_int_in(rng, lo, hi);
        end = end > T ? T : end;
        spans[2 * s] = start, spans[2 * s + 1] = end;
        *longest = bench_max_int(*longest, end - start);
        for (int t = start; t < end; t++)
            cover[t]++;
    }
    *deepest = 0;
    for (int t = 0; t < T; t++)
        *deepest = bench_max_int(*deepest, cover[t]);
    snprintf(c->dims, sizeof c->dims, "nspan=%d n=%d T=%d longest=%d", nspan,
             sp->n, T, *longest);
    c->tol = &bench_tol_reduction;
    return 0;
}

static int span_mean_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_span *sp = st;
    int longest, deepest;
    if (span_draw(c, sp, rng, &longest, &deepest) != 0)
        return -1;
    BENCH_ADD(c, sp, X, BENCH_IN, sp->T, sp->n, sp->n);
    BENCH_ADD(c, sp, Y, BENCH_OUT, sp->nspan, sp->n, sp->n);
    bench_fill_uniform(X, rng, -1, 1);
    c->tol_len = longest;
    return 0;
}

static int span_scatter_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_span *sp = st;
    int longest, deepest;
    if (span_draw(c, sp, rng, &longest, &deepest) != 0)
        return -1;
    BENCH_ADD(c, sp, dY, BENCH_IN, sp->nspan, sp->n, sp->n);
    BENCH_ADD(c, sp, dX, BENCH_ACC, sp->T, sp->n, sp->n);
    bench_fill_uniform(dY, rng, -1, 1);
    bench_fill_uniform(dX, rng, -1, 1);
    c->tol_len = deepest;
    return 0;
}

static void span_mean_call(const clef_kernels *k, void *st)
{
    bench_span *sp = st;
    k->span_mean(sp->nspan, sp->spans, sp->n, sp->X, sp->Y);
}

static void span_scatter_call(const clef_kernels *k, void *st)
{
    bench_span *sp = st;
    k->span_scatter(sp->nspan, sp->spans, sp->n, sp->dY, sp->dX);
}

const bench_case_def bench_case_span_mean = {sizeof(bench_span),
                                             span_mean_setup, span_mean_call};
const bench_case_def bench_case_span_scatter = {
    sizeof(bench_span), span_scatter_setup, span_scatter_call};

// Fills shared by the bench cases (case.h). Inputs are filled so results do
// not cancel: small nonzero integers for GEMM, uniform values in each op's
// valid domain elsewhere, all from the case's seeded rng.
#include "case.h"

#include <math.h>

void bench_fill_uniform(bench_buf *b, bench_rng *rng, float lo, float hi)
{
    for (int r = 0; r < b->rows; r++)
        for (int k = 0; k < b->cols; k++)
            BENCH_LIVE(b, r, k) = bench_uniform(rng, lo, hi);
}

void bench_fill_int(bench_buf *b, bench_rng *rng, int m, int nonzero)
{
    for (int r = 0; r < b->rows; r++)
        for (int k = 0; k < b->cols; k++) {
            int v = bench_int_in(rng, nonzero ? 1 : 0, m);
            if (bench_rng_next(rng) & 1)
                v = -v;
            BENCH_LIVE(b, r, k) = (float)v;
        }
}

void bench_softmax_ref(int n, const float *x, float *y)
{
    double mx = x[0], s = 0.0;
    for (int i = 1; i < n; i++)
        mx = fmax(mx, x[i]);
    for (int i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    for (int i = 0; i < n; i++)
        y[i] = (float)(exp((double)x[i] - mx) / s);
}

int bench_max_int(int a, int b)
{
    return a > b ? a : b;
}

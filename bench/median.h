// The median of a bench's samples, shared by clef-bench's harness, its
// handoff benchmark and isa-bench.
#ifndef CLEF_BENCH_MEDIAN_H
#define CLEF_BENCH_MEDIAN_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The median of v[0..n) (n ≥ 1; the mean of the middle two when n is even).
// Sorts v in place, ascending: v[0] is then the minimum.
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif

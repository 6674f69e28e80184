// Checked, zeroed allocation for tests.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void *zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "clef tests: out of memory (%zu x %zu bytes)\n", n,
                size);
        abort();
    }
    return p;
}

float *clef_test_falloc(size_t n)
{
    return zalloc(n, sizeof(float));
}
double *clef_test_dalloc(size_t n)
{
    return zalloc(n, sizeof(double));
}
int *clef_test_ialloc(size_t n)
{
    return zalloc(n, sizeof(int));
}

void clef_test_to_double(const float *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
}

void clef_test_fcopy(float *y, const float *x, size_t n)
{
    if (n)
        memcpy(y, x, n * sizeof(float));
}

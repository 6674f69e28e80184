// Row gather and its backward (scatter-add), scalar reference.
#include <string.h>

#include "scalar.h"

// X (·, n) -> Y (nidx, n): Y[i] = X[idx[i]]
void clef_f32_gather_rows__scalar(int nidx, const int *idx, int n,
                                  const float *X, float *Y)
{
    for (int i = 0; i < nidx; i++)
        memcpy(Y + (size_t)i * n, X + (size_t)idx[i] * n,
               (size_t)n * sizeof(float));
}

// dY (nidx, n) -> dX (·, n): dX[idx[i]] += dY[i], in increasing i (repeated
// indices add up in that order).
void clef_f32_scatter_add_rows__scalar(int nidx, const int *idx, int n,
                                       const float *dY, float *dX)
{
    for (int i = 0; i < nidx; i++) {
        const float *g = dY + (size_t)i * n; // (n)
        float *d = dX + (size_t)idx[i] * n;  // (n)
        for (int c = 0; c < n; c++)
            d[c] += g[c];
    }
}

// Row softmax, scalar reference.
#include <math.h>

#include "scalar.h"

// x (rows, n) -> y (rows, n) = exp(x − max) / Σ exp(x − max), per row.
// -INF entries give exactly 0; a row that is entirely -INF (or n == 0 nothing)
// gives a row of zeros, never NaN.
void clef_f32_softmax_fwd__scalar(int rows, int n, const float *x, float *y)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n; // (n)
        float *yr = y + (size_t)r * n;       // (n)

        float mx = -INFINITY;
        for (int i = 0; i < n; i++)
            mx = xr[i] > mx ? xr[i] : mx;
        if (mx == -INFINITY) {
            for (int i = 0; i < n; i++)
                yr[i] = 0.0f;
            continue;
        }
        float sum = 0.0f;
        for (int i = 0; i < n; i++) {
            yr[i] = expf(xr[i] - mx);
            sum += yr[i];
        }
        for (int i = 0; i < n; i++)
            yr[i] = yr[i] / sum;
    }
}

// dx (rows, n) += y ⊙ (dy − Σ dy ⊙ y), per row.
void clef_f32_softmax_bwd__scalar(int rows, int n, const float *y,
                                  const float *dy, float *dx)
{
    for (int r = 0; r < rows; r++) {
        const float *yr = y + (size_t)r * n;
        const float *gr = dy + (size_t)r * n;
        float *dr = dx + (size_t)r * n;

        float dot = 0.0f;
        for (int i = 0; i < n; i++)
            dot += gr[i] * yr[i];
        for (int i = 0; i < n; i++)
            dr[i] += yr[i] * (gr[i] - dot);
    }
}

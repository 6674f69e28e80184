// Row gather and its backward (scatter-add), NEON.
#include "neon.h"
#include "vec.h"

// X (·, n) -> Y (nidx, n): Y[i] = X[idx[i]]
void clef_f32_gather_rows__neon(int nidx, const int *idx, int n, const float *X,
                                float *Y)
{
    for (int i = 0; i < nidx; i++) {
        const float *x = X + (size_t)idx[i] * n; // (n)
        float *y = Y + (size_t)i * n;            // (n)
        int c = 0;
        for (; c + 8 <= n; c += 8) {
            vst1q_f32(y + c, vld1q_f32(x + c));
            vst1q_f32(y + c + 4, vld1q_f32(x + c + 4));
        }
        for (; c + 4 <= n; c += 4)
            vst1q_f32(y + c, vld1q_f32(x + c));
        for (; c < n; c++)
            y[c] = x[c];
    }
}

// dY (nidx, n) -> dX (·, n): dX[idx[i]] += dY[i], in increasing i (repeated
// indices add up in that order).
void clef_f32_scatter_add_rows__neon(int nidx, const int *idx, int n,
                                     const float *dY, float *dX)
{
    for (int i = 0; i < nidx; i++) {
        const float *g = dY + (size_t)i * n; // (n)
        float *d = dX + (size_t)idx[i] * n;  // (n)
        int c = 0;
        for (; c + 4 <= n; c += 4)
            vst1q_f32(d + c, vaddq_f32(vld1q_f32(d + c), vld1q_f32(g + c)));
        for (; c < n; c++)
            d[c] += g[c];
    }
}

// Span mean and its scatter (HEAD.md §5 step 2, Appendix A 1-2), scalar
// reference. Span s covers rows [spans[2s], spans[2s+1]) of X; spans are
// non-empty (HEAD.md §3). An empty span gives a zero row and no gradient.
#include "scalar.h"

// X (T, n) -> Y (nspan, n): Y[s] = (Σ_{t in s} X[t]) / len(s), the sum in
// float over increasing t.
void clef_f32_span_mean__scalar(int nspan, const int *spans, int n,
                                const float *X, float *Y)
{
    for (int s = 0; s < nspan; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1];
        float *y = Y + (size_t)s * n; // (n)
        for (int c = 0; c < n; c++) {
            if (t1 <= t0) {
                y[c] = 0.0f;
                continue;
            }
            float acc = 0.0f;
            for (int t = t0; t < t1; t++)
                acc += X[(size_t)t * n + c];
            y[c] = acc / (float)(t1 - t0);
        }
    }
}

// dY (nspan, n) -> dX (T, n): dX[t] += dY[s] / len(s) for t in span s,
// spans in increasing s.
void clef_f32_span_scatter__scalar(int nspan, const int *spans, int n,
                                   const float *dY, float *dX)
{
    for (int s = 0; s < nspan; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1];
        if (t1 <= t0)
            continue;
        const float *g = dY + (size_t)s * n; // (n)
        float len = (float)(t1 - t0);
        for (int t = t0; t < t1; t++) {
            float *d = dX + (size_t)t * n; // (n)
            for (int c = 0; c < n; c++)
                d[c] += g[c] / len;
        }
    }
}

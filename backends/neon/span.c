// Span mean and its scatter, NEON. Span s covers rows [spans[2s],
// spans[2s+1]) of X; an empty span gives a zero row and no gradient.
#include "neon.h"
#include "vec.h"

// X (T, n) -> Y (nspan, n): Y[s] = (Σ_{t in s} X[t]) / len(s). Vectorised
// across columns; each column sums over increasing t (the reference's order).
void clef_f32_span_mean__neon(int nspan, const int *spans, int n,
                              const float *X, float *Y)
{
    for (int s = 0; s < nspan; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1];
        float *y = Y + (size_t)s * n; // (n)
        if (t1 <= t0) {
            for (int c = 0; c < n; c++)
                y[c] = 0.0f;
            continue;
        }
        float len = (float)(t1 - t0);
        vf vlen = v_set1(len);
        int c = 0;
        for (; c + 8 <= n; c += 8) {
            vf a0 = v_zero(), a1 = v_zero();
            for (int t = t0; t < t1; t++) {
                const float *x = X + (size_t)t * n + c;
                a0 = vaddq_f32(a0, vld1q_f32(x));
                a1 = vaddq_f32(a1, vld1q_f32(x + 4));
            }
            vst1q_f32(y + c, vdivq_f32(a0, vlen));
            vst1q_f32(y + c + 4, vdivq_f32(a1, vlen));
        }
        for (; c + 4 <= n; c += 4) {
            vf a = v_zero();
            for (int t = t0; t < t1; t++)
                a = vaddq_f32(a, vld1q_f32(X + (size_t)t * n + c));
            vst1q_f32(y + c, vdivq_f32(a, vlen));
        }
        for (; c < n; c++) {
            float a = 0.0f;
            for (int t = t0; t < t1; t++)
                a += X[(size_t)t * n + c];
            y[c] = a / len;
        }
    }
}

// dY (nspan, n) -> dX (T, n): dX[t] += dY[s] / len(s) for t in span s,
// spans in increasing s.
void clef_f32_span_scatter__neon(int nspan, const int *spans, int n,
                                 const float *dY, float *dX)
{
    for (int s = 0; s < nspan; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1];
        if (t1 <= t0)
            continue;
        const float *g = dY + (size_t)s * n; // (n)
        float len = (float)(t1 - t0);
        vf vlen = v_set1(len);
        for (int t = t0; t < t1; t++) {
            float *d = dX + (size_t)t * n; // (n)
            int c = 0;
            for (; c + 4 <= n; c += 4)
                vst1q_f32(d + c, vaddq_f32(vld1q_f32(d + c),
                                           vdivq_f32(vld1q_f32(g + c), vlen)));
            for (; c < n; c++)
                d[c] += g[c] / len;
        }
    }
}

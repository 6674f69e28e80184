// LayerNorm over the last axis (HEAD.md §4, Appendix A), scalar reference.
#include <math.h>

#include "scalar.h"

// x (rows, n) -> y (rows, n) = gamma ⊙ xhat + beta,
// xhat (rows, n) = (x − μ) · rstd, rstd (rows) = 1/√(σ² + CLEF_LN_EPS),
// μ and the biased variance σ² accumulated in float over the row.
void clef_f32_layernorm_fwd__scalar(int rows, int n, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y, float *xhat, float *rstd)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n; // (n)
        float *yr = y + (size_t)r * n;       // (n)
        float *hr = xhat + (size_t)r * n;    // (n)

        float sum = 0.0f;
        for (int i = 0; i < n; i++)
            sum += xr[i];
        float mean = sum / (float)n;

        float ss = 0.0f;
        for (int i = 0; i < n; i++) {
            float d = xr[i] - mean;
            ss += d * d;
        }
        float var = ss / (float)n;
        float rs = 1.0f / sqrtf(var + CLEF_LN_EPS);

        for (int i = 0; i < n; i++) {
            hr[i] = (xr[i] - mean) * rs;
            yr[i] = gamma[i] * hr[i] + beta[i];
        }
        rstd[r] = rs;
    }
}

// dxh = dy ⊙ gamma;
// dx (rows, n) += rstd (dxh − mean(dxh) − xhat · mean(dxh ⊙ xhat)) unless NULL;
// dgamma (n) += Σ_rows dy ⊙ xhat; dbeta (n) += Σ_rows dy (each column sums
// in float from zero over increasing rows, then adds once).
void clef_f32_layernorm_bwd__scalar(int rows, int n, const float *dy,
                                    const float *xhat, const float *rstd,
                                    const float *gamma, float *dx,
                                    float *dgamma, float *dbeta)
{
    if (dx) {
        for (int r = 0; r < rows; r++) {
            const float *gr = dy + (size_t)r * n;   // (n)
            const float *hr = xhat + (size_t)r * n; // (n)
            float *dr = dx + (size_t)r * n;         // (n)

            float s1 = 0.0f, s2 = 0.0f;
            for (int i = 0; i < n; i++) {
                float dxh = gr[i] * gamma[i];
                s1 += dxh;
                s2 += dxh * hr[i];
            }
            float mean1 = s1 / (float)n;
            float mean2 = s2 / (float)n;
            for (int i = 0; i < n; i++) {
                float dxh = gr[i] * gamma[i];
                dr[i] += rstd[r] * (dxh - mean1 - hr[i] * mean2);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        float sg = 0.0f, sb = 0.0f;
        for (int r = 0; r < rows; r++) {
            float g = dy[(size_t)r * n + i];
            sg += g * xhat[(size_t)r * n + i];
            sb += g;
        }
        dgamma[i] += sg;
        dbeta[i] += sb;
    }
}

// LayerNorm over the last axis (HEAD.md §4), NEON.
#include <math.h>

#include "neon.h"
#include "vec.h"

// Σ (x − mean)² over n floats (4 vector accumulators, fixed order).
static float sq_dev_sum(int n, const float *x, float mean)
{
    vf mu = v_set1(mean);
    vf s0 = v_zero(), s1 = v_zero();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        vf d0 = vsubq_f32(vld1q_f32(x + i), mu);
        vf d1 = vsubq_f32(vld1q_f32(x + i + 4), mu);
        s0 = vfmaq_f32(s0, d0, d0);
        s1 = vfmaq_f32(s1, d1, d1);
    }
    for (; i + 4 <= n; i += 4) {
        vf d = vsubq_f32(vld1q_f32(x + i), mu);
        s0 = vfmaq_f32(s0, d, d);
    }
    if (i < n) {
        vf d = vsubq_f32(v_loadn_fill(x + i, n - i, mean), mu); // pad lanes 0
        s1 = vfmaq_f32(s1, d, d);
    }
    return v_hsum(vaddq_f32(s0, s1));
}

// x (rows,n) -> y (rows,n) = gamma ⊙ xhat + beta, xhat (rows,n), rstd (rows)
void clef_f32_layernorm_fwd__neon(int rows, int n, const float *x,
                                  const float *gamma, const float *beta,
                                  float *y, float *xhat, float *rstd)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n; // (n)
        float *yr = y + (size_t)r * n;       // (n)
        float *hr = xhat + (size_t)r * n;    // (n)

        float mean = v_sum(n, xr) / (float)n;
        float var = sq_dev_sum(n, xr, mean) / (float)n;
        float rs = 1.0f / sqrtf(var + CLEF_LN_EPS);

        vf mu = v_set1(mean), vr = v_set1(rs);
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            vf h = vmulq_f32(vsubq_f32(vld1q_f32(xr + i), mu), vr);
            vst1q_f32(hr + i, h);
            vst1q_f32(yr + i,
                      vfmaq_f32(vld1q_f32(beta + i), vld1q_f32(gamma + i), h));
        }
        for (; i < n; i++) {
            hr[i] = (xr[i] - mean) * rs;
            yr[i] = gamma[i] * hr[i] + beta[i];
        }
        rstd[r] = rs;
    }
}

// dx (rows,n) += rstd (dxh − mean(dxh) − xhat·mean(dxh⊙xhat)), dxh = dy⊙gamma
// (dx may be NULL); dgamma (n) += Σ_rows dy⊙xhat; dbeta (n) += Σ_rows dy.
void clef_f32_layernorm_bwd__neon(int rows, int n, const float *dy,
                                  const float *xhat, const float *rstd,
                                  const float *gamma, float *dx, float *dgamma,
                                  float *dbeta)
{
    if (dx) {
        for (int r = 0; r < rows; r++) {
            const float *gr = dy + (size_t)r * n;   // (n)
            const float *hr = xhat + (size_t)r * n; // (n)
            float *dr = dx + (size_t)r * n;         // (n)

            vf s1 = v_zero(), s2 = v_zero();
            int i = 0;
            for (; i + 4 <= n; i += 4) {
                vf dxh = vmulq_f32(vld1q_f32(gr + i), vld1q_f32(gamma + i));
                s1 = vaddq_f32(s1, dxh);
                s2 = vfmaq_f32(s2, dxh, vld1q_f32(hr + i));
            }
            if (i < n) {
                int t = n - i;
                vf dxh = vmulq_f32(v_loadn(gr + i, t), v_loadn(gamma + i, t));
                s1 = vaddq_f32(s1, dxh);
                s2 = vfmaq_f32(s2, dxh, v_loadn(hr + i, t));
            }
            float mean1 = v_hsum(s1) / (float)n;
            float mean2 = v_hsum(s2) / (float)n;
            vf m1 = v_set1(mean1), m2 = v_set1(mean2), rs = v_set1(rstd[r]);
            for (i = 0; i + 4 <= n; i += 4) {
                vf dxh = vmulq_f32(vld1q_f32(gr + i), vld1q_f32(gamma + i));
                vf t = vfmsq_f32(vsubq_f32(dxh, m1), vld1q_f32(hr + i), m2);
                vst1q_f32(dr + i, vfmaq_f32(vld1q_f32(dr + i), rs, t));
            }
            for (; i < n; i++) {
                float dxh = gr[i] * gamma[i];
                dr[i] += rstd[r] * (dxh - mean1 - hr[i] * mean2);
            }
        }
    }
    // column sums: vectorised across columns, rows in increasing order
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        vf sg0 = v_zero(), sg1 = v_zero(), sb0 = v_zero(), sb1 = v_zero();
        for (int r = 0; r < rows; r++) {
            size_t o = (size_t)r * n + c;
            vf g0 = vld1q_f32(dy + o), g1 = vld1q_f32(dy + o + 4);
            sg0 = vfmaq_f32(sg0, g0, vld1q_f32(xhat + o));
            sg1 = vfmaq_f32(sg1, g1, vld1q_f32(xhat + o + 4));
            sb0 = vaddq_f32(sb0, g0);
            sb1 = vaddq_f32(sb1, g1);
        }
        vst1q_f32(dgamma + c, vaddq_f32(vld1q_f32(dgamma + c), sg0));
        vst1q_f32(dgamma + c + 4, vaddq_f32(vld1q_f32(dgamma + c + 4), sg1));
        vst1q_f32(dbeta + c, vaddq_f32(vld1q_f32(dbeta + c), sb0));
        vst1q_f32(dbeta + c + 4, vaddq_f32(vld1q_f32(dbeta + c + 4), sb1));
    }
    for (; c + 4 <= n; c += 4) {
        vf sg = v_zero(), sb = v_zero();
        for (int r = 0; r < rows; r++) {
            size_t o = (size_t)r * n + c;
            vf g = vld1q_f32(dy + o);
            sg = vfmaq_f32(sg, g, vld1q_f32(xhat + o));
            sb = vaddq_f32(sb, g);
        }
        vst1q_f32(dgamma + c, vaddq_f32(vld1q_f32(dgamma + c), sg));
        vst1q_f32(dbeta + c, vaddq_f32(vld1q_f32(dbeta + c), sb));
    }
    for (; c < n; c++) {
        float sg = 0.0f, sb = 0.0f;
        for (int r = 0; r < rows; r++) {
            float g = dy[(size_t)r * n + c];
            sg += g * xhat[(size_t)r * n + c];
            sb += g;
        }
        dgamma[c] += sg;
        dbeta[c] += sb;
    }
}

// Grouped loss (HEAD.md §6), NEON; formulas and conventions as in
// backends/scalar/loss.c. Per question: softmax over its n options, the
// cross-entropy, Brier and Σ p(p − y) sums, the gradient, and for score
// questions the ordinal term; four options per vector, scalar tails. The
// question's share of L is combined in double.
#include <math.h>

#include "neon.h"
#include "vec.h"

// Ordinal weight of option i: Σ_j |i−j| y_j over n options.
static float ordinal_weight(int n, int i, const float *y)
{
    vf vi = v_set1((float)i), acc = v_zero();
    float jv[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    vf vj = vld1q_f32(jv), four = v_set1(4.0f);
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        acc = vfmaq_f32(acc, vabdq_f32(vi, vj), vld1q_f32(y + j));
        vj = vaddq_f32(vj, four);
    }
    float s = v_hsum(acc);
    for (; j < n; j++)
        s += (float)(i > j ? i - j : j - i) * y[j];
    return s;
}

// p (n) = softmax(z); returns lse = log Σ exp(z − max), *mx_out = max.
static float softmax_lse(int n, const float *z, float *p, float *mx_out)
{
    float mx = z[0];
    for (int i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    vf vm = v_set1(mx), s = v_zero();
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        vf e = v_exp(vsubq_f32(vld1q_f32(z + i), vm));
        vst1q_f32(p + i, e);
        s = vaddq_f32(s, e);
    }
    float sum = v_hsum(s);
    for (; i < n; i++) {
        vf e = v_exp(v_set1(z[i] - mx));
        p[i] = vgetq_lane_f32(e, 0);
        sum += p[i];
    }
    vf vs = v_set1(sum);
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(p + i, vdivq_f32(vld1q_f32(p + i), vs));
    for (; i < n; i++)
        p[i] = p[i] / sum;
    *mx_out = mx;
    return logf(sum);
}

// One question: z, y (n) -> p, dz (n); returns its share of L.
static double loss_question(int n, int score, const float *z, const float *y,
                            const clef_loss_args *a, float *p, float *dz)
{
    if (n == 1) {
        p[0] = 1.0f;
        dz[0] = 0.0f;
        return 0.0;
    }
    float mx;
    float lse = softmax_lse(n, z, p, &mx);

    // cross-entropy against y' = (1−ε)y + ε/n, Brier Σ (p − y)², Σ p (p − y)
    float keep = 1.0f - a->smoothing, eps_n = a->smoothing / (float)n;
    vf vkeep = v_set1(keep), veps = v_set1(eps_n);
    vf vce = v_zero(), vbr = v_zero(), vpb = v_zero();
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        vf yi = vld1q_f32(y + i), pi = vld1q_f32(p + i);
        vf ys = vaddq_f32(vmulq_f32(vkeep, yi), veps);
        vf logp =
            vsubq_f32(vsubq_f32(vld1q_f32(z + i), v_set1(mx)), v_set1(lse));
        vf d = vsubq_f32(pi, yi);
        vce = vfmaq_f32(vce, ys, logp);
        vbr = vfmaq_f32(vbr, d, d);
        vpb = vfmaq_f32(vpb, pi, d);
    }
    float ce = -v_hsum(vce), brier = v_hsum(vbr), pb = v_hsum(vpb);
    for (; i < n; i++) {
        float ys = keep * y[i] + eps_n;
        float logp = (z[i] - mx) - lse;
        float d = p[i] - y[i];
        ce -= ys * logp;
        brier += d * d;
        pb += p[i] * d;
    }

    // dz = [(p − y') + 2β p ((p − y) − pb)] / N
    vf v2b = v_set1(2.0f * a->brier), vpbs = v_set1(pb),
       vinv = v_set1(a->inv_n);
    for (i = 0; i + 4 <= n; i += 4) {
        vf yi = vld1q_f32(y + i), pi = vld1q_f32(p + i);
        vf ys = vaddq_f32(vmulq_f32(vkeep, yi), veps);
        vf gce = vsubq_f32(pi, ys);
        vf gbr =
            vmulq_f32(vmulq_f32(v2b, pi), vsubq_f32(vsubq_f32(pi, yi), vpbs));
        vst1q_f32(dz + i, vmulq_f32(vaddq_f32(gce, gbr), vinv));
    }
    for (; i < n; i++) {
        float ys = keep * y[i] + eps_n;
        float gce = p[i] - ys;
        float gbr = 2.0f * a->brier * p[i] * ((p[i] - y[i]) - pb);
        dz[i] = (gce + gbr) * a->inv_n;
    }
    double share = (double)a->inv_n * ((double)ce + (double)a->brier * brier);

    // ordinal term, score questions only: a_i = λ ow_i / (n−1) / N_score
    if (score && a->ordinal != 0.0f && a->inv_nscore != 0.0f) {
        float den = (float)(n - 1);
        float ord = 0.0f, pa = 0.0f;
        for (i = 0; i < n; i++) {
            float ow = ordinal_weight(n, i, y);
            ord += p[i] * ow;
            pa += p[i] * (a->ordinal * ow / den * a->inv_nscore);
        }
        for (i = 0; i < n; i++) {
            float ai =
                a->ordinal * ordinal_weight(n, i, y) / den * a->inv_nscore;
            dz[i] += p[i] * (ai - pa);
        }
        share +=
            (double)a->ordinal * (double)a->inv_nscore * ((double)ord / den);
    }
    return share;
}

// z, y (off[nq]) -> p, dz (off[nq]) overwritten; *loss += L of these questions.
void clef_f32_loss__neon(int nq, const int *off, const int *is_score,
                         const float *z, const float *y,
                         const clef_loss_args *a, float *p, float *dz,
                         double *loss)
{
    double total = 0.0;
    for (int q = 0; q < nq; q++) {
        int o = off[q], n = off[q + 1] - off[q];
        if (n <= 0)
            continue;
        int score = is_score ? is_score[q] != 0 : 0;
        total += loss_question(n, score, z + o, y + o, a, p + o, dz + o);
    }
    *loss += total;
}

// Grouped loss (HEAD.md §6), scalar reference. Question q owns logits
// z[off[q] .. off[q+1]); with n options, probabilities p, target y, y' =
// (1−ε)y + ε/n, a_i = λ Σ_j |i−j| y_j / (max(n−1,1) N_score):
//   L  += (1/N) [ −Σ y'_i log p_i + β Σ (p_i − y_i)² ]
//         + [score] (λ/N_score) Σ_ij p_i |i−j| y_j / max(n−1,1)
//   dz_i = [ (p_i − y'_i) + 2β p_i ((p_i − y_i) − Σ_k p_k (p_k − y_k)) ] / N
//         + [score] p_i (a_i − Σ_k p_k a_k)
// log p_i is taken as (z_i − max) − log Σ exp(z − max), so a vanishing p_i
// never gives log 0. The per-question sums are float; the question's share of
// L is combined in double. A question with one option has p = 1 and
// contributes zero loss and zero gradient; an empty question is skipped.
#include <math.h>
#include <stdlib.h>

#include "scalar.h"

// Ordinal weight of option i: Σ_j |i−j| y_j (n), in float over increasing j.
static float ordinal_weight(int n, int i, const float *y)
{
    float acc = 0.0f;
    for (int j = 0; j < n; j++)
        acc += (float)abs(i - j) * y[j];
    return acc;
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

    // p = softmax(z); lse = log Σ exp(z − max)
    float mx = z[0];
    for (int i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        p[i] = expf(z[i] - mx);
        sum += p[i];
    }
    for (int i = 0; i < n; i++)
        p[i] = p[i] / sum;
    float lse = logf(sum);

    // cross-entropy against y', Brier Σ (p − y)², and Σ p (p − y)
    float eps_n = a->smoothing / (float)n;
    float ce = 0.0f, brier = 0.0f, pb = 0.0f;
    for (int i = 0; i < n; i++) {
        float ys = (1.0f - a->smoothing) * y[i] + eps_n;
        float logp = (z[i] - mx) - lse;
        float d = p[i] - y[i];
        ce -= ys * logp;
        brier += d * d;
        pb += p[i] * d;
    }
    for (int i = 0; i < n; i++) {
        float ys = (1.0f - a->smoothing) * y[i] + eps_n;
        float gce = p[i] - ys;
        float gbr = 2.0f * a->brier * p[i] * ((p[i] - y[i]) - pb);
        dz[i] = (gce + gbr) * a->inv_n;
    }
    double share = (double)a->inv_n * ((double)ce + (double)a->brier * brier);

    // ordinal term, score questions only
    if (score && a->ordinal != 0.0f && a->inv_nscore != 0.0f) {
        float den = (float)(n - 1); // max(n−1, 1) with n ≥ 2
        float ord = 0.0f, pa = 0.0f;
        for (int i = 0; i < n; i++) {
            float ow = ordinal_weight(n, i, y);
            float ai = a->ordinal * ow / den * a->inv_nscore;
            ord += p[i] * ow;
            pa += p[i] * ai;
        }
        for (int i = 0; i < n; i++) {
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
void clef_f32_loss__scalar(int nq, const int *off, const int *is_score,
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

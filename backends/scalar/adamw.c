// AdamW (HEAD.md §8), scalar reference: torch.optim.AdamW's single-tensor
// update, element by element in float, in torch's operation order:
//   θ ← θ · (1 − lr·decay)         the factor formed in double, rounded to float
//   m ← β1·m + (1−β1)·g
//   v ← β2·v + ((1−β2)·g)·g        (addcmul: value·t1·t2, left to right)
//   θ ← θ − (step_size·m) / (√v / bc2_sqrt + eps)   (addcdiv: value·t1 / t2)
// step_size = lr/(1−β1ᵗ) and bc2_sqrt = √(1−β2ᵗ) come from the caller.
#include <math.h>

#include "scalar.h"

// theta, g, m, v (n)
void clef_f32_adamw__scalar(size_t n, float *theta, const float *g, float *m,
                            float *v, const clef_adamw_args *a)
{
    float keep = (float)(1.0 - (double)a->lr * (double)a->decay);
    float c1 = 1.0f - a->beta1; // exact for β in [0.5, 1] (Sterbenz)
    float c2 = 1.0f - a->beta2;
    for (size_t i = 0; i < n; i++) {
        float th = theta[i] * keep;
        float mi = a->beta1 * m[i] + c1 * g[i];
        float vi = a->beta2 * v[i] + c2 * g[i] * g[i];
        float denom = sqrtf(vi) / a->bc2_sqrt + a->eps;
        theta[i] = th - (a->step_size * mi) / denom;
        m[i] = mi;
        v[i] = vi;
    }
}

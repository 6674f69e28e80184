// AdamW, NEON: torch.optim.AdamW's single-tensor update in torch's operation
// order (see backends/scalar/adamw.c), four parameters per vector:
//   θ ← θ·(1 − lr·decay);  m ← β1 m + (1−β1) g;  v ← β2 v + ((1−β2) g) g;
//   θ ← θ − (step_size·m) / (√v / bc2_sqrt + eps)
#include <math.h>

#include "neon.h"
#include "vec.h"

// theta, g, m, v (n)
void clef_f32_adamw__neon(size_t n, float *theta, const float *g, float *m,
                          float *v, const clef_adamw_args *a)
{
    float keep = (float)(1.0 - (double)a->lr * (double)a->decay);
    float c1 = 1.0f - a->beta1, c2 = 1.0f - a->beta2;
    vf vkeep = v_set1(keep), vb1 = v_set1(a->beta1), vb2 = v_set1(a->beta2);
    vf vc1 = v_set1(c1), vc2 = v_set1(c2), vbc2 = v_set1(a->bc2_sqrt);
    vf veps = v_set1(a->eps), vstep = v_set1(a->step_size);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        vf gi = vld1q_f32(g + i);
        vf th = vmulq_f32(vld1q_f32(theta + i), vkeep);
        vf mi = vaddq_f32(vmulq_f32(vb1, vld1q_f32(m + i)), vmulq_f32(vc1, gi));
        vf vi = vaddq_f32(vmulq_f32(vb2, vld1q_f32(v + i)),
                          vmulq_f32(vmulq_f32(vc2, gi), gi));
        vf den = vaddq_f32(vdivq_f32(vsqrtq_f32(vi), vbc2), veps);
        vst1q_f32(theta + i,
                  vsubq_f32(th, vdivq_f32(vmulq_f32(vstep, mi), den)));
        vst1q_f32(m + i, mi);
        vst1q_f32(v + i, vi);
    }
    for (; i < n; i++) {
        float th = theta[i] * keep;
        float mi = a->beta1 * m[i] + c1 * g[i];
        float vi = a->beta2 * v[i] + c2 * g[i] * g[i];
        float den = sqrtf(vi) / a->bc2_sqrt + a->eps;
        theta[i] = th - (a->step_size * mi) / den;
        m[i] = mi;
        v[i] = vi;
    }
}

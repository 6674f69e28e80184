// Exact-erf GELU, NEON: y = x Φ(x), dx += dy (Φ(x) + x φ(x)), with the vector
// Φ of backends/neon/vec.h; and erf itself (clef_f32_erf__neon) for checks.
// Memory-bound: one pass, 2 vectors per iteration, tail through the stack.
#include "neon.h"
#include "vec.h"

static inline vf gelu_fwd_v(vf x)
{
    vf e2;
    return vmulq_f32(x, v_norm_cdf(x, &e2));
}

static inline vf gelu_grad_v(vf x)
{
    vf e2;
    vf cdf = v_norm_cdf(x, &e2);
    vf pdf = vmulq_f32(e2, v_set1(0.39894228040143267794f)); // e^{−x²/2}/√(2π)
    return vfmaq_f32(cdf, x, pdf);
}

// x (n) -> y (n) = x Φ(x)
void clef_f32_gelu_fwd__neon(size_t n, const float *x, float *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vst1q_f32(y + i, gelu_fwd_v(vld1q_f32(x + i)));
        vst1q_f32(y + i + 4, gelu_fwd_v(vld1q_f32(x + i + 4)));
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, gelu_fwd_v(vld1q_f32(x + i)));
    if (i < n)
        v_storen(y + i, gelu_fwd_v(v_loadn(x + i, (int)(n - i))), (int)(n - i));
}

// dx (n) += dy (n) ⊙ (Φ(x) + x φ(x))
void clef_f32_gelu_bwd__neon(size_t n, const float *x, const float *dy,
                             float *dx)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        vf g = vmulq_f32(vld1q_f32(dy + i), gelu_grad_v(vld1q_f32(x + i)));
        vst1q_f32(dx + i, vaddq_f32(vld1q_f32(dx + i), g));
    }
    if (i < n) {
        int t = (int)(n - i);
        vf g = vmulq_f32(v_loadn(dy + i, t), gelu_grad_v(v_loadn(x + i, t)));
        v_storen(dx + i, vaddq_f32(v_loadn(dx + i, t), g), t);
    }
}

// x (n) -> y (n) = erf(x)
void clef_f32_erf__neon(size_t n, const float *x, float *y)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, v_erf(vld1q_f32(x + i)));
    if (i < n)
        v_storen(y + i, v_erf(v_loadn(x + i, (int)(n - i))), (int)(n - i));
}

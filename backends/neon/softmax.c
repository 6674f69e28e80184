// Row softmax, NEON. In place (y == x) is allowed: each pass reads element i
// before it writes element i.
#include <math.h>

#include "neon.h"
#include "vec.h"

// max over n floats (−INF for n == 0); NaN propagates
static float row_max(int n, const float *x)
{
    vf m0 = v_set1(-INFINITY), m1 = m0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        m0 = vmaxq_f32(m0, vld1q_f32(x + i));
        m1 = vmaxq_f32(m1, vld1q_f32(x + i + 4));
    }
    for (; i + 4 <= n; i += 4)
        m0 = vmaxq_f32(m0, vld1q_f32(x + i));
    if (i < n)
        m1 = vmaxq_f32(m1, v_loadn_fill(x + i, n - i, -INFINITY));
    return v_hmax(vmaxq_f32(m0, m1));
}

// One row: y (n) = exp(x − max) / Σ exp(x − max); all −INF (or n == 0): zeros.
static void softmax_row(int n, const float *x, float *y)
{
    float mx = row_max(n, x);
    if (mx == -INFINITY) {
        for (int i = 0; i < n; i++)
            y[i] = 0.0f;
        return;
    }
    vf vm = v_set1(mx), s0 = v_zero(), s1 = v_zero();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        vf e0 = v_exp(vsubq_f32(vld1q_f32(x + i), vm));
        vf e1 = v_exp(vsubq_f32(vld1q_f32(x + i + 4), vm));
        vst1q_f32(y + i, e0);
        vst1q_f32(y + i + 4, e1);
        s0 = vaddq_f32(s0, e0);
        s1 = vaddq_f32(s1, e1);
    }
    for (; i + 4 <= n; i += 4) {
        vf e = v_exp(vsubq_f32(vld1q_f32(x + i), vm));
        vst1q_f32(y + i, e);
        s0 = vaddq_f32(s0, e);
    }
    if (i < n) {
        // padding lanes are −INF: exp gives 0, the sum is unchanged
        vf e = v_exp(vsubq_f32(v_loadn_fill(x + i, n - i, -INFINITY), vm));
        v_storen(y + i, e, n - i);
        s1 = vaddq_f32(s1, e);
    }
    vf sum = v_set1(v_hsum(vaddq_f32(s0, s1)));
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vdivq_f32(vld1q_f32(y + i), sum));
    if (i < n)
        v_storen(y + i, vdivq_f32(v_loadn(y + i, n - i), sum), n - i);
}

// One row: dx (n) += y ⊙ (dy − Σ dy ⊙ y)
static void softmax_back_row(int n, const float *y, const float *dy, float *dx)
{
    vf dot = v_set1(v_dot(n, dy, y));
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        vf t = vmulq_f32(vld1q_f32(y + i), vsubq_f32(vld1q_f32(dy + i), dot));
        vst1q_f32(dx + i, vaddq_f32(vld1q_f32(dx + i), t));
    }
    if (i < n) {
        int t = n - i;
        vf g = vmulq_f32(v_loadn(y + i, t), vsubq_f32(v_loadn(dy + i, t), dot));
        v_storen(dx + i, vaddq_f32(v_loadn(dx + i, t), g), t);
    }
}

// x (rows, n) -> y (rows, n), per row
void clef_f32_softmax_fwd__neon(int rows, int n, const float *x, float *y)
{
    for (int r = 0; r < rows; r++)
        softmax_row(n, x + (size_t)r * n, y + (size_t)r * n);
}

// dx (rows, n) += y ⊙ (dy − Σ dy ⊙ y), per row
void clef_f32_softmax_bwd__neon(int rows, int n, const float *y,
                                const float *dy, float *dx)
{
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        softmax_back_row(n, y + o, dy + o, dx + o);
    }
}

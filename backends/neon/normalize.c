// normalize and cosine per row, NEON. Norms are √(Σ x²) (vector sums of
// squares, fixed combine order).
#include <math.h>

#include "neon.h"
#include "vec.h"

static float row_norm(int n, const float *x)
{
    return sqrtf(v_dot(n, x, x));
}

// y (n) = x / den
static void div_row(int n, const float *x, float den, float *y)
{
    vf d = v_set1(den);
    int i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vdivq_f32(vld1q_f32(x + i), d));
    for (; i < n; i++)
        y[i] = x[i] / den;
}

// normalize-back: dx (n) += nrm > eps ? (g − y·dot) / nrm : g / eps, where
// g = gs·gv (gs a scalar factor, 1 for normalize) and dot = y·g.
static void normalize_back_row(int n, float eps, const float *y, float nrm,
                               float gs, const float *gv, float *dx)
{
    vf vg = v_set1(gs);
    int i = 0;
    if (!(nrm > eps)) {
        vf ve = v_set1(eps);
        for (; i + 4 <= n; i += 4) {
            vf g = vmulq_f32(vg, vld1q_f32(gv + i));
            vst1q_f32(dx + i, vaddq_f32(vld1q_f32(dx + i), vdivq_f32(g, ve)));
        }
        for (; i < n; i++)
            dx[i] += gs * gv[i] / eps;
        return;
    }
    float dot = gs * v_dot(n, y, gv);
    vf vd = v_set1(dot), vn = v_set1(nrm);
    for (; i + 4 <= n; i += 4) {
        vf g = vmulq_f32(vg, vld1q_f32(gv + i));
        vf t = vfmsq_f32(g, vld1q_f32(y + i), vd);
        vst1q_f32(dx + i, vaddq_f32(vld1q_f32(dx + i), vdivq_f32(t, vn)));
    }
    for (; i < n; i++)
        dx[i] += (gs * gv[i] - y[i] * dot) / nrm;
}

// x (rows, n) -> y (rows, n) = x / max(|x|, eps), nrm (rows) = |x|
void clef_f32_normalize_fwd__neon(int rows, int n, float eps, const float *x,
                                  float *y, float *nrm)
{
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        nrm[r] = row_norm(n, x + o);
        div_row(n, x + o, nrm[r] > eps ? nrm[r] : eps, y + o);
    }
}

// dx (rows, n) += normalize-back(y, nrm, dy) per row
void clef_f32_normalize_bwd__neon(int rows, int n, float eps, const float *y,
                                  const float *nrm, const float *dy, float *dx)
{
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        normalize_back_row(n, eps, y + o, nrm[r], 1.0f, dy + o, dx + o);
    }
}

// a, b (rows, n) -> ahat, bhat (rows, n), na, nb (rows), c (rows) = ahat·bhat
void clef_f32_cosine_fwd__neon(int rows, int n, const float *a, const float *b,
                               float *ahat, float *bhat, float *na, float *nb,
                               float *c)
{
    const float eps = CLEF_COSINE_EPS;
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        na[r] = row_norm(n, a + o);
        nb[r] = row_norm(n, b + o);
        div_row(n, a + o, na[r] > eps ? na[r] : eps, ahat + o);
        div_row(n, b + o, nb[r] > eps ? nb[r] : eps, bhat + o);
        c[r] = v_dot(n, ahat + o, bhat + o);
    }
}

// dc (rows) -> da += normalize-back(ahat, na, dc·bhat),
//              db += normalize-back(bhat, nb, dc·ahat)
void clef_f32_cosine_bwd__neon(int rows, int n, const float *ahat,
                               const float *bhat, const float *na,
                               const float *nb, const float *dc, float *da,
                               float *db)
{
    const float eps = CLEF_COSINE_EPS;
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        normalize_back_row(n, eps, ahat + o, na[r], dc[r], bhat + o, da + o);
        normalize_back_row(n, eps, bhat + o, nb[r], dc[r], ahat + o, db + o);
    }
}

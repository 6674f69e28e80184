// normalize and cosine per row (HEAD.md §4, §7, Appendix A), scalar reference.
// Norms are √(Σ x²) with the sum in float over increasing index.
#include <math.h>

#include "scalar.h"

static float row_norm(int n, const float *x)
{
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    return sqrtf(ss);
}

// y (n) = x / max(nrm, eps)
static void normalize_row(int n, float eps, const float *x, float nrm, float *y)
{
    float den = nrm > eps ? nrm : eps;
    for (int i = 0; i < n; i++)
        y[i] = x[i] / den;
}

// normalize-back: dx (n) += nrm > eps ? (g − y (y·g)) / nrm : g / eps
static void normalize_back_row(int n, float eps, const float *y, float nrm,
                               const float *g, float *dx)
{
    if (!(nrm > eps)) {
        for (int i = 0; i < n; i++)
            dx[i] += g[i] / eps;
        return;
    }
    float dot = 0.0f;
    for (int i = 0; i < n; i++)
        dot += y[i] * g[i];
    for (int i = 0; i < n; i++)
        dx[i] += (g[i] - y[i] * dot) / nrm;
}

// x (rows, n) -> y (rows, n) = x / max(|x|, eps), nrm (rows) = |x|
void clef_f32_normalize_fwd__scalar(int rows, int n, float eps, const float *x,
                                    float *y, float *nrm)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        nrm[r] = row_norm(n, xr);
        normalize_row(n, eps, xr, nrm[r], y + (size_t)r * n);
    }
}

// dx (rows, n) += normalize-back(y, nrm, dy) per row
void clef_f32_normalize_bwd__scalar(int rows, int n, float eps, const float *y,
                                    const float *nrm, const float *dy,
                                    float *dx)
{
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        normalize_back_row(n, eps, y + o, nrm[r], dy + o, dx + o);
    }
}

// a, b (rows, n) -> ahat, bhat (rows, n), na, nb (rows), c (rows) = ahat·bhat
// with ahat = a / max(|a|, CLEF_COSINE_EPS).
void clef_f32_cosine_fwd__scalar(int rows, int n, const float *a,
                                 const float *b, float *ahat, float *bhat,
                                 float *na, float *nb, float *c)
{
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        na[r] = row_norm(n, a + o);
        nb[r] = row_norm(n, b + o);
        normalize_row(n, CLEF_COSINE_EPS, a + o, na[r], ahat + o);
        normalize_row(n, CLEF_COSINE_EPS, b + o, nb[r], bhat + o);
        float dot = 0.0f;
        for (int i = 0; i < n; i++)
            dot += ahat[o + i] * bhat[o + i];
        c[r] = dot;
    }
}

// dc (rows) -> da, db (rows, n) +=:
//   da += normalize-back(ahat, na, dc · bhat), db += normalize-back(bhat, nb, dc · ahat)
// (the normalize-back rule of Appendix A). The upstream gradients
// ga = dc·bhat and gb = dc·ahat are formed in float per element where used,
// so no scratch is needed.
void clef_f32_cosine_bwd__scalar(int rows, int n, const float *ahat,
                                 const float *bhat, const float *na,
                                 const float *nb, const float *dc, float *da,
                                 float *db)
{
    const float eps = CLEF_COSINE_EPS;
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        const float *ah = ahat + o, *bh = bhat + o;
        float g = dc[r];

        // ga = g·bhat, gb = g·ahat; ahat·ga and bhat·gb
        float dota = 0.0f, dotb = 0.0f;
        for (int i = 0; i < n; i++) {
            dota += ah[i] * (g * bh[i]);
            dotb += bh[i] * (g * ah[i]);
        }
        for (int i = 0; i < n; i++) {
            float ga = g * bh[i], gb = g * ah[i];
            da[o + i] += na[r] > eps ? (ga - ah[i] * dota) / na[r] : ga / eps;
            db[o + i] += nb[r] > eps ? (gb - bh[i] * dotb) / nb[r] : gb / eps;
        }
    }
}

// Exact-erf GELU (HEAD.md §4), scalar reference.
//
// Choice: each element is evaluated in double (libm erfc/exp) and rounded to
// float once, so the reference is within about half an ulp of the true value
// (except where the result underflows). Φ(x) is written erfc(−x/√2)/2, not
// (1 + erf(x/√2))/2, which loses all accuracy to cancellation for x ≪ 0.
// Vector backends that use a float erf approximation are judged against this.
#include <math.h>

#include "scalar.h"

#define CLEF_SQRT1_2 0.70710678118654752440      // 1/√2
#define CLEF_INV_SQRT_2PI 0.39894228040143267794 // 1/√(2π)

// Φ(x), the standard normal CDF.
static double phi_cdf(double x)
{
    return 0.5 * erfc(-x * CLEF_SQRT1_2);
}

// x (n) -> y (n) = x Φ(x); at ±Inf the limits +Inf and −0 (x·Φ(x) would be
// −Inf·0 = NaN at −Inf).
void clef_f32_gelu_fwd__scalar(size_t n, const float *x, float *y)
{
    for (size_t i = 0; i < n; i++) {
        double xi = x[i];
        y[i] = isinf(xi) ? (xi > 0 ? x[i] : -0.0f) : (float)(xi * phi_cdf(xi));
    }
}

// dx (n) += dy (n) ⊙ (Φ(x) + x φ(x)); the product dy·gelu'(x) is formed in
// double and rounded once before the float accumulation.
void clef_f32_gelu_bwd__scalar(size_t n, const float *x, const float *dy,
                               float *dx)
{
    for (size_t i = 0; i < n; i++) {
        double xi = x[i];
        double pdf = CLEF_INV_SQRT_2PI * exp(-0.5 * xi * xi);
        // gelu'(±Inf) = Φ(±Inf): x φ(x) → 0 (but ±Inf · 0 is NaN)
        double d = isinf(xi) ? (xi > 0 ? 1.0 : 0.0) : phi_cdf(xi) + xi * pdf;
        dx[i] += (float)((double)dy[i] * d);
    }
}

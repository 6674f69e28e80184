// Tolerance checks that report the first mismatch.
#include <string.h>
#include <math.h>
#include <stdio.h>

#include "util.h"

// One element: NaN fails, equal infinities pass, else |g − w| ≤ tol.
static bool elem_ok(double g, double w, double tol)
{
    if (isnan(g) || isnan(w))
        return false;
    if (isinf(g) || isinf(w))
        return g == w;
    return fabs(g - w) <= tol;
}

// Scans n elements. want is wd (double) or wf (float); the allowed error is
// bound[i] when bound is given, else atol + rtol·|want|.
static bool scan(const char *fn, const float *got, const double *wd,
                 const float *wf, const double *bound, size_t n, double atol,
                 double rtol)
{
    size_t bad = 0, first = 0;
    double fgot = 0, fwant = 0, ftol = 0;
    for (size_t i = 0; i < n; i++) {
        double w = wd ? wd[i] : (double)wf[i];
        double tol = bound ? bound[i] : atol + rtol * fabs(w);
        if (elem_ok(got[i], w, tol))
            continue;
        if (bad++ == 0) {
            first = i;
            fgot = got[i];
            fwant = w;
            ftol = tol;
        }
    }
    if (!bad)
        return true;
    fprintf(stderr,
            "%s: first mismatch at [%zu]: got %.9g want %.9g |diff| %.3g > "
            "allowed %.3g (%.1f eps); %zu of %zu mismatch\n",
            fn, first, fgot, fwant, fabs(fgot - fwant), ftol,
            fabs(fgot - fwant) / CLEF_TEST_EPS, bad, n);
    return false;
}

bool clef_test_close(const float *got, const float *want, size_t n, double atol,
                     double rtol)
{
    return scan("clef_test_close", got, NULL, want, NULL, n, atol, rtol);
}

bool clef_test_close_d(const float *got, const double *want, size_t n,
                       double atol, double rtol)
{
    return scan("clef_test_close_d", got, want, NULL, NULL, n, atol, rtol);
}

bool clef_test_within(const float *got, const double *want, const double *bound,
                      size_t n)
{
    return scan("clef_test_within", got, want, NULL, bound, n, 0, 0);
}

bool clef_test_accumulated(const float *before, const float *delta,
                           const float *after, size_t n)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double want = (double)before[i] + (double)delta[i];
        double tol = 2.0 * CLEF_TEST_EPS *
                     (fabs((double)before[i]) + fabs((double)delta[i]));
        if (elem_ok(after[i], want, tol))
            continue;
        if (bad++ == 0)
            first = i;
    }
    if (!bad)
        return true;
    fprintf(stderr,
            "clef_test_accumulated: first mismatch at [%zu]: before %.9g + "
            "delta %.9g != after %.9g (overwrote instead of +=?); %zu of %zu\n",
            first, before[first], delta[first], after[first], bad, n);
    return false;
}

double clef_test_max_abs_d(const double *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

double clef_test_max_abs(const float *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fabs((double)x[i]) > m ? fabs((double)x[i]) : m;
    return m;
}

long clef_test_first_diff(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof(float)) != 0)
            return (long)i;
    return -1;
}

double clef_test_ulp_err(float got, double want)
{
    float w = (float)want;
    double spacing = fabs((double)nextafterf(fabsf(w), INFINITY) - fabsf(w));
    if (isinf(w))
        spacing = ldexp(1.0, 104);
    return fabs((double)got - want) / spacing;
}

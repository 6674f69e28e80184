// Central finite differences in double, and the gradient check.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

void clef_test_fd_grad(double *x, size_t n, double h, clef_test_objective f,
                       void *ctx, double *fd)
{
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i];
        if (isinf(x0)) {
            fd[i] = 0.0;
            continue;
        }
        x[i] = x0 + h;
        double lp = f(ctx);
        x[i] = x0 - h;
        double lm = f(ctx);
        x[i] = x0;
        fd[i] = (lp - lm) / (2.0 * h);
    }
}

double clef_test_dot_d(const double *w, const double *y, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += w[i] * y[i];
    return s;
}

bool clef_test_grad_close(const char *what, const float *got, const double *fd,
                          size_t n, double units)
{
    return clef_test_grad_close_scaled(what, got, fd, n, units, 0.0);
}

bool clef_test_grad_close_scaled(const char *what, const float *got,
                                 const double *fd, size_t n, double units,
                                 double mag)
{
    double scale = clef_test_max_abs_d(fd, n);
    if (scale < mag)
        scale = mag;
    if (scale < 1e-30)
        scale = 1e-30;
    double tol = units * CLEF_TEST_EPS * scale;

    size_t bad = 0, first = 0, worst = 0;
    double maxerr = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - fd[i]);
        if (isnan(got[i]) || !(err <= tol)) {
            if (bad++ == 0)
                first = i;
        }
        if (err > maxerr || isnan(err)) {
            maxerr = err;
            worst = i;
        }
    }
    if (getenv("CLEF_TEST_FD_REPORT"))
        fprintf(stderr,
                "[fd] %s: n=%zu max|an-fd|=%.3g at [%zu] scale=%.3g -> %.2f "
                "eps*scale (allowed %.0f)\n",
                what, n, maxerr, worst, scale, maxerr / (CLEF_TEST_EPS * scale),
                units);
    if (!bad)
        return true;
    fprintf(stderr,
            "clef_test_grad_close(%s): first mismatch at [%zu]: analytic %.9g "
            "fd %.9g |diff| %.3g > allowed %.3g (%.0f eps * scale %.3g); "
            "%zu of %zu\n",
            what, first, got[first], fd[first], fabs(got[first] - fd[first]),
            tol, units, scale, bad, n);
    return false;
}

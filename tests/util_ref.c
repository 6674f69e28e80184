// Double-precision reference forwards for tests.
#include <math.h>

#include "util.h"

void clef_test_ref_gemm(int M, int N, int K, const double *A, int lda, int ta,
                        const double *B, int ldb, int tb, double *C, int ldc,
                        double *bound)
{
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += a * b;
                mag += fabs(a * b);
            }
            C[(size_t)i * ldc + j] = acc;
            if (bound)
                bound[(size_t)i * N + j] = mag;
        }
    }
}

void clef_test_ref_softmax(int n, const double *x, double *y)
{
    double mx = -INFINITY;
    for (int i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    if (mx == -INFINITY) {
        for (int i = 0; i < n; i++)
            y[i] = 0.0;
        return;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        y[i] = exp(x[i] - mx);
        sum += y[i];
    }
    for (int i = 0; i < n; i++)
        y[i] /= sum;
}

void clef_test_ref_layernorm(int n, const double *x, const double *gamma,
                             const double *beta, double eps, double *y)
{
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    double rs = 1.0 / sqrt(var + eps);
    for (int i = 0; i < n; i++)
        y[i] = gamma[i] * (x[i] - mean) * rs + beta[i];
}

// Φ(x) = erfc(−x/√2)/2 in long double: no cancellation for x ≪ 0.
static long double ref_cdf(long double x)
{
    return 0.5L * erfcl(-x / sqrtl(2.0L));
}

double clef_test_ref_gelu(double x)
{
    return (double)(x * ref_cdf(x));
}

double clef_test_ref_gelu_grad(double x)
{
    long double pi = 3.14159265358979323846264338327950288L;
    long double pdf = expl(-0.5L * x * x) / sqrtl(2.0L * pi);
    return (double)(ref_cdf(x) + x * pdf);
}

double clef_test_ref_normalize(int n, const double *x, double eps, double *y)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double nrm = sqrt(ss);
    double den = nrm > eps ? nrm : eps;
    for (int i = 0; i < n; i++)
        y[i] = x[i] / den;
    return nrm;
}

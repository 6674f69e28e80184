// Shared helpers for clef's Criterion tests: seeded random fills, checked
// allocation, double-precision references, tolerance checks that name the
// first mismatch, and central finite differences in double.
//
// Tolerances are always written in units of FLT_EPSILON (CLEF_TEST_EPS):
// elementwise ops a few units, reductions scale with their length.
#ifndef CLEF_TEST_UTIL_H
#define CLEF_TEST_UTIL_H

#include <float.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLEF_TEST_EPS ((double)FLT_EPSILON)

// ---- random numbers (util_rand.c): splitmix64, one state per test ----------
uint64_t clef_test_rng_next(uint64_t *state);
// Uniform double in [0, 1).
double clef_test_rand_unit(uint64_t *state);
// Uniform integer in [lo, hi].
int clef_test_rand_int(uint64_t *state, int lo, int hi);
// x (n) ~ U[lo, hi).
void clef_test_fill_uniform(float *x, size_t n, float lo, float hi,
                            uint64_t *state);
// x (n) ~ N(mean, std²) (Box-Muller in double, rounded to float).
void clef_test_fill_normal(float *x, size_t n, float mean, float std,
                           uint64_t *state);
// x (n) = value.
void clef_test_fill_const(float *x, size_t n, float value);
// x (n)[i] = a known, exactly representable pattern (i % 7 − 3) · 0.25, used
// to pre-fill gradient buffers before a backward that must accumulate.
void clef_test_fill_pattern(float *x, size_t n);

// ---- memory (util_mem.c): zeroed, aborts the process on failure ------------
float *clef_test_falloc(size_t n);
double *clef_test_dalloc(size_t n);
int *clef_test_ialloc(size_t n);
// y (n) = (double) x (n)
void clef_test_to_double(const float *x, double *y, size_t n);
// y (n) = x (n)
void clef_test_fcopy(float *y, const float *x, size_t n);

// ---- comparisons (util_close.c) --------------------------------------------
// All return true when every element passes; otherwise they print the first
// mismatch (index, got, want, |diff|, allowed) and the mismatch count to
// stderr and return false. NaN never passes; equal infinities pass.
//
// |got[i] − want[i]| ≤ atol + rtol · |want[i]|
bool clef_test_close(const float *got, const float *want, size_t n, double atol,
                     double rtol);
bool clef_test_close_d(const float *got, const double *want, size_t n,
                       double atol, double rtol);
// The first index where a and b (n floats) differ in their bits, or -1.
long clef_test_first_diff(const float *a, const float *b, size_t n);
// |got − want| in ulps of the float nearest to want (subnormal spacing at
// the bottom; 2¹⁰⁴ past FLT_MAX).
double clef_test_ulp_err(float got, double want);
// |got[i] − want[i]| ≤ bound[i] (a per-element error bound).
bool clef_test_within(const float *got, const double *want, const double *bound,
                      size_t n);
// after[i] ≈ before[i] + delta[i] within 2 FLT_EPSILON of the magnitudes: the
// check that a backward kernel accumulated (+=) instead of overwriting.
bool clef_test_accumulated(const float *before, const float *delta,
                           const float *after, size_t n);
// max_i |x[i]| (0 for n = 0).
double clef_test_max_abs_d(const double *x, size_t n);
double clef_test_max_abs(const float *x, size_t n);

// ---- finite differences (util_fd.c) ----------------------------------------
// A scalar objective of double inputs held in ctx (e.g. L = Σ w ⊙ f(x)).
typedef double (*clef_test_objective)(void *ctx);
// fd (n)[i] = (L(x + h e_i) − L(x − h e_i)) / 2h, perturbing x in place (x is
// restored). Entries of x that are ±INF are left alone and get fd = 0.
void clef_test_fd_grad(double *x, size_t n, double h, clef_test_objective f,
                       void *ctx, double *fd);
// Σ w ⊙ y in double.
double clef_test_dot_d(const double *w, const double *y, size_t n);
// Checks an analytic float gradient against a double finite-difference one:
// |got[i] − fd[i]| ≤ units · FLT_EPSILON · scale, scale = max(max|fd|, floor),
// floor = 1e-30. When the environment sets CLEF_TEST_FD_REPORT, prints one
// line "[fd] <what>: n, max err, err in eps·scale units" to stderr.
bool clef_test_grad_close(const char *what, const float *got, const double *fd,
                          size_t n, double units);
// The same with scale = max(max|fd|, mag): for gradients that are small
// differences of large terms (mag = the terms' magnitude, e.g. rstd·max|dy|).
bool clef_test_grad_close_scaled(const char *what, const float *got,
                                 const double *fd, size_t n, double units,
                                 double mag);

// ---- double references (util_ref.c) ----------------------------------------
// C (M,N) = op(A) op(B) in double; ta/tb: A stored (K,M) / B stored (N,K)
// as in gemm_tn / gemm_nt. bound (M,N), if not NULL, gets Σ_k |a b|.
void clef_test_ref_gemm(int M, int N, int K, const double *A, int lda, int ta,
                        const double *B, int ldb, int tb, double *C, int ldc,
                        double *bound);
// y (n) = softmax(x) (max-subtracted; all −INF gives zeros).
void clef_test_ref_softmax(int n, const double *x, double *y);
// y (n) = gamma ⊙ (x − μ)/√(σ² + eps) + beta (biased σ²).
void clef_test_ref_layernorm(int n, const double *x, const double *gamma,
                             const double *beta, double eps, double *y);
// gelu(x) = x Φ(x) and gelu'(x) = Φ(x) + x φ(x).
double clef_test_ref_gelu(double x);
double clef_test_ref_gelu_grad(double x);
// y (n) = x / max(|x|, eps); returns |x|.
double clef_test_ref_normalize(int n, const double *x, double eps, double *y);

#endif

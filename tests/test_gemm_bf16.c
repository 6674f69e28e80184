// The bf16 ops' scalar references (backends/scalar/gemm_bf16.c):
//   - cvt_f32_bf16: round to nearest even on listed cases (ties both ways,
//     carries into the next binade and to Inf, denormals, ±0, ±Inf, quiet
//     and signalling NaNs), and on random bit patterns against an
//     independent rounding (the nearer of the two bf16 neighbours, in
//     double, ties to the even one)
//   - gemm_bf16_nt/nn/tn: against a double product of the same bf16 values
//     (tests/util_ref.c): the reference sums exact products in double and
//     rounds once, so it is within one float rounding of the exact sum;
//     accumulate 1 adds to C, 0 ignores C (NaN-filled); K = 0 gives 0 or C
//     unchanged; leading dimensions above the width; padding untouched.
// Every other bf16 kernel is checked against these (test_isa_gemm_bf16.c).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t u_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static double bf_value(uint16_t h)
{
    return (double)f_of((uint32_t)h << 16);
}

static uint16_t cvt1(uint32_t u)
{
    float x = f_of(u);
    uint16_t y = 0xdead;
    clef_cvt_f32_bf16__scalar(1, &x, &y);
    return y;
}

Test(gemm_bf16, cvt_listed_cases)
{
    static const struct {
        uint32_t in;
        uint16_t out;
        const char *what;
    } cases[] = {
        {0x3f800000u, 0x3f80, "1.0 exact"},
        {0x3f808000u, 0x3f80, "tie, even below: down"},
        {0x3f818000u, 0x3f82, "tie, odd below: up"},
        {0x3f808001u, 0x3f81, "just above a tie: up"},
        {0x3f807fffu, 0x3f80, "just below a tie: down"},
        {0xbf818000u, 0xbf82, "negative tie: away from even"},
        {0x3fffffffu, 0x4000, "carry into the next binade"},
        {0x7f7fffffu, 0x7f80, "largest float rounds to Inf"},
        {0x7f7f7fffu, 0x7f7f, "largest bf16 stays"},
        {0xff7fffffu, 0xff80, "to -Inf"},
        {0x7f800000u, 0x7f80, "+Inf"},
        {0xff800000u, 0xff80, "-Inf"},
        {0x00000000u, 0x0000, "+0"},
        {0x80000000u, 0x8000, "-0"},
        {0x00000001u, 0x0000, "smallest denormal: to 0"},
        {0x00008000u, 0x0000, "denormal tie, even below"},
        {0x00018000u, 0x0002, "denormal tie, odd below"},
        {0x00010000u, 0x0001, "smallest bf16 denormal"},
        {0x007fffffu, 0x0080, "largest denormal: to the smallest normal"},
        {0x80018000u, 0x8002, "negative denormal tie"},
        {0x7fc00000u, 0x7fc0, "quiet NaN"},
        {0x7f800001u, 0x7fc0, "signalling NaN, payload below: quiet"},
        {0x7f810000u, 0x7fc1, "signalling NaN, payload kept"},
        {0xff800001u, 0xffc0, "negative signalling NaN"},
        {0x7fffffffu, 0x7fff, "NaN with every bit: no carry to +0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(cvt1(cases[i].in), cases[i].out,
                     "%s: 0x%08x -> 0x%04x, want 0x%04x", cases[i].what,
                     cases[i].in, cvt1(cases[i].in), cases[i].out);
}

// The nearest bf16 by distance in double (ties to the even pattern).
static uint16_t nearest(uint32_t u)
{
    const uint32_t lo = u & 0xffff0000u; // toward zero
    const uint32_t hi = lo + 0x10000u;   // away from zero (may be Inf)
    const double x = f_of(u), a = f_of(lo);
    // the neighbour past the largest finite bf16 is Inf: weigh it as 2^128
    const double b = (hi & 0x7fffffffu) == 0x7f800000u
                         ? copysign(ldexp(1.0, 128), x)
                         : (double)f_of(hi);
    const double da = fabs(x - a), db = fabs(b - x);
    if (da < db)
        return (uint16_t)(lo >> 16);
    if (db < da)
        return (uint16_t)(hi >> 16);
    return (uint16_t)((lo >> 16) & 1 ? hi >> 16 : lo >> 16);
}

Test(gemm_bf16, cvt_random_bits_against_an_independent_rounding)
{
    enum { N = 1 << 20 };
    float *x = clef_test_falloc(N);
    uint16_t *y = malloc(N * sizeof *y);
    cr_assert_not_null(y);
    uint64_t rng = 0xbf16u;
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)clef_test_rng_next(&rng);
        if (i % 4 == 0) // ties
            u = (u & 0xffff0000u) | 0x8000u;
        if (i % 8 == 1) // denormals
            u &= 0x807fffffu;
        memcpy(&x[i], &u, sizeof u);
    }
    clef_cvt_f32_bf16__scalar(N, x, y);
    long bad = 0;
    for (int i = 0; i < N; i++) {
        uint32_t u = u_of(x[i]);
        uint16_t want;
        if ((u & 0x7fffffffu) > 0x7f800000u) { // NaN: quiet, sign kept
            cr_expect((y[i] & 0x7f80) == 0x7f80 && (y[i] & 0x0040) &&
                          (y[i] & 0x8000) == ((u >> 16) & 0x8000),
                      "NaN 0x%08x -> 0x%04x", u, y[i]);
            continue;
        }
        want = nearest(u);
        if (y[i] != want && bad++ < 5)
            cr_log_error("0x%08x -> 0x%04x, want 0x%04x", u, y[i], want);
    }
    cr_expect_eq(bad, 0, "%ld of %d conversions differ", bad, N);
    free(x);
    free(y);
}

typedef enum { NT, NN, TN } layout;
static const char *const lname[] = {"nt", "nn", "tn"};

static clef_gemm_bf16_fn scalar_of(layout l)
{
    return l == NT   ? clef_bf16_gemm_nt__scalar
           : l == NN ? clef_bf16_gemm_nn__scalar
                     : clef_bf16_gemm_tn__scalar;
}

static void fill_bf16(uint16_t *x, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) {
        float f = (float)(2.0 * clef_test_rand_unit(rng) - 1.0);
        clef_cvt_f32_bf16__scalar(1, &f, &x[i]);
    }
}

// One case; false after printing the first mismatch.
static bool ref_case(layout l, int M, int N, int K, int acc, uint64_t *rng)
{
    const int arows = l == TN ? K : M, acols = l == TN ? M : K;
    const int brows = l == NT ? N : K, bcols = l == NT ? K : N;
    const int lda = acols + 3, ldb = bcols + 5, ldc = N + 2;
    const size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb;
    const size_t nc = (size_t)M * ldc;
    uint16_t *A = malloc((na + 1) * 2), *B = malloc((nb + 1) * 2);
    float *C = clef_test_falloc(nc), *C0 = clef_test_falloc(nc);
    double *Ad = clef_test_dalloc(na), *Bd = clef_test_dalloc(nb);
    double *want = clef_test_dalloc((size_t)M * N + 1);
    double *bound = clef_test_dalloc((size_t)M * N + 1);
    float *got = clef_test_falloc((size_t)M * N + 1);
    cr_assert(A && B);
    fill_bf16(A, na, rng);
    fill_bf16(B, nb, rng);
    for (size_t i = 0; i < na; i++)
        Ad[i] = bf_value(A[i]);
    for (size_t i = 0; i < nb; i++)
        Bd[i] = bf_value(B[i]);
    if (acc)
        clef_test_fill_uniform(C, nc, -2.0f, 2.0f, rng);
    else
        clef_test_fill_const(C, nc, NAN);
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            C[(size_t)i * ldc + j] = 1234.5f;
    clef_test_fcopy(C0, C, nc);
    clef_test_ref_gemm(M, N, K, Ad, lda, l == TN, Bd, ldb, l == NT, want, N,
                       bound);
    scalar_of(l)(M, N, K, A, lda, B, ldb, C, ldc, acc);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const size_t o = (size_t)i * N + j;
            const double c0 = acc ? C0[(size_t)i * ldc + j] : 0.0;
            got[o] = C[(size_t)i * ldc + j];
            // one rounding of the sum to float (the double sums differ by
            // far less), and one more when it is added to C
            bound[o] = CLEF_TEST_EPS * fabs(want[o]) + 1e-30 +
                       (acc ? CLEF_TEST_EPS * (fabs(want[o] + c0)) : 0.0);
            want[o] += c0;
        }
    bool ok = clef_test_within(got, want, bound, (size_t)M * N);
    for (int i = 0; i < M && ok; i++)
        for (int j = N; j < ldc; j++)
            if (C[(size_t)i * ldc + j] != 1234.5f)
                ok = false;
    free(A), free(B), free(C), free(C0), free(Ad), free(Bd), free(want);
    free(bound), free(got);
    return ok;
}

Test(gemm_bf16, scalar_against_a_double_product)
{
    static const int ms[] = {1, 2, 15, 16, 17, 31, 32, 33};
    static const int ks[] = {1, 2, 3, 31, 32, 33, 64, 65, 300};
    uint64_t rng = 0x5ca1au;
    for (int l = NT; l <= TN; l++)
        for (int a = 0; a < 8; a++)
            for (int b = 0; b < 8; b += 3)
                for (int k = 0; k < 9; k++) {
                    const int acc = (a + b + k) & 1;
                    cr_assert(
                        ref_case((layout)l, ms[a], ms[b] + 1, ks[k], acc, &rng),
                        "%s M=%d N=%d K=%d accumulate=%d", lname[l], ms[a],
                        ms[b] + 1, ks[k], acc);
                }
}

Test(gemm_bf16, scalar_k_zero)
{
    for (int l = NT; l <= TN; l++) {
        float C[6] = {1, 2, 3, 4, 5, 6};
        uint16_t A[4] = {0}, B[4] = {0};
        scalar_of((layout)l)(2, 3, 0, A, 2, B, 3, C, 3, 1);
        cr_expect(C[0] == 1 && C[5] == 6, "%s: accumulate 1 keeps C", lname[l]);
        scalar_of((layout)l)(2, 3, 0, A, 2, B, 3, C, 3, 0);
        for (int i = 0; i < 6; i++)
            cr_expect_eq(C[i], 0.0f, "%s: accumulate 0 gives 0", lname[l]);
    }
}

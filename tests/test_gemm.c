// GEMM (gemm_nt, gemm_nn, gemm_tn) of the scalar backend against a double
// reference: every (M, N, K) in {1..17, 31, 33, 64, 65}³, accumulate 0 and 1,
// leading dimensions wider than the rows they hold.
//
// Tolerance: per element (K + 2) FLT_EPSILON · Σ_k |a_ik b_kj| (the float dot
// product's error bound) + 2 FLT_EPSILON · |C_before| when accumulating.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int sizes[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                            12, 13, 14, 15, 16, 17, 31, 33, 64, 65};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define MAXS 65
#define PAD_A 3 // extra floats per row of A, B, C (ld > width)
#define PAD_B 5
#define PAD_C 2
#define SENTINEL 1234.5f

typedef enum { NT, NN, TN } layout;

typedef struct gemm_bufs {
    float *A, *B, *C, *C0;
    double *Ad, *Bd, *Cd, *bound;
} gemm_bufs;

static gemm_bufs bufs_alloc(void)
{
    size_t big = (size_t)(MAXS + 8) * (MAXS + 8);
    gemm_bufs b = {clef_test_falloc(big), clef_test_falloc(big),
                   clef_test_falloc(big), clef_test_falloc(big),
                   clef_test_dalloc(big), clef_test_dalloc(big),
                   clef_test_dalloc(big), clef_test_dalloc(big)};
    return b;
}

static void bufs_free(gemm_bufs *b)
{
    free(b->A), free(b->B), free(b->C), free(b->C0);
    free(b->Ad), free(b->Bd), free(b->Cd), free(b->bound);
}

// Runs one case; returns false (after printing the mismatch) on failure.
static bool gemm_case(layout lay, int M, int N, int K, int acc, gemm_bufs *b,
                      uint64_t *rng)
{
    // stored shapes: nt A (M,K) B (N,K); nn A (M,K) B (K,N); tn A (K,M) B (K,N)
    int arows = lay == TN ? K : M, acols = lay == TN ? M : K;
    int brows = lay == NT ? N : K, bcols = lay == NT ? K : N;
    int lda = acols + PAD_A, ldb = bcols + PAD_B, ldc = N + PAD_C;

    clef_test_fill_uniform(b->A, (size_t)arows * lda, -1.0f, 1.0f, rng);
    clef_test_fill_uniform(b->B, (size_t)brows * ldb, -1.0f, 1.0f, rng);
    if (acc)
        clef_test_fill_uniform(b->C, (size_t)M * ldc, -2.0f, 2.0f, rng);
    else
        clef_test_fill_const(b->C, (size_t)M * ldc, NAN); // must be ignored
    for (int i = 0; i < M; i++) // the padding of C must stay untouched
        for (int j = N; j < ldc; j++)
            b->C[(size_t)i * ldc + j] = SENTINEL;
    clef_test_fcopy(b->C0, b->C, (size_t)M * ldc);

    clef_test_to_double(b->A, b->Ad, (size_t)arows * lda);
    clef_test_to_double(b->B, b->Bd, (size_t)brows * ldb);
    clef_test_ref_gemm(M, N, K, b->Ad, lda, lay == TN, b->Bd, ldb, lay == NT,
                       b->Cd, N, b->bound);

    clef_gemm_fn fn = lay == NT   ? clef_scalar_kernels.gemm_nt
                      : lay == NN ? clef_scalar_kernels.gemm_nn
                                  : clef_scalar_kernels.gemm_tn;
    fn(M, N, K, b->A, lda, b->B, ldb, b->C, ldc, acc);

    float *got = clef_test_falloc((size_t)M * N);
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            size_t o = (size_t)i * N + j;
            float c0 = b->C0[(size_t)i * ldc + j];
            got[o] = b->C[(size_t)i * ldc + j];
            b->bound[o] = (K + 2) * CLEF_TEST_EPS * b->bound[o];
            if (acc) {
                b->Cd[o] += c0;
                b->bound[o] += 2 * CLEF_TEST_EPS * fabs(c0);
            }
        }
    }
    bool ok = clef_test_within(got, b->Cd, b->bound, (size_t)M * N);
    free(got);
    for (int i = 0; i < M && ok; i++)
        for (int j = N; j < ldc; j++)
            if (b->C[(size_t)i * ldc + j] != SENTINEL) {
                fprintf(stderr, "C padding written at (%d, %d)\n", i, j);
                ok = false;
            }
    return ok;
}

static void gemm_all_shapes(layout lay, const char *name)
{
    uint64_t rng = 0x6e6d6d00u + lay;
    gemm_bufs b = bufs_alloc();
    for (int mi = 0; mi < NSIZES; mi++)
        for (int ni = 0; ni < NSIZES; ni++)
            for (int ki = 0; ki < NSIZES; ki++)
                for (int acc = 0; acc <= 1; acc++) {
                    int M = sizes[mi], N = sizes[ni], K = sizes[ki];
                    bool ok = gemm_case(lay, M, N, K, acc, &b, &rng);
                    if (!ok)
                        bufs_free(&b);
                    cr_assert(ok, "%s M=%d N=%d K=%d accumulate=%d", name, M, N,
                              K, acc);
                }
    bufs_free(&b);
}

Test(gemm, nt_all_shapes)
{
    gemm_all_shapes(NT, "gemm_nt");
}
Test(gemm, nn_all_shapes)
{
    gemm_all_shapes(NN, "gemm_nn");
}
Test(gemm, tn_all_shapes)
{
    gemm_all_shapes(TN, "gemm_tn");
}

// The three layouts are one product seen three ways: with A, B and their
// transposes stored explicitly, nt, nn and tn must give bit-identical C (the
// scalar reference sums over k in the same order in all three).
Test(gemm, layouts_agree)
{
    uint64_t rng = 77;
    int M = 13, N = 17, K = 31;
    float *A = clef_test_falloc((size_t)M * K),
          *At = clef_test_falloc((size_t)K * M);
    float *B = clef_test_falloc((size_t)K * N),
          *Bt = clef_test_falloc((size_t)N * K);
    float *C1 = clef_test_falloc((size_t)M * N),
          *C2 = clef_test_falloc((size_t)M * N);
    float *C3 = clef_test_falloc((size_t)M * N);
    clef_test_fill_uniform(A, (size_t)M * K, -1, 1, &rng);
    clef_test_fill_uniform(B, (size_t)K * N, -1, 1, &rng);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            At[(size_t)k * M + i] = A[(size_t)i * K + k];
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            Bt[(size_t)j * K + k] = B[(size_t)k * N + j];
    clef_scalar_kernels.gemm_nt(M, N, K, A, K, Bt, K, C1, N, 0);
    clef_scalar_kernels.gemm_nn(M, N, K, A, K, B, N, C2, N, 0);
    clef_scalar_kernels.gemm_tn(M, N, K, At, M, B, N, C3, N, 0);
    cr_assert(clef_test_close(C2, C1, (size_t)M * N, 0, 0), "nn != nt");
    cr_assert(clef_test_close(C3, C1, (size_t)M * N, 0, 0), "tn != nt");
    free(A), free(At), free(B), free(Bt), free(C1), free(C2), free(C3);
}

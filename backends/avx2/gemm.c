// AVX2 + FMA GEMM: 6x16 ymm microkernel (12 accumulators, 2 B vectors, one
// broadcast = 15 of 16 registers), packing and blocking in tmpl_gemm.h,
// small-shape path without packing.
//   clef_f32_gemm_nt_6x16__avx2  C (M,N) [+]= A (M,K) · B (N,K)ᵀ
//   clef_f32_gemm_nn_6x16__avx2  C (M,N) [+]= A (M,K) · B (K,N)
//   clef_f32_gemm_tn_6x16__avx2  C (M,N) [+]= A (K,M)ᵀ · B (K,N)
#include "vec.h"

#define GEMM_MR 6
#define GEMM_NR 16
#define GEMM_DOT_R 2       // small nt: 2x4 dot products, 8 ymm accumulators
#define GEMM_ROWS_2V_MAX 4 // small nn/tn: 2·4 accumulators + 3 of 16 ymm

// C (6,16) [+]= Σ_k a[k] (6) ⊗ b[k] (16); a, b packed panels.
// (the microkernel as laid out by hand)
// clang-format off
static void gemm_ukr(int kc, const float *restrict a, const float *restrict b,
                     float *restrict c, int ldc, int accum)
{
#define DECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
    DECL(0) DECL(1) DECL(2) DECL(3) DECL(4) DECL(5)
#undef DECL
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#define ROW(i)                                                                 \
    {                                                                          \
        __m256 ai = _mm256_broadcast_ss(a + (i));                              \
        c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);                            \
        c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);                            \
    }
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
        a += GEMM_MR;
        b += GEMM_NR;
    }
#define STORE(i)                                                               \
    {                                                                          \
        float *ci = c + (size_t)(i) * ldc;                                     \
        if (accum) {                                                           \
            c##i##0 = _mm256_add_ps(_mm256_loadu_ps(ci), c##i##0);             \
            c##i##1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), c##i##1);         \
        }                                                                      \
        _mm256_storeu_ps(ci, c##i##0);                                         \
        _mm256_storeu_ps(ci + 8, c##i##1);                                     \
    }
    STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)
#undef STORE
}
// clang-format on

// Row remainders use the full tile: with MR = 6 the waste is small.
static void gemm_ukr_rows(int kc, const float *a, const float *b, float *c,
                          int ldc, int accum, int mr)
{
    (void)mr;
    gemm_ukr(kc, a, b, c, ldc, accum);
}

#include "backends/x86/tmpl_gemm.h"

// clef_f32_gemm_nt_6x16__avx2's routing on a Bᵀ transposed beforehand
// (the prepack table's gemm_nt_bt): its small path, else -1.
static int gemm_nt_bt_entry(int M, int N, int K, const float *A, int lda,
                            const float *Bt, int ldbt, float *C, int ldc,
                            int accumulate)
{
    if (!gemm_is_small(M, N, K))
        return -1;
    return gemm_nt_bt_small(M, N, K, A, lda, Bt, ldbt, C, ldc, accumulate);
}

GEMM_PREPACK_DEFINE(6x16__avx2)

void clef_f32_gemm_nt_6x16__avx2(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    gemm_layout L = {0, 1};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        if (gemm_nt_small_t(M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
            gemm_nt_small(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_nn_6x16__avx2(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    gemm_layout L = {0, 0};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_rows_small_nn(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_tn_6x16__avx2(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    gemm_layout L = {1, 0};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_rows_small_tn(M, N, K, A, (size_t)lda, B, ldb, C, ldc, accumulate);
}

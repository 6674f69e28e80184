// AVX-512 GEMM: 14x32 zmm microkernel (28 accumulators, 2 B vectors, one
// broadcast = 31 of 32 registers), packing and blocking in
// backends/avx2/tmpl_gemm.h, small-shape path without packing.
//   clef_f32_gemm_nt_14x32__avx512  C (M,N) [+]= A (M,K) · B (N,K)ᵀ
//   clef_f32_gemm_nn_14x32__avx512  C (M,N) [+]= A (M,K) · B (K,N)
//   clef_f32_gemm_tn_14x32__avx512  C (M,N) [+]= A (K,M)ᵀ · B (K,N)
#include "vec.h"

#define GEMM_MR 14
#define GEMM_NR 32

// C (14,32) [+]= Σ_k a[k] (14) ⊗ b[k] (32); a, b packed panels.
static void gemm_ukr(int kc, const float *restrict a, const float *restrict b,
                     float *restrict c, int ldc, int accum)
{
#define DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
    DECL(0) DECL(1) DECL(2) DECL(3) DECL(4) DECL(5) DECL(6)
    DECL(7) DECL(8) DECL(9) DECL(10) DECL(11) DECL(12) DECL(13)
#undef DECL
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#define ROW(i)                                                                 \
    {                                                                          \
        __m512 ai = _mm512_set1_ps(a[i]);                                      \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                            \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                            \
    }
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6)
        ROW(7) ROW(8) ROW(9) ROW(10) ROW(11) ROW(12) ROW(13)
#undef ROW
        a += GEMM_MR;
        b += GEMM_NR;
    }
#define STORE(i)                                                               \
    {                                                                          \
        float *ci = c + (size_t)(i) * ldc;                                     \
        if (accum) {                                                           \
            c##i##0 = _mm512_add_ps(_mm512_loadu_ps(ci), c##i##0);             \
            c##i##1 = _mm512_add_ps(_mm512_loadu_ps(ci + 16), c##i##1);        \
        }                                                                      \
        _mm512_storeu_ps(ci, c##i##0);                                         \
        _mm512_storeu_ps(ci + 16, c##i##1);                                    \
    }
    STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5) STORE(6)
    STORE(7) STORE(8) STORE(9) STORE(10) STORE(11) STORE(12) STORE(13)
#undef STORE
}

#include "../avx2/tmpl_gemm.h"

void clef_f32_gemm_nt_14x32__avx512(int M, int N, int K, const float *A, int lda,
                                    const float *B, int ldb, float *C, int ldc,
                                    int accumulate)
{
    gemm_layout L = {0, 1};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_nt_small(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_nn_14x32__avx512(int M, int N, int K, const float *A, int lda,
                                    const float *B, int ldb, float *C, int ldc,
                                    int accumulate)
{
    gemm_layout L = {0, 0};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_rows_small(M, N, K, A, (size_t)lda, 1, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_tn_14x32__avx512(int M, int N, int K, const float *A, int lda,
                                    const float *B, int ldb, float *C, int ldc,
                                    int accumulate)
{
    gemm_layout L = {1, 0};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_rows_small(M, N, K, A, 1, (size_t)lda, B, ldb, C, ldc, accumulate);
}

// The small nt path as dot products (backends/x86/tmpl_gemm.h, which
// includes this file; not a header of its own).

// C (M,N) [+]= A (M,K) · B (N,K)ᵀ as dot products: tiles of R rows × NB
// columns hold R·NB vector accumulators, so each group of NB rows of B is
// read from memory once for every GEMM_DOT_R rows of A (the batch's few
// option or question rows against a large weight: bandwidth-bound). Every
// element sums K in VW-wide chunks, then the masked tail, then one
// horizontal sum, whatever R, NB or the thread count.
#define GEMM_DOT(R, NB)                                                        \
    static void dot_##R##x##NB(int K, const float *A, int lda, const float *B, \
                               int ldb, float *C, int ldc, int accum)          \
    {                                                                          \
        vf s[R][NB];                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                    \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) s[r][c] =     \
                vf_zero();                                                     \
        int kv = K / VW * VW, kt = K - kv;                                     \
        for (int k = 0; k < kv; k += VW) {                                     \
            vf b[NB];                                                          \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) b[c] =        \
                vf_load(B + (size_t)c * ldb + k);                              \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                \
            {                                                                  \
                vf a = vf_load(A + (size_t)r * lda + k);                       \
                _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) s[r][c] = \
                    vf_fma(a, b[c], s[r][c]);                                  \
            }                                                                  \
        }                                                                      \
        if (kt) {                                                              \
            vf b[NB];                                                          \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) b[c] =        \
                vf_loadn(B + (size_t)c * ldb + kv, kt);                        \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                \
            {                                                                  \
                vf a = vf_loadn(A + (size_t)r * lda + kv, kt);                 \
                _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) s[r][c] = \
                    vf_fma(a, b[c], s[r][c]);                                  \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                    \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++)               \
        {                                                                      \
            float v = vf_hsum(s[r][c]);                                        \
            float *cp = C + (size_t)r * ldc + c;                               \
            *cp = accum ? *cp + v : v;                                         \
        }                                                                      \
    }
// (instances without semicolons, then the declaration after them)
// clang-format off
GEMM_DOT(1, 4) GEMM_DOT(2, 4) GEMM_DOT(3, 4) GEMM_DOT(4, 4) GEMM_DOT(5, 4)
GEMM_DOT(6, 4) GEMM_DOT(1, 1) GEMM_DOT(2, 1) GEMM_DOT(3, 1) GEMM_DOT(4, 1)
GEMM_DOT(5, 1) GEMM_DOT(6, 1)
typedef void (*gemm_dot_fn)(int K, const float *A, int lda, const float *B,
                            int ldb, float *C, int ldc, int accum);
// clang-format on
static const gemm_dot_fn dot_x4[7] = {NULL,    dot_1x4, dot_2x4, dot_3x4,
                                      dot_4x4, dot_5x4, dot_6x4};
static const gemm_dot_fn dot_x1[7] = {NULL,    dot_1x1, dot_2x1, dot_3x1,
                                      dot_4x1, dot_5x1, dot_6x1};

// One group of up to 4 columns of C, every row.
static void gemm_nt_group(int M, int K, const float *A, int lda, const float *B,
                          int ldb, float *C, int ldc, int accum, int j, int nb)
{
    for (int i = 0; i < M; i += GEMM_DOT_R) {
        int R = M - i < GEMM_DOT_R ? M - i : GEMM_DOT_R;
        const float *a = A + (size_t)i * lda;
        float *c = C + (size_t)i * ldc + j;
        if (nb == 4) {
            dot_x4[R](K, a, lda, B + (size_t)j * ldb, ldb, c, ldc, accum);
            continue;
        }
        for (int jj = 0; jj < nb; jj++)
            dot_x1[R](K, a, lda, B + (size_t)(j + jj) * ldb, ldb, c + jj, ldc,
                      accum);
    }
}

// Column groups are independent outputs: they split across threads once the
// product is worth an OpenMP region.
static void gemm_nt_small(int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float *C, int ldc, int accum)
{
    const int ngrp = (N + 3) / 4;
    const int nth = gemm_threads(M, N, K);
    if (nth > 1 && ngrp > 1) {
#pragma omp parallel for schedule(static) num_threads(nth)
        for (int g = 0; g < ngrp; g++)
            gemm_nt_group(M, K, A, lda, B, ldb, C, ldc, accum, 4 * g,
                          N - 4 * g < 4 ? N - 4 * g : 4);
        return;
    }
    for (int g = 0; g < ngrp; g++)
        gemm_nt_group(M, K, A, lda, B, ldb, C, ldc, accum, 4 * g,
                      N - 4 * g < 4 ? N - 4 * g : 4);
}

// GEMM, scalar reference: C (M,N) = [C +] op(A) · op(B).
// Each output element owns one dot product, accumulated in float from zero in
// increasing k, then stored (accumulate 0) or added to C once (accumulate 1).
#include "scalar.h"

static inline void store(float *c, float acc, int accumulate)
{
    *c = accumulate ? *c + acc : acc;
}

// A (M,K) ld lda, B (N,K) ld ldb -> C (M,N) ld ldc: C = A·Bᵀ
void clef_f32_gemm_nt__scalar(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate)
{
    for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * lda; // row i of A (K)
        for (int j = 0; j < N; j++) {
            const float *b = B + (size_t)j * ldb; // row j of B (K)
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                acc += a[k] * b[k];
            store(&C[(size_t)i * ldc + j], acc, accumulate);
        }
    }
}

// The nn and tn layouts read B by rows: a block of NB outputs of row i keeps
// its NB running sums while k advances, so B streams through contiguous
// memory. Each sum still starts at zero and adds its terms in increasing k:
// the same bits as one dot product per element.
#define NB 64

// A (M,K) ld lda, B (K,N) ld ldb -> C (M,N) ld ldc: C = A·B
void clef_f32_gemm_nn__scalar(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate)
{
    for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * lda; // row i of A (K)
        for (int j0 = 0; j0 < N; j0 += NB) {
            const int nb = N - j0 < NB ? N - j0 : NB;
            float acc[NB] = {0};
            for (int k = 0; k < K; k++) {
                const float *b = B + (size_t)k * ldb + j0; // row k of B
                for (int j = 0; j < nb; j++)
                    acc[j] += a[k] * b[j];
            }
            for (int j = 0; j < nb; j++)
                store(&C[(size_t)i * ldc + j0 + j], acc[j], accumulate);
        }
    }
}

// A (K,M) ld lda, B (K,N) ld ldb -> C (M,N) ld ldc: C = Aᵀ·B
void clef_f32_gemm_tn__scalar(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate)
{
    for (int i = 0; i < M; i++) {
        for (int j0 = 0; j0 < N; j0 += NB) {
            const int nb = N - j0 < NB ? N - j0 : NB;
            float acc[NB] = {0};
            for (int k = 0; k < K; k++) {
                const float aki = A[(size_t)k * lda + i];  // A (K,M) column i
                const float *b = B + (size_t)k * ldb + j0; // row k of B
                for (int j = 0; j < nb; j++)
                    acc[j] += aki * b[j];
            }
            for (int j = 0; j < nb; j++)
                store(&C[(size_t)i * ldc + j0 + j], acc[j], accumulate);
        }
    }
}

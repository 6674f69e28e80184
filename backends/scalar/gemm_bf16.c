// bf16 GEMM and the float -> bf16 conversion, scalar reference.
// C (M,N) = [C +] op(A) · op(B) with A, B bf16 bit patterns: each output
// element sums the exact products of the bf16 values (a bf16 has 8
// significant bits, so each product is exact in double) in double, in
// increasing k, rounds the sum to float once, then stores it (accumulate 0)
// or adds it to C in float (accumulate 1), as the f32 reference does.
#include "scalar.h"

#include <string.h>

static inline double bf(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

static inline void store(float *c, double acc, int accumulate)
{
    *c = accumulate ? *c + (float)acc : (float)acc;
}

// A (M,K) ld lda, B (N,K) ld ldb -> C (M,N) ld ldc: C = A·Bᵀ
void clef_bf16_gemm_nt__scalar(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    for (int i = 0; i < M; i++) {
        const uint16_t *a = A + (size_t)i * lda; // row i of A (K)
        for (int j = 0; j < N; j++) {
            const uint16_t *b = B + (size_t)j * ldb; // row j of B (K)
            double acc = 0.0;
            for (int k = 0; k < K; k++)
                acc += bf(a[k]) * bf(b[k]);
            store(&C[(size_t)i * ldc + j], acc, accumulate);
        }
    }
}

// The nn and tn layouts read B by rows: NB running sums per row of C (each
// still its own sum in increasing k: the same bits as one dot product).
#define NB 64

// A (M,K) ld lda, B (K,N) ld ldb -> C (M,N) ld ldc: C = A·B
void clef_bf16_gemm_nn__scalar(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    for (int i = 0; i < M; i++) {
        const uint16_t *a = A + (size_t)i * lda;
        for (int j0 = 0; j0 < N; j0 += NB) {
            const int nb = N - j0 < NB ? N - j0 : NB;
            double acc[NB] = {0};
            for (int k = 0; k < K; k++) {
                const double ak = bf(a[k]);
                const uint16_t *b = B + (size_t)k * ldb + j0;
                for (int j = 0; j < nb; j++)
                    acc[j] += ak * bf(b[j]);
            }
            for (int j = 0; j < nb; j++)
                store(&C[(size_t)i * ldc + j0 + j], acc[j], accumulate);
        }
    }
}

// A (K,M) ld lda, B (K,N) ld ldb -> C (M,N) ld ldc: C = Aᵀ·B
void clef_bf16_gemm_tn__scalar(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    for (int i = 0; i < M; i++) {
        for (int j0 = 0; j0 < N; j0 += NB) {
            const int nb = N - j0 < NB ? N - j0 : NB;
            double acc[NB] = {0};
            for (int k = 0; k < K; k++) {
                const double aki = bf(A[(size_t)k * lda + i]);
                const uint16_t *b = B + (size_t)k * ldb + j0;
                for (int j = 0; j < nb; j++)
                    acc[j] += aki * bf(b[j]);
            }
            for (int j = 0; j < nb; j++)
                store(&C[(size_t)i * ldc + j0 + j], acc[j], accumulate);
        }
    }
}

// Round to nearest even on the bits: add 0x7fff plus the lowest kept bit,
// keep the top half. Exact for normals and denormals alike; a carry out of
// the largest finite values gives ±Inf, as IEEE rounding does. NaN: the top
// half with the quiet bit set (a NaN whose payload sits in the low half
// would otherwise turn into Inf).
void clef_cvt_f32_bf16__scalar(size_t n, const float *x, uint16_t *y)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            y[i] = (uint16_t)((u >> 16) | 0x0040u);
        else
            y[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

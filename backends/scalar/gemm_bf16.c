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

// Value i of an operand: bf16 bits, or a float32 rounded to bf16 (f32)
// with clef_cvt_f32_bf16__scalar.
static inline double val(const void *p, int f32, size_t i)
{
    if (!f32)
        return bf(((const uint16_t *)p)[i]);
    uint16_t h;
    clef_cvt_f32_bf16__scalar(1, (const float *)p + i, &h);
    return bf(h);
}

static inline void store(float *c, double acc, int accumulate)
{
    *c = accumulate ? *c + (float)acc : (float)acc;
}

// A (M,K) ld lda, B (N,K) ld ldb -> C (M,N) ld ldc: C = A·Bᵀ
static void nt(int M, int N, int K, const void *A, int lda, const void *B,
               int ldb, float *C, int ldc, int accumulate, int f32)
{
    for (int i = 0; i < M; i++) {
        const size_t a = (size_t)i * lda; // row i of A (K)
        for (int j = 0; j < N; j++) {
            const size_t b = (size_t)j * ldb; // row j of B (K)
            double acc = 0.0;
            for (int k = 0; k < K; k++)
                acc += val(A, f32, a + k) * val(B, f32, b + k);
            store(&C[(size_t)i * ldc + j], acc, accumulate);
        }
    }
}

// The nn and tn layouts read B by rows: NB running sums per row of C (each
// still its own sum in increasing k: the same bits as one dot product).
// ta 0: A (M,K) ld lda, C = A·B; 1: A (K,M), C = Aᵀ·B. B (K,N) ld ldb.
#define NB 64
static void xn(int ta, int M, int N, int K, const void *A, int lda,
               const void *B, int ldb, float *C, int ldc, int accumulate,
               int f32)
{
    for (int i = 0; i < M; i++) {
        for (int j0 = 0; j0 < N; j0 += NB) {
            const int nb = N - j0 < NB ? N - j0 : NB;
            double acc[NB] = {0};
            for (int k = 0; k < K; k++) {
                const double aik =
                    val(A, f32, ta ? (size_t)k * lda + i : (size_t)i * lda + k);
                const size_t b = (size_t)k * ldb + j0;
                for (int j = 0; j < nb; j++)
                    acc[j] += aik * val(B, f32, b + j);
            }
            for (int j = 0; j < nb; j++)
                store(&C[(size_t)i * ldc + j0 + j], acc[j], accumulate);
        }
    }
}

void clef_bf16_gemm_nt__scalar(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate, 0);
}

void clef_bf16_gemm_nn__scalar(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    xn(0, M, N, K, A, lda, B, ldb, C, ldc, accumulate, 0);
}

void clef_bf16_gemm_tn__scalar(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    xn(1, M, N, K, A, lda, B, ldb, C, ldc, accumulate, 0);
}

// The same on float32 operands rounded as read (kernels.h clef_bf16_f32ops).
void clef_bf16_gemm_nt_f32ops__scalar(int M, int N, int K, const float *A,
                                      int lda, const float *B, int ldb,
                                      float *C, int ldc, int accumulate)
{
    nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate, 1);
}

void clef_bf16_gemm_nn_f32ops__scalar(int M, int N, int K, const float *A,
                                      int lda, const float *B, int ldb,
                                      float *C, int ldc, int accumulate)
{
    xn(0, M, N, K, A, lda, B, ldb, C, ldc, accumulate, 1);
}

void clef_bf16_gemm_tn_f32ops__scalar(int M, int N, int K, const float *A,
                                      int lda, const float *B, int ldb,
                                      float *C, int ldc, int accumulate)
{
    xn(1, M, N, K, A, lda, B, ldb, C, ldc, accumulate, 1);
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

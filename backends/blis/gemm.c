// GEMM through BLIS's typed expert API, bli_sgemm_ex, with general strides:
// row-major operands, ld in floats.
//   gemm_nt  op(A) = A (M,K): rs lda, cs 1   op(B) = Bᵀ (K,N): rs 1, cs ldb
//   gemm_nn  op(A) = A (M,K): rs lda, cs 1   op(B) = B (K,N):  rs ldb, cs 1
//   gemm_tn  op(A) = Aᵀ (M,K): rs 1, cs lda  op(B) = B (K,N):  rs ldb, cs 1
//   C (M,N): rs ldc, cs 1; beta = accumulate (beta 0 never reads C)
#include <blis.h>
#include <omp.h>

#include "blis_backend.h"
#include "cpu/cpu.h"

#define SUP_MAX_FLOPS 2097152.0 // 2^21: the "small" shape class (tune.h)
// Below 2^18 flops a team of threads costs more than it saves
// (docs/PERF-NOTES.md, "Library backends").
#define SERIAL_FLOPS 262144.0

// OpenMP's count, capped at the hardware threads: BLIS's barriers spin, so
// an oversubscribed team (--threads 8 on 2 cores) waits for descheduled
// threads at every barrier (the thread-invariance test ran 60x slower).
// BLIS splits a GEMM's output, never its K, so the cap changes no result.
int clef_blis_call_threads(double flops)
{
    if (omp_in_parallel() || flops < SERIAL_FLOPS)
        return 1;
    int n = omp_get_max_threads(), pus = clef_cpu_get()->pus;
    return pus > 0 && n > pus ? pus : n;
}

static void gemm_blis(int M, int N, int K, const float *A, inc_t rsa, inc_t csa,
                      const float *B, inc_t rsb, inc_t csb, float *C, int ldc,
                      int accumulate)
{
    if (M <= 0 || N <= 0)
        return;
    float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(clef_blis_call_threads(2.0 * M * N * K), &rntm);
    // BLIS's "sup" path (small/skinny, unpacked) wins only in the small
    // shape class (docs/PERF-NOTES.md, "Library backends").
    if (2.0 * M * N * K >= SUP_MAX_FLOPS)
        bli_rntm_disable_l3_sup(&rntm);
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &alpha,
                 (float *)A, rsa, csa, (float *)B, rsb, csb, &beta, C, ldc, 1,
                 NULL, &rntm);
}

void clef_f32_gemm_nt__blis(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate)
{
    gemm_blis(M, N, K, A, lda, 1, B, 1, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_nn__blis(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate)
{
    gemm_blis(M, N, K, A, lda, 1, B, ldb, 1, C, ldc, accumulate);
}

void clef_f32_gemm_tn__blis(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate)
{
    gemm_blis(M, N, K, A, 1, lda, B, ldb, 1, C, ldc, accumulate);
}

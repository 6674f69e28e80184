// bf16 GEMMs on NEON (kernels.h, gemm_bf16_*; no BFMMLA kernels here): the
// operands widened to float, then this backend's fp32 GEMMs
// (backends/gemm_bf16_widen.h); named by the fp32 microkernel they run.
#include "neon.h"

#include "backends/gemm_bf16_widen.h"
#include "backends/scalar/scalar.h"

void clef_bf16_gemm_nt_8x12__neon(int M, int N, int K, const uint16_t *A,
                                  int lda, const uint16_t *B, int ldb,
                                  float *C, int ldc, int accumulate)
{
    bf16_widen_gemm(0, 1, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                    clef_f32_gemm_nt_8x12__neon, clef_bf16_gemm_nt__scalar);
}

void clef_bf16_gemm_nn_8x12__neon(int M, int N, int K, const uint16_t *A,
                                  int lda, const uint16_t *B, int ldb,
                                  float *C, int ldc, int accumulate)
{
    bf16_widen_gemm(0, 0, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                    clef_f32_gemm_nn_8x12__neon, clef_bf16_gemm_nn__scalar);
}

void clef_bf16_gemm_tn_8x12__neon(int M, int N, int K, const uint16_t *A,
                                  int lda, const uint16_t *B, int ldb,
                                  float *C, int ldc, int accumulate)
{
    bf16_widen_gemm(1, 0, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                    clef_f32_gemm_tn_8x12__neon, clef_bf16_gemm_tn__scalar);
}

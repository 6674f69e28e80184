// bf16 GEMMs on NEON (kernels.h, gemm_bf16_*; no BFMMLA kernels here): the
// operands widened to float, then this backend's fp32 GEMMs
// (backends/gemm_bf16_widen.h); named by the fp32 microkernel they run.
#include "neon.h"

#include "backends/gemm_bf16_widen.h"
#include "backends/scalar/scalar.h"

CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_nt_8x12__neon, 0, 1,
                     clef_f32_gemm_nt_8x12__neon, clef_bf16_gemm_nt__scalar)
CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_nn_8x12__neon, 0, 0,
                     clef_f32_gemm_nn_8x12__neon, clef_bf16_gemm_nn__scalar)
CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_tn_8x12__neon, 1, 0,
                     clef_f32_gemm_tn_8x12__neon, clef_bf16_gemm_tn__scalar)

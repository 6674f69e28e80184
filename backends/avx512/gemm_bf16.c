// bf16 GEMMs for CPUs with AVX-512 but no AVX512-BF16 (kernels.h, gemm_bf16_*):
// the operands widened to float, then this backend's fp32 GEMMs
// (backends/gemm_bf16_widen.h); named by the fp32 microkernel they run.
#include "avx512.h"

#include "backends/gemm_bf16_widen.h"
#include "backends/scalar/scalar.h"

CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_nt_14x32__avx512, 0, 1,
                     clef_f32_gemm_nt_14x32__avx512, clef_bf16_gemm_nt__scalar)
CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_nn_14x32__avx512, 0, 0,
                     clef_f32_gemm_nn_14x32__avx512, clef_bf16_gemm_nn__scalar)
CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_tn_14x32__avx512, 1, 0,
                     clef_f32_gemm_tn_14x32__avx512, clef_bf16_gemm_tn__scalar)

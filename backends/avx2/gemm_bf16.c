// bf16 GEMMs for CPUs with AVX2 and no AVX-512 (kernels.h, gemm_bf16_*): the
// operands widened to float, then this backend's fp32 GEMMs
// (backends/gemm_bf16_widen.h); named by the fp32 microkernel they run.
#include "avx2.h"

#include "backends/gemm_bf16_widen.h"
#include "backends/scalar/scalar.h"

CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_nt_6x16__avx2, 0, 1,
                     clef_f32_gemm_nt_6x16__avx2, clef_bf16_gemm_nt__scalar)
CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_nn_6x16__avx2, 0, 0,
                     clef_f32_gemm_nn_6x16__avx2, clef_bf16_gemm_nn__scalar)
CLEF_BF16_WIDEN_GEMM(clef_bf16_gemm_tn_6x16__avx2, 1, 0,
                     clef_f32_gemm_tn_6x16__avx2, clef_bf16_gemm_tn__scalar)

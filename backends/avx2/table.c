// The avx2 backend's table, from the op list: every op, its kernel and
// its name (kernels.h, CLEF_KERNEL_ENTRY); its bf16 GEMMs run its fp32 ones
// on widened operands (gemm_bf16.c).
#include "avx2.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_KERNEL_ENTRY(op, sig, unit, avx2, CLEF_AVX2_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_KERNEL_NAME(op, sig, unit, avx2, CLEF_AVX2_GEMM_TILE)

clef_kernels clef_avx2_kernels = {
    .backend = "avx2",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
    .prepack = &clef_gemm_prepack_6x16__avx2,
};

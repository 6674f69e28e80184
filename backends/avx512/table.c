// The avx512 backend's table, from the op list: every op, its kernel and
// its name (kernels.h, CLEF_KERNEL_ENTRY); its bf16 GEMMs run its fp32 ones
// on widened operands (gemm_bf16.c).
#include "avx512.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_KERNEL_ENTRY(op, sig, unit, avx512, CLEF_AVX512_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_KERNEL_NAME(op, sig, unit, avx512, CLEF_AVX512_GEMM_TILE)

clef_kernels clef_avx512_kernels = {
    .backend = "avx512",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
    .prepack = &clef_gemm_prepack_14x32__avx512,
};

// The avx2 backend's table, from the op list: every op, its kernel and
// its name (kernels.h, CLEF_KERNEL_ENTRY); the bf16 GEMMs NULL (not this
// backend's: the registry fills them).
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

// The avx512_bf16 backend's table: its bf16 GEMMs (avx512_bf16.h), every
// other op NULL until the registry fills it (scheduler/registry.c).
#include "avx512_bf16.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_BF16_ENTRY(op, sig, unit, avx512bf16, CLEF_AVX512BF16_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_BF16_NAME(op, sig, unit, avx512bf16, CLEF_AVX512BF16_GEMM_TILE)

clef_kernels clef_avx512_bf16_table = {
    .backend = "avx512_bf16",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
};

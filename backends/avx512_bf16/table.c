// The avx512_bf16 backend's table: its bf16 GEMMs (avx512_bf16.h), every
// other op NULL until the registry fills it (scheduler/registry.c).
#include "avx512_bf16.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_BF16_ENTRY(op, sig, unit, avx512bf16, CLEF_AVX512BF16_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_BF16_NAME(op, sig, unit, avx512bf16, CLEF_AVX512BF16_GEMM_TILE)

const clef_bf16_f32ops clef_avx512_bf16_f32ops = {
    .name = "clef_bf16_gemm_*_f32ops_12x32__avx512bf16",
    .nt = clef_bf16_gemm_nt_f32ops_12x32__avx512bf16,
    .nn = clef_bf16_gemm_nn_f32ops_12x32__avx512bf16,
    .tn = clef_bf16_gemm_tn_f32ops_12x32__avx512bf16,
    .twin_nt = clef_bf16_gemm_nt_12x32__avx512bf16,
    .twin_nn = clef_bf16_gemm_nn_12x32__avx512bf16,
    .twin_tn = clef_bf16_gemm_tn_12x32__avx512bf16,
};

clef_kernels clef_avx512_bf16_table = {
    .backend = "avx512_bf16",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
    .f32ops = &clef_avx512_bf16_f32ops,
};

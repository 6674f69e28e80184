// The amx backend's table: its bf16 GEMMs (amx.h), every
// other op NULL until the registry fills it (scheduler/registry.c).
#include "amx.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_BF16_ENTRY(op, sig, unit, amx, CLEF_AMX_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_BF16_NAME(op, sig, unit, amx, CLEF_AMX_GEMM_TILE)

const clef_bf16_f32ops clef_amx_f32ops = {
    .name = "clef_bf16_gemm_*_f32ops_32x32__amx",
    .nt = clef_bf16_gemm_nt_f32ops_32x32__amx,
    .nn = clef_bf16_gemm_nn_f32ops_32x32__amx,
    .tn = clef_bf16_gemm_tn_f32ops_32x32__amx,
    .twin_nt = clef_bf16_gemm_nt_32x32__amx,
    .twin_nn = clef_bf16_gemm_nn_32x32__amx,
    .twin_tn = clef_bf16_gemm_tn_32x32__amx,
};

clef_kernels clef_amx_table = {
    .backend = "amx",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
    .f32ops = &clef_amx_f32ops,
};

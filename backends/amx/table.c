// The amx backend's table: its bf16 GEMMs (amx.h), every
// other op NULL until the registry fills it (scheduler/registry.c).
#include "amx.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_BF16_ENTRY(op, sig, unit, amx, CLEF_AMX_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_BF16_NAME(op, sig, unit, amx, CLEF_AMX_GEMM_TILE)

clef_kernels clef_amx_table = {
    .backend = "amx",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
};

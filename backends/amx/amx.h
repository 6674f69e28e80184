// The AMX backend: bf16 GEMMs on AMX tiles (_tile_dpbf16ps). Its table has
// the bf16 GEMMs only; the registry fills every other op with the
// dispatcher's choice (scheduler/registry.c). Only a process at the amx
// level (cpu/cpu.h: cpuid, XCR0 bits 17-18 and the XTILEDATA grant) may
// call them.
#ifndef CLEF_AMX_H
#define CLEF_AMX_H

#include "kernels.h"

// 32 rows × 32 columns of C per microkernel: 4 C tiles of 16×16 floats,
// 2 A tiles (16 rows × 32 k), 2 B tiles (16 k pairs × 16 columns).
#define CLEF_AMX_GEMM_TILE 32x32
#define CLEF_AMX_DECL(op, sig, unit, work)                                     \
    CLEF_BF16_DECL(op, sig, unit, amx, CLEF_AMX_GEMM_TILE)
CLEF_OPS(CLEF_AMX_DECL)

extern clef_kernels clef_amx_table;

#endif

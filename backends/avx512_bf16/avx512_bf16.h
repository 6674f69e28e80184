// The AVX512-BF16 backend: bf16 GEMMs on vdpbf16ps (for CPUs with
// AVX512-BF16 and no AMX, e.g. AMD Zen 4/5). Its table has the bf16 GEMMs
// only; the registry fills every other op with the dispatcher's choice
// (scheduler/registry.c). Only CPUs at the avx512_bf16 level (cpu/cpu.h)
// may call them.
#ifndef CLEF_AVX512_BF16_H
#define CLEF_AVX512_BF16_H

#include "kernels.h"

// 12 rows × 32 columns of C per microkernel: 24 zmm accumulators.
#define CLEF_AVX512BF16_GEMM_TILE 12x32
#define CLEF_AVX512BF16_DECL(op, sig, unit, work)                              \
    CLEF_BF16_DECL(op, sig, unit, avx512bf16, CLEF_AVX512BF16_GEMM_TILE)
CLEF_OPS(CLEF_AVX512BF16_DECL)

extern clef_kernels clef_avx512_bf16_table;

#endif

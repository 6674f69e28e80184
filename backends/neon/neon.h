// The NEON (AArch64 ASIMD) backend: one kernel per op of backends/kernels.h,
// named clef_f32_<op>__neon (the GEMMs carry their register tile:
// clef_f32_gemm_nt_8x12__neon), and the complete table clef_neon_kernels.
// Kernels live in backends/neon/<family>.c, vector helpers (exp, erf, Φ,
// tails) in backends/neon/vec.h. Built only for aarch64 targets, where ASIMD
// is baseline; the registry still checks getauxval(AT_HWCAP) & HWCAP_ASIMD
// (backends/registry.c). Contracts (shapes, overwrite vs accumulate) are
// those of backends/kernels.h; the scalar backend is the reference.
#ifndef CLEF_NEON_H
#define CLEF_NEON_H

#include <stddef.h>

#include "kernels.h"

// Every kernel, from the op list (the GEMMs on an 8x12 register tile: 24
// accumulators, 2 A + 3 B vectors).
#define CLEF_NEON_GEMM_TILE 8x12
#define CLEF_NEON_DECL(op, sig, unit, work)                                    \
    CLEF_KERNEL_DECL(op, sig, unit, neon, CLEF_NEON_GEMM_TILE)
CLEF_OPS(CLEF_NEON_DECL)
// erf itself, for accuracy checks (gelu.c)
void clef_f32_erf__neon(size_t n, const float *x, float *y);

// table.c: complete, every op works for every shape.
extern const clef_kernels clef_neon_kernels;

#endif

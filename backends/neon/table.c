// The neon backend's table, from the op list: every op, its kernel and
// its name (kernels.h, CLEF_KERNEL_ENTRY).
#include "neon.h"

#define ENTRY(op, sig, unit, work)                                             \
    CLEF_KERNEL_ENTRY(op, sig, unit, neon, CLEF_NEON_GEMM_TILE)
#define NAME(op, sig, unit, work)                                              \
    CLEF_KERNEL_NAME(op, sig, unit, neon, CLEF_NEON_GEMM_TILE)

const clef_kernels clef_neon_kernels = {
    .backend = "neon",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
};

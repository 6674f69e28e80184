// The neon backend's table, from the op list: every op, its kernel and
// its name (kernels.h, CLEF_KERNEL_ENTRY).
#include "neon.h"

#include "backends/scalar/scalar.h"

// cvt_f32_bf16 (no NEON kernel yet) takes the scalar reference's; the bf16
// GEMMs run the NEON fp32 GEMMs on widened operands (gemm_bf16.c).
#define ENTRY(op, sig, unit, work) NEON_ENTRY_##unit(op, sig, unit)
#define NAME(op, sig, unit, work) NEON_NAME_##unit(op, sig, unit)
#define NEON_ENTRY_F32(op, sig, unit)                                          \
    CLEF_KERNEL_ENTRY(op, sig, unit, neon, CLEF_NEON_GEMM_TILE)
#define NEON_NAME_F32(op, sig, unit)                                           \
    CLEF_KERNEL_NAME(op, sig, unit, neon, CLEF_NEON_GEMM_TILE)
#define NEON_ENTRY_SCALAR(op, sig, unit) .op = CLEF_SSYM(op, unit),
#define NEON_NAME_SCALAR(op, sig, unit) [CLEF_OP_##op] = CLEF_SSTR(op, unit),
#define NEON_ENTRY_gemm NEON_ENTRY_F32
#define NEON_ENTRY_flops NEON_ENTRY_F32
#define NEON_ENTRY_elems NEON_ENTRY_F32
#define NEON_ENTRY_bgemm NEON_ENTRY_F32
#define NEON_ENTRY_bcvt NEON_ENTRY_SCALAR
#define NEON_NAME_gemm NEON_NAME_F32
#define NEON_NAME_flops NEON_NAME_F32
#define NEON_NAME_elems NEON_NAME_F32
#define NEON_NAME_bgemm NEON_NAME_F32
#define NEON_NAME_bcvt NEON_NAME_SCALAR

const clef_kernels clef_neon_kernels = {
    .backend = "neon",
    CLEF_OPS(ENTRY).names = {CLEF_OPS(NAME)},
};

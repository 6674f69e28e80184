// The scalar reference backend's table: every op, its kernel and its name.
#include "scalar.h"

#define CLEF_SCALAR_ENTRY(op, sig, unit, work) .op = clef_f32_##op##__scalar,
#define CLEF_SCALAR_NAME(op, sig, unit, work)                                  \
    [CLEF_OP_##op] = "clef_f32_" #op "__scalar",

const clef_kernels clef_scalar_kernels = {
    .backend = "scalar",
    CLEF_OPS(CLEF_SCALAR_ENTRY).names = {CLEF_OPS(CLEF_SCALAR_NAME)},
};

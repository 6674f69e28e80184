// The scalar reference backend's table: every op, its kernel and its name.
#include "scalar.h"

#define CLEF_SCALAR_ENTRY(op, sig, unit, work) .op = CLEF_SSYM(op, unit),
#define CLEF_SCALAR_NAME(op, sig, unit, work)                                  \
    [CLEF_OP_##op] = CLEF_SSTR(op, unit),

const clef_kernels clef_scalar_kernels = {
    .backend = "scalar",
    CLEF_OPS(CLEF_SCALAR_ENTRY).names = {CLEF_OPS(CLEF_SCALAR_NAME)},
};

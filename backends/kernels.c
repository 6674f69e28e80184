// Op names and generic table access for the kernel interface.
#include "kernels.h"

#include <string.h>

const char *const clef_op_names[CLEF_OP_COUNT] = {
#define CLEF_OP_NAME(op, sig, unit, work) #op,
    CLEF_OPS(CLEF_OP_NAME)
#undef CLEF_OP_NAME
};

#define CLEF_FLOPS_gemm 1
#define CLEF_FLOPS_flops 1
#define CLEF_FLOPS_elems 0
#define CLEF_FLOPS_bgemm 1
#define CLEF_FLOPS_bcvt 0
static const unsigned char g_work_is_flops[CLEF_OP_COUNT] = {
#define CLEF_OP_UNIT(op, sig, unit, work) CLEF_FLOPS_##unit,
    CLEF_OPS(CLEF_OP_UNIT)
#undef CLEF_OP_UNIT
};

#define CLEF_BGEMM_gemm 0
#define CLEF_BGEMM_flops 0
#define CLEF_BGEMM_elems 0
#define CLEF_BGEMM_bgemm 1
#define CLEF_BGEMM_bcvt 0
static const unsigned char g_is_bf16_gemm[CLEF_OP_COUNT] = {
#define CLEF_OP_BGEMM(op, sig, unit, work) CLEF_BGEMM_##unit,
    CLEF_OPS(CLEF_OP_BGEMM)
#undef CLEF_OP_BGEMM
};

int clef_op_is_bf16_gemm(clef_op op)
{
    return op >= 0 && op < CLEF_OP_COUNT && g_is_bf16_gemm[op];
}

int clef_op_work_is_flops(clef_op op)
{
    return op >= 0 && op < CLEF_OP_COUNT && g_work_is_flops[op];
}

void (*clef_kernels_get(const clef_kernels *k, clef_op op))(void)
{
    switch (op) {
#define CLEF_OP_CASE(o, sig, unit, work)                                       \
    case CLEF_OP_##o:                                                          \
        return (void (*)(void))k->o;
        CLEF_OPS(CLEF_OP_CASE)
#undef CLEF_OP_CASE
    default:
        return NULL;
    }
}

void clef_kernels_set(clef_kernels *k, clef_op op, void (*fn)(void))
{
    switch (op) {
#define CLEF_OP_SET(o, sig, unit, work)                                        \
    case CLEF_OP_##o:                                                          \
        k->o = (clef_##sig##_fn)fn;                                            \
        break;
        CLEF_OPS(CLEF_OP_SET)
#undef CLEF_OP_SET
    default:
        break;
    }
}

clef_op clef_kernels_first_missing(const clef_kernels *k)
{
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        if (!clef_kernels_get(k, (clef_op)op) || !k->names[op] ||
            !k->names[op][0])
            return (clef_op)op;
    }
    return CLEF_OP_COUNT;
}

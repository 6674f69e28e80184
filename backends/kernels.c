// Op names and generic table access for the kernel interface.
#include "kernels.h"

#include <string.h>

const char *const clef_op_names[CLEF_OP_COUNT] = {
#define CLEF_OP_NAME(op, type) #op,
    CLEF_OPS(CLEF_OP_NAME)
#undef CLEF_OP_NAME
};

void (*clef_kernels_get(const clef_kernels *k, clef_op op))(void)
{
    switch (op) {
#define CLEF_OP_CASE(o, type)                                                  \
    case CLEF_OP_##o:                                                          \
        return (void (*)(void))k->o;
        CLEF_OPS(CLEF_OP_CASE)
#undef CLEF_OP_CASE
    default:
        return NULL;
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

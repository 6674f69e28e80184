// The scalar backend's table: complete, named clef_f32_<op>__scalar.
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backends/scalar/scalar.h"
#include "util.h"

Test(scalar_table, complete)
{
    clef_op miss = clef_kernels_first_missing(&clef_scalar_kernels);
    cr_assert_eq(miss, CLEF_OP_COUNT, "op %s has no kernel or name",
                 miss < CLEF_OP_COUNT ? clef_op_names[miss] : "?");
    cr_assert_str_eq(clef_scalar_kernels.backend, "scalar");
}

Test(scalar_table, kernel_names)
{
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        char want[96];
        const char *name = clef_op_names[op];
        if (clef_op_is_bf16_gemm((clef_op)op)) // clef_bf16_gemm_nt__scalar
            snprintf(want, sizeof want, "clef_bf16_gemm_%s__scalar",
                     name + strlen("gemm_bf16_"));
        else if (op == CLEF_OP_cvt_f32_bf16)
            snprintf(want, sizeof want, "clef_%s__scalar", name);
        else
            snprintf(want, sizeof want, "clef_f32_%s__scalar", name);
        cr_assert_str_eq(clef_scalar_kernels.names[op], want, "op %s",
                         clef_op_names[op]);
    }
}

Test(scalar_table, pointers)
{
    cr_assert(clef_kernels_get(&clef_scalar_kernels, CLEF_OP_gemm_nt) ==
              (void (*)(void))clef_f32_gemm_nt__scalar);
    cr_assert(clef_kernels_get(&clef_scalar_kernels, CLEF_OP_loss) ==
              (void (*)(void))clef_f32_loss__scalar);
    cr_assert(clef_kernels_get(&clef_scalar_kernels, CLEF_OP_adamw) ==
              (void (*)(void))clef_f32_adamw__scalar);
}

// Every backend this build carries and this CPU runs has a kernel and a
// kernel name for every op of the interface once the registry composed it
// (an op added to CLEF_OPS without a kernel fails here), and every backend
// it does not carry or cannot run says why.
#include <criterion/criterion.h>

#include "scheduler/registry.h"

Test(registry, every_compiled_backend_is_complete)
{
    int compiled = 0;
    for (int i = 0; i < clef_backend_count(); i++) {
        const clef_backend *b = clef_backend_at(i);
        cr_assert_not_null(b);
        cr_assert_not_null(b->name);
        cr_assert_eq(clef_backend_find(b->name), b, "%s: find by name",
                     b->name);
        if (!b->table) {
            cr_expect_str_eq(clef_backend_unavailable(b),
                             "not compiled in this build", "%s", b->name);
            continue;
        }
        compiled++;
        // a library table is composed when it first says it can run
        const char *why = clef_backend_unavailable(b);
        if (why) {
            cr_expect(why[0] != '\0', "%s: unavailable without a reason",
                      b->name);
            continue;
        }
        clef_op miss = clef_kernels_first_missing(b->table);
        cr_expect_eq(miss, CLEF_OP_COUNT, "backend %s lacks op %s", b->name,
                     miss < CLEF_OP_COUNT ? clef_op_names[miss] : "-");
    }
    cr_expect_geq(compiled, 1, "at least the scalar reference");
    cr_expect_null(clef_backend_find("no-such-backend"));
}

// The bench cases indexed by clef_op, generated from CLEF_OPS: every op
// names its case bench_case_<op> (defined in its family's case_*.c), so an
// op added to CLEF_OPS without a case fails to link.
#include "case.h"

#define BENCH_CASE_DECLARE(op, sig, unit, work)                                \
    extern const bench_case_def bench_case_##op;
CLEF_OPS(BENCH_CASE_DECLARE)
#undef BENCH_CASE_DECLARE

static const bench_case_def *const g_cases[CLEF_OP_COUNT] = {
#define BENCH_CASE_ENTRY(op, sig, unit, work) [CLEF_OP_##op] = &bench_case_##op,
    CLEF_OPS(BENCH_CASE_ENTRY)
#undef BENCH_CASE_ENTRY
};

// The work of a call, from the op list: a table whose kernel for every op
// records the op list's `work` of its arguments (what auto's trampolines
// classify), so --tune's shape classes are auto's by construction.
static _Thread_local double g_work;
#define WORK_KERNEL(op, sig, unit, work)                                       \
    static void work_##op CLEF_SIG_##sig                                       \
    {                                                                          \
        g_work = (double)(work);                                               \
    }
CLEF_OPS(WORK_KERNEL)
#undef WORK_KERNEL

static const clef_kernels g_work_table = {.backend = "work",
#define WORK_ENTRY(op, sig, unit, work) .op = work_##op,
                                          CLEF_OPS(WORK_ENTRY)
#undef WORK_ENTRY
};

double bench_case_call_work(const bench_case_def *d, void *st)
{
    g_work = -1.0;
    d->call(&g_work_table, st);
    return g_work;
}

const bench_case_def *bench_case_of(clef_op op)
{
    return op >= 0 && op < CLEF_OP_COUNT ? g_cases[op] : NULL;
}

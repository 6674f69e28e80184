// The bench cases indexed by clef_op, generated from CLEF_OPS: every op
// names its case bench_case_<op> (defined in its family's case_*.c), so an
// op added to CLEF_OPS without a case fails to link.
#include "case.h"

#define BENCH_CASE_DECLARE(op, type)                                           \
    extern const bench_case_def bench_case_##op;
CLEF_OPS(BENCH_CASE_DECLARE)
#undef BENCH_CASE_DECLARE

static const bench_case_def *const g_cases[CLEF_OP_COUNT] = {
#define BENCH_CASE_ENTRY(op, type) [CLEF_OP_##op] = &bench_case_##op,
    CLEF_OPS(BENCH_CASE_ENTRY)
#undef BENCH_CASE_ENTRY
};

const bench_case_def *bench_case_of(clef_op op)
{
    return op >= 0 && op < CLEF_OP_COUNT ? g_cases[op] : NULL;
}

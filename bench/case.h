// One bench case per op (as ggml's test-backend-ops has a struct per case):
// the op's sizes and named buffers, how to build them for a shape, how to
// call one backend's kernel on them, and the op's tolerance.
//
// A family file bench/case_<family>.c holds a struct of sizes and named
// buffers (float *x, *gamma, *beta, *y, *xhat, *rstd) and, for each op of
// the family,
//
//     const bench_case_def bench_case_<op> = {sizeof(struct), setup, call};
//
//   setup  sizes the op for c->shape; adds its buffers with BENCH_ADD (each
//          bound to the struct field of its name), in the order they are
//          compared; fills inputs and accumulated outputs from rng (the
//          fills are in the op's valid domain); sets c->dims, the tolerance
//          (c->tol: one of case_tol.c's classes, or an op's own static
//          bench_tol with its reason; c->tol_len = L) and, for a
//          compute-bound op, c->flops and c->compute_bound. 0 or -1.
//   call   runs k's kernel for the op on the struct's buffers.
// The op's work (--tune's shape class) is the op list's `work` of the
// arguments call passes (bench_case_call_work), as for auto's trampolines.
//
// The harness (harness.c) does the rest for every op alike: it compares
// every BENCH_OUT and BENCH_ACC buffer element-wise with the scalar
// reference's under c->tol, guards the sentinels, checks inputs unmodified
// and times the call. case_table.c indexes the cases by clef_op from
// CLEF_OPS, so an op without a case does not link: adding an op to bench is
// one entry in its family's file (or a new case_<family>.c).
#ifndef CLEF_BENCH_CASE_H
#define CLEF_BENCH_CASE_H

#include "harness_int.h"

struct bench_case_def {
    size_t size; // of the case's struct, allocated zeroed
    int (*setup)(clef_bench_case *c, void *st, bench_rng *rng);
    void (*call)(const clef_kernels *k, void *st);
};

// The case of op (case_table.c has one per op); NULL for an invalid op.
const bench_case_def *bench_case_of(clef_op op);
// The op list's work of the call d makes on st (kernels.h CLEF_OPS).
double bench_case_call_work(const bench_case_def *d, void *st);

// Declares `bench_buf *field` (its init array is what setup fills) and binds
// st->field to the array the kernel runs on. Returns -1 from setup on OOM.
#define BENCH_ADD(c, st, field, kind, rows, cols, ld)                          \
    bench_buf *field =                                                         \
        bench_buf_add(c, #field, kind, rows, cols, ld, &(st)->field);          \
    if (!field)                                                                \
        return -1;

// ---- tolerances (case_tol.c): tol = base + per_len * L, in FLT_EPSILON ----
struct bench_tol {
    const char *name;
    double base, per_len;
};
extern const bench_tol bench_tol_exact, bench_tol_elementwise, bench_tol_gelu,
    bench_tol_reduction, bench_tol_softmax, bench_tol_layernorm_fwd,
    bench_tol_layernorm_bwd, bench_tol_normalize, bench_tol_attention_fwd,
    bench_tol_attention_bwd, bench_tol_adamw, bench_tol_loss;

// ---- fills (case_fill.c) ----
// The live element (r, k) of b's input.
#define BENCH_LIVE(b, r, k) ((b)->init[(size_t)(r) * (b)->ld + (k)])

void bench_fill_uniform(bench_buf *b, bench_rng *rng, float lo, float hi);
// Integers in [-m, m] (without 0 when nonzero is set).
void bench_fill_int(bench_buf *b, bench_rng *rng, int m, int nonzero);
// y = softmax(x) over n contiguous floats, in double, rounded once.
void bench_softmax_ref(int n, const float *x, float *y);
int bench_max_int(int a, int b);

#endif

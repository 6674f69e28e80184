// Internals shared by bench/harness.c (generic check and timing) and
// bench/harness_ops.c (what each op reads, writes and tolerates).
// Not for use outside bench/ and tests/test_bench_harness.c.
#ifndef CLEF_BENCH_HARNESS_INT_H
#define CLEF_BENCH_HARNESS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

// Floats of NaN pattern after every buffer (and in the gaps of strided rows).
#define BENCH_SENTINEL 64
#define BENCH_SENTINEL_BITS 0x7fc0deadu // a quiet NaN no kernel produces
#define BENCH_MAX_BUF 10
#define BENCH_MAX_INT 4

typedef enum bench_kind {
    BENCH_IN,      // read-only input: must come back bit-identical
    BENCH_OUT,     // overwritten output: prefilled with the NaN pattern
    BENCH_ACC,     // accumulated (+=) output: prefilled with random values
    BENCH_SCRATCH, // kernel scratch: contents free, only its end is guarded
} bench_kind;

// One float operand: `rows` rows of `cols` live floats, `ld` apart.
typedef struct bench_buf {
    const char *name;
    bench_kind kind;
    int rows, cols, ld;
    size_t n;    // rows * ld; each array holds n + BENCH_SENTINEL floats
    float *init; // input / initial contents, gaps and tail = NaN pattern
    float *ref;  // reference result (OUT, ACC)
    float *run;  // what a kernel works on
} bench_buf;

// The tolerance classes of the one table in harness_ops.c.
typedef enum bench_tol_class {
    TOL_EXACT,
    TOL_ELEMENTWISE,
    TOL_GELU,
    TOL_REDUCTION,
    TOL_SOFTMAX,
    TOL_LAYERNORM_FWD,
    TOL_LAYERNORM_BWD,
    TOL_NORMALIZE,
    TOL_ATTENTION_FWD,
    TOL_ATTENTION_BWD,
    TOL_ADAMW,
    TOL_LOSS,
    TOL_CLASS_COUNT
} bench_tol_class;

typedef struct bench_rng {
    uint64_t s;
} bench_rng;

struct clef_bench_case {
    clef_op op;
    const clef_bench_shape *shape;
    uint64_t seed;
    char dims[128];

    int nbuf;
    bench_buf buf[BENCH_MAX_BUF];
    int *iarr[BENCH_MAX_INT]; // index arrays (offsets, spans, indices, flags)

    int p[8]; // op sizes, meaning per op (see harness_ops.c)
    float eps;
    clef_adamw_args adamw;
    clef_loss_args loss;
    int has_dacc; // the loss op's double accumulator
    double dacc_init, dacc_ref, dacc_run;

    bench_tol_class tol_class;
    int tol_len;    // L: the longest reduction of the case
    double tol_eps; // base + per_len * L, in FLT_EPSILON
    double flops, bytes;
    int compute_bound;

    // reference state
    int ref_done;
    clef_bench_verdict ref_verdict; // PASS, FAIL (broken ref), MISTRUSTED
    char ref_reason[400];
    const char *ref_kernel;
    void (*ref_fn)(void);
    double informative;
    int ref_reps;
    double ref_median, ref_min;
};

// ---- harness_ops.c ----
// Fills c's sizes, buffers, index arrays, tolerance and work counts. 0 or -1.
int bench_op_setup(clef_bench_case *c, bench_rng *rng);
// Calls k's kernel for c.op on the `run` arrays.
void bench_op_call(const clef_kernels *k, clef_bench_case *c);

// ---- harness.c helpers for harness_ops.c ----
bench_buf *bench_buf_add(clef_bench_case *c, const char *name, bench_kind kind,
                         int rows, int cols, int ld);
int *bench_int_add(clef_bench_case *c, int slot, size_t n);
double bench_tol_eps(bench_tol_class cls, int len);
const char *bench_tol_name(bench_tol_class cls);
uint64_t bench_rng_next(bench_rng *r);
float bench_uniform(bench_rng *r, float lo, float hi);
int bench_int_in(bench_rng *r, int lo, int hi); // [lo, hi]

#endif

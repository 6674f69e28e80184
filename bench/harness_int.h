// Internals of the clef-bench harness: the generic case (buffers with
// sentinels, the reference state) that bench/harness.c checks and times, and
// that the per-op case files (bench/case_*.c, interface in case.h) build.
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

typedef struct bench_case_def bench_case_def; // case.h
typedef struct bench_tol bench_tol;           // case.h

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

typedef struct bench_rng {
    uint64_t s;
} bench_rng;

struct clef_bench_case {
    clef_op op;
    const clef_bench_shape *shape;
    uint64_t seed;
    char dims[128];

    const bench_case_def *def; // the op's case (case_table.c)
    void *st;                  // its struct of sizes and named buffers

    int nbuf;
    bench_buf buf[BENCH_MAX_BUF];
    int nint;
    int *ints[BENCH_MAX_INT]; // index arrays (offsets, spans, indices, flags)

    // one double accumulator (the loss), compared like an ACC output
    const char *dacc_name;
    int has_dacc;
    double dacc_init, dacc_ref, dacc_run;

    const bench_tol *tol; // the op's tolerance class (case_tol.c)
    int tol_len;          // L: the longest reduction of the case
    double tol_eps;       // base + per_len * L, in FLT_EPSILON
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

// ---- harness.c: buffers, index arrays and random numbers for the cases ----
// Adds a buffer named `name`; *bind is set to the array kernels run on.
bench_buf *bench_buf_add(clef_bench_case *c, const char *name, bench_kind kind,
                         int rows, int cols, int ld, float **bind);
int *bench_ints_add(clef_bench_case *c, size_t n); // zeroed; NULL on OOM
// The case's double accumulator, starting at init each run; returns the
// value kernels accumulate into.
double *bench_dacc_add(clef_bench_case *c, const char *name, double init);
uint64_t bench_rng_next(bench_rng *r);
float bench_uniform(bench_rng *r, float lo, float hi);
int bench_int_in(bench_rng *r, int lo, int hi); // [lo, hi]

#endif

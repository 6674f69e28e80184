// The clef-bench harness as a library: shapes, one case (op x shape x seed)
// with its inputs and the reference result, and the check + timing of one
// backend on it. bench/main.c is the command line around it;
// tests/test_bench_harness.c proves with broken kernels that it can fail.
//
// Correctness, in the manner of oneDNN's benchdnn:
//   - inputs are filled so results do not cancel: small nonzero integers for
//     GEMM (every partial sum is an integer below 2^24, so any summation order
//     gives the same f32 result and GEMM compares exactly), uniform random
//     values in each op's valid domain elsewhere (seeded; each op's case,
//     bench/case_*.c, see case.h);
//   - every output is compared with the scalar reference under the op's
//     tolerance (one of the classes of case_tol.c, in units of FLT_EPSILON);
//     NaN and Inf must agree exactly;
//   - every buffer carries a NaN-pattern sentinel after its end and in the gaps
//     of strided rows, checked untouched; inputs are checked unmodified;
//   - outputs are prefilled with the NaN pattern (overwrite) or random values
//     (accumulate), so an element a kernel forgets to write is a mismatch;
//   - a case whose result is mostly uninformative (zeros for overwritten
//     outputs, unchanged values for accumulated ones) is MISTRUSTED: passing
//     it would prove nothing.
#ifndef CLEF_BENCH_HARNESS_H
#define CLEF_BENCH_HARNESS_H

#include <stdint.h>
#include <stdio.h>

#include "kernels.h"
#include "scheduler/registry.h"

// ---- shapes: the head's own sizes and the edge battery ----
typedef struct clef_bench_shape {
    const char *name;  // "tiny", "edge-7", ...
    const char *group; // "tiny", "fixture", "mid", "released", "edge"
    int T, d, w, h, f; // positions, hidden, width, heads, feedforward
    int Q, O;          // questions, options
    int pad;           // extra floats per row of strided operands (0: packed)
} clef_bench_shape;

int clef_bench_shape_count(void);
const clef_bench_shape *clef_bench_shape_at(int i);
const clef_bench_shape *clef_bench_shape_find(const char *name);

// ---- verdicts and results ----
typedef enum clef_bench_verdict {
    CLEF_BENCH_PASS = 0,
    CLEF_BENCH_FAIL,
    CLEF_BENCH_MISTRUSTED,
    CLEF_BENCH_SKIP,
} clef_bench_verdict;
const char *clef_bench_verdict_name(clef_bench_verdict v);

#define CLEF_BENCH_MAX_SHOWN 8 // mismatches listed per FAIL

typedef struct clef_bench_result {
    clef_bench_verdict verdict;
    char backend[32], op[32], shape[32];
    char kernel[96];       // kernel name from the table ("" when skipped)
    char dims[128];        // the op's concrete sizes, "M=512 N=1024 K=5120"
    char reason[400];      // why SKIP / FAIL / MISTRUSTED ("" on PASS)
    char mismatches[1024]; // first mismatches: buffer[index] expected got diff
    char replay[256];      // command line that reruns exactly this case
    uint64_t seed;         // the --seed the case was built from
    long n_mismatch;       // elements out of tolerance
    double max_abs;        // largest |got − expected|
    double max_err_eps; // largest |got − exp| / max(|exp|, 1), in FLT_EPSILON
    double tol_eps;     // tolerance used, in FLT_EPSILON
    double informative; // fraction of output elements that carry information
    // timing (0 when not timed): seconds per call
    int reps;
    double t_median, t_min;
    double flops, bytes; // per call
    int compute_bound;   // 1: rate in GFLOP/s, 0: in GB/s
    double rate;         // GFLOP/s or GB/s at the median time
    double speedup;      // scalar median / this median (0 when unknown)
} clef_bench_result;

typedef struct clef_bench_opts {
    uint64_t seed;   // --seed (case fills derive from it, op and shape)
    int timing;      // 0: check only
    double budget_s; // time budget per timed row
    int max_reps;    // cap on timed repetitions per row
    int batch;       // --train: records per update (--batch, 1)
    int questions;   // --train: questions per record (0: the shape's)
    int options;     // --train: options per question (0: the shape's)
    int scaling;     // --train --scaling N: 1 vs N threads (0: off)
    int bf16;        // --train --precision bf16 (core/mm.h)
    int compare;     // --train --precision fp32,bf16: side by side
} clef_bench_opts;
void clef_bench_opts_default(clef_bench_opts *o); // seed 1, timed, 0.05 s, 1000

// ---- one case ----
typedef struct clef_bench_case clef_bench_case; // opaque

// Builds the inputs of op at shape s (deterministic in seed). NULL on OOM.
clef_bench_case *clef_bench_case_new(clef_op op, const clef_bench_shape *s,
                                     uint64_t seed);
void clef_bench_case_free(clef_bench_case *c);
const char *clef_bench_case_dims(const clef_bench_case *c);
// The case's work in the unit clef_shape_class_of() expects (--tune).
double clef_bench_case_work(const clef_bench_case *c);

// Computes the expected result with ref's kernel (normally the scalar
// backend) and, if o->timing, times it as the speed-up baseline. A reference
// that writes past a buffer or into an input, or whose result is
// uninformative, makes every later check of this case FAIL or MISTRUSTED.
void clef_bench_case_reference(clef_bench_case *c, const clef_kernels *ref,
                               const clef_bench_opts *o);

// Checks backend b on the case against the reference, then times it when it
// passed and o->timing. Fills r completely.
void clef_bench_case_run(clef_bench_case *c, const clef_backend *b,
                         const clef_bench_opts *o, clef_bench_result *r);

// Everything for one case in one call (reference, check, timing).
void clef_bench_run_one(const clef_backend *b, const clef_kernels *ref,
                        clef_op op, const clef_bench_shape *s,
                        const clef_bench_opts *o, clef_bench_result *r);

// Prints r's FAIL / MISTRUSTED details (reason, mismatches, replay) to f.
void clef_bench_print_failure(FILE *f, const clef_bench_result *r);

#endif

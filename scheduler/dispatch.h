// Runtime per-op kernel dispatch.
//
// For every op an ordered list of candidate kernels (best first, scalar
// last); each candidate names its kernel, the ISA it needs and a
// supported(shape) check. clef_dispatch_build() picks, per op, the first
// candidate the CPU (capped by max_isa) can run and whose check accepts every
// shape, and fills a composite clef_kernels table, kernel names included.
//
// Every candidate listed here accepts every shape today: the ISA kernels
// fall back internally (e.g. GEMM's small-shape path, masked tails), so a
// table entry is always correct. A future shape-limited kernel (say, a
// K % 16 == 0 only GEMM) is listed with a check that says so and is chosen
// per call through clef_dispatch_pick().
#ifndef CLEF_DISPATCH_H
#define CLEF_DISPATCH_H

#include <stddef.h>

#include "kernels.h"

// The shape of one call, as far as a supported() check cares; unused fields 0.
typedef struct clef_shape {
    int m, n, k; // GEMM M, N, K; rows, n for row ops; n for elementwise ops
} clef_shape;

typedef struct clef_candidate {
    const char *name;    // "clef_f32_gemm_nt_14x32__avx512"
    int isa;             // CLEF_ISA_* it needs
    const char *backend; // "avx512", "avx2", "scalar"
    void (*fn)(void);    // cast to the op's type (kernels.h)
    // NULL = every shape; shape NULL asks "every shape?"
    int (*supported)(const clef_shape *shape);
} clef_candidate;

// Candidates of op, best first; *count gets their number.
const clef_candidate *clef_dispatch_candidates(clef_op op, int *count);

// First candidate of op that runs at isa ≤ max_isa and supports shape
// (NULL shape: every shape). NULL when none (never for scalar).
const clef_candidate *clef_dispatch_pick(clef_op op, int max_isa,
                                         const clef_shape *shape);

// Fills out with, per op, the best candidate at isa ≤ max_isa (pass
// clef_isa_level() for "the best this CPU allows under CLEF_MAX_ISA").
// backend_restriction: NULL or "auto" = any; "avx512", "avx2", "scalar",
// "avx512_bf16", "amx" = that level's kernels only, for the ops that level
// has kernels for; an op it has none for (the bf16 GEMMs at avx512, the f32
// ops at amx) takes the best candidate at isa ≤ max_isa, as the registry's
// composed tables do. Returns 0, or -1 with the reason in why
// (e.g. "avx512: cpu lacks avx512f", "avx512: capped by CLEF_MAX_ISA=avx2")
// when the restriction cannot be met; out is then untouched.
// With CLEF_VERBOSE=1 prints the kernel chosen per op on stderr.
int clef_dispatch_build(clef_kernels *out, int max_isa,
                        const char *backend_restriction, char *why,
                        size_t whylen);

#endif

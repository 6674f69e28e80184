// The tolerance classes of the bench cases: tol = base + per_len * L, in
// FLT_EPSILON, L being the longest reduction of the case (each case sets
// it). Errors are measured as |got − expected| / max(|expected|, 1):
// relative for large values, absolute below 1 (every fill is O(1)). A
// vectorised kernel sums in another order and may fuse multiply-adds; it may
// not be less accurate than that. Loosen an entry only with a reason written
// next to it.
#include "case.h"

// GEMM with integer fills: every partial sum is an integer below 2^24,
// exact in any order and with or without FMA. Gathers copy.
const bench_tol bench_tol_exact = {"exact", 0, 0};
// One or two roundings per element (bias add).
const bench_tol bench_tol_elementwise = {"elementwise", 2, 0};
// erf/exp evaluated by vector approximations: a few ulp of Φ and φ,
// amplified by the products x·Φ(x), x·φ(x) of GELU and its derivative.
const bench_tol bench_tol_gelu = {"gelu", 16, 0};
// Sums of L terms in another order: error grows with L (colsum, span
// mean/scatter, scatter-add of rows).
const bench_tol bench_tol_reduction = {"reduction", 2, 1};
// exp (a few ulp) per element, the row sum of L terms, one division; the
// backward adds a dot product of length L.
const bench_tol bench_tol_softmax = {"softmax", 8, 2};
// Mean and variance over L, then a reciprocal square root that scales
// every element of the row.
const bench_tol bench_tol_layernorm_fwd = {"layernorm_fwd", 8, 2};
// Two row means over n and the dgamma/dbeta column sums over rows:
// L = max(rows, n); their errors add.
const bench_tol bench_tol_layernorm_bwd = {"layernorm_bwd", 16, 2};
// A norm over L (sum of squares, sqrt), a division, a dot product in the
// backward (normalize, cosine).
const bench_tol bench_tol_normalize = {"normalize", 8, 2};
// Q·K over dh, a softmax over nk, A·V over nk: L = nk + dh.
const bench_tol bench_tol_attention_fwd = {"attention_fwd", 16, 2};
// dA = dO·Vᵀ over dh, a rowsum over nk, dQ over nk, dK and dV over nq:
// L = nq + nk + dh; four chained reductions.
const bench_tol bench_tol_attention_bwd = {"attention_bwd", 32, 4};
// Per element: decay, two moment updates, sqrt, division (about ten
// roundings, FMA allowed).
const bench_tol bench_tol_adamw = {"adamw", 8, 0};
// Per question: a softmax over L options, logs, the Brier and ordinal
// sums over L; the loss is accumulated in double.
const bench_tol bench_tol_loss = {"loss", 16, 4};

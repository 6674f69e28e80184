// Helpers shared by the forward and backward passes (private to core/).
#ifndef CLEF_FORWARD_H
#define CLEF_FORWARD_H

#include "head.h"
#include "kernels.h"
#include "memattn.h"

// y (rows, out) = x (rows, in) Wᵀ (out, in) + b (out); b may be NULL.
void clef_linear_fwd(const clef_kernels *k, int rows, int out, int in,
                     const float *x, const float *W, const float *b, float *y);
// κ(s) = exp(min(s, ln 100)); σ(x) = 1 / (1 + e^−x)
float clef_kappa(float s);
float clef_sigmoid(float x);
#define CLEF_LN100 4.605170185988091f

// The absorbed form (core/memattn.h) of routing layer a's attention over
// memory_norm(M), and of field layer a's cross-attention over M, with the
// workspace's scratch: what forward and backward both hand to memattn.
struct route_acts;
struct field_acts;
clef_mem_absorb clef_route_absorb(const struct clef_ws *ws,
                                  const struct route_acts *a);
clef_mem_absorb clef_field_absorb(const struct clef_ws *ws,
                                  const struct field_acts *a);

// Before an update's first backward pass: zeroes every gradient except the
// weight matrices whose gradient one GEMM (or one loop) writes in full, and
// sets ws->grads_fresh so that pass writes those instead of adding to them.
// Saves clearing 99 % of the gradients and reading them back once. The
// caller clears ws->grads_fresh after the pass (sub-batches then add).
struct clef_ws;
void clef_grads_prepare(clef_head *hd, struct clef_ws *ws);

// Work that may run beside the end of a backward pass: n independent items,
// run(ctx, i) each once, on any thread, in any order.
typedef struct clef_side_work {
    void (*run)(void *ctx, int i);
    void *ctx;
    int n;
} clef_side_work;
// clef_batch_backward, with `side` (may be NULL) run while the team computes
// the memory projection's weight-gradient product, the pass's last GEMM
// (which reads and writes none of the tensors AdamW updates beside it:
// every weight but W_m and hidden_norm is final by then).
void clef_batch_backward_with(const clef_kernels *k, clef_head *hd,
                              struct clef_ws *ws, const float *dz,
                              const clef_side_work *side);

#endif

// The backward pass as an update runs it (private to core/; the public
// clef_batch_backward is in head.h, which adds to every gradient).
#ifndef CLEF_BACKWARD_H
#define CLEF_BACKWARD_H

#include "head.h"
#include "kernels.h"

// Before an update's first backward pass: zeroes every gradient except the
// weight matrices whose gradient one GEMM (or one loop) writes in full, which
// that pass then writes instead of adding to (acc 0 below). Saves clearing
// 99 % of the gradients and reading them back once.
void clef_grads_prepare(clef_head *hd);

// Work that may run beside the end of a backward pass: n independent items,
// run(ctx, i) each once, on any thread, in any order.
typedef struct clef_side_work {
    void (*run)(void *ctx, int i);
    void *ctx;
    int n;
} clef_side_work;

// Backward (HEAD.md §7, Appendix A) of the last batch forward on ws, given
// dz (Σ O_b) = ∂L/∂z, into hd->grads. acc 0: the update's first pass, which
// writes the weight gradients clef_grads_prepare left; 1: every gradient
// adds. `side` (may be NULL) runs while the team computes the memory
// projection's weight-gradient product, the pass's last GEMM (which reads
// and writes none of the tensors AdamW updates beside it: every weight but
// W_m and hidden_norm is final by then).
void clef_backward(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                   const float *dz, int acc, const clef_side_work *side);

#endif

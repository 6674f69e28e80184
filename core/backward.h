// The backward pass as an update runs it (private to core/; the public
// clef_batch_backward is in head.h, which adds to every gradient).
//
// A pass ends in the memory projection's weight-gradient product
// D = dMᵀ x̂ (w, d), which reads and writes no tensor of the head: by then
// every gradient but W_m's and hidden_norm's is final. So the pass comes in
// three parts, and clef_train_step runs AdamW of those final tensors beside
// D's blocks (core/train.c):
//
//     clef_backward_upto_d(k, hd, ws, dz, acc);
//     for (int i = 0; i < clef_memory_bwd_blocks(ws); i++)
//         clef_memory_bwd_block(k, ws, i); // any order, any thread
//     clef_memory_bwd_finish(k, hd, ws, acc);
//
// acc is 0 on an update's first pass, which writes the weight gradients
// clef_grads_prepare left as they are, and 1 when every gradient adds (the
// later sub-batches of an update).
#ifndef CLEF_BACKWARD_H
#define CLEF_BACKWARD_H

#include "head.h"
#include "kernels.h"

// Before an update's first backward pass: zeroes every gradient except the
// weight matrices whose gradient one GEMM (or one loop) writes in full, which
// that pass then writes instead of adding to. Saves clearing 99 % of the
// gradients and reading them back once.
void clef_grads_prepare(clef_head *hd);

// Backward (HEAD.md §7, Appendix A) of the last batch forward on ws, given
// dz (Σ O_b) = ∂L/∂z, into hd->grads, up to D: dM (T, w) is final (and
// packed for D's products when the backend pre-packs).
void clef_backward_upto_d(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                          const float *dz, int acc);
// D's column blocks: how many (fixed by the shape, never by the thread
// count), and block i into the workspace. Each block once, in any order, on
// any thread: a block's bits do not depend on which thread runs it, and
// inside a parallel region its GEMMs run on that thread alone.
int clef_memory_bwd_blocks(const clef_ws *ws);
void clef_memory_bwd_block(const clef_kernels *k, clef_ws *ws, int i);
// The rest of the pass once every block of D is done: the W_m and
// hidden_norm gradients.
void clef_memory_bwd_finish(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                            int acc);

// The whole pass: the three parts, D's blocks in order.
void clef_backward(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                   const float *dz, int acc);

#endif

// Row-wise and elementwise kernels over many rows, split across the OpenMP
// team in fixed chunks (private to core/). The chunks depend only on the
// shape, never on the thread count, and each chunk writes its own rows, so
// 1 and N threads give the same bits. Below the threshold they run on the
// calling thread: one call for the row-wise kernels, one per chunk for the
// elementwise ones.
#ifndef CLEF_ROWS_H
#define CLEF_ROWS_H

#include "kernels.h"

#include <stddef.h>

// y (rows, n) = LN(x) ⊙ γ + β; saves xhat (rows, n), rstd (rows)
void clef_rows_layernorm_fwd(const clef_kernels *k, int rows, int n,
                             const float *x, const float *gamma,
                             const float *beta, float *y, float *xhat,
                             float *rstd);
// LayerNorm backward (kernels.h) over fixed row chunks: dx rows per chunk;
// the γ and β gradients of each chunk go to part (chunks·2n floats,
// clef_rows_layernorm_bwd_scratch) and are added to dgamma, dbeta in chunk
// order, so the sums are fixed by the shape, not the thread count.
size_t clef_rows_layernorm_bwd_scratch(int rows, int n);
void clef_rows_layernorm_bwd(const clef_kernels *k, int rows, int n,
                             const float *dy, const float *xhat,
                             const float *rstd, const float *gamma, float *dx,
                             float *dgamma, float *dbeta, float *part);
// y (rows, n) += b (n)
void clef_rows_bias_add(const clef_kernels *k, int rows, int n, const float *b,
                        float *y);
// y (n) = gelu(x); dx (n) = gelu'(x) ⊙ dy
void clef_rows_gelu_fwd(const clef_kernels *k, size_t n, const float *x,
                        float *y);
void clef_rows_gelu_bwd(const clef_kernels *k, size_t n, const float *x,
                        const float *dy, float *dx);
// dst (n) = src (n); x (n) = 0
void clef_rows_copy(float *dst, const float *src, size_t n);
void clef_rows_zero(float *x, size_t n);

#endif

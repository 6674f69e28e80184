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

#endif

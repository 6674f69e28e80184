// Helpers shared by the forward and backward passes (private to core/).
#ifndef CLEF_FORWARD_H
#define CLEF_FORWARD_H

#include "kernels.h"

// y (rows, out) = x (rows, in) Wᵀ (out, in) + b (out); b may be NULL.
void clef_linear_fwd(const clef_kernels *k, int rows, int out, int in,
                     const float *x, const float *W, const float *b, float *y);
// κ(s) = exp(min(s, ln 100)); σ(x) = 1 / (1 + e^−x)
float clef_kappa(float s);
float clef_sigmoid(float x);
#define CLEF_LN100 4.605170185988091f

#endif

// Row and segmented softmax, written once against the vf layer.
//   fwd: y (rows, n) = exp(x − max) / Σ exp(x − max); −INF gives 0; a row of
//        only −INF gives zeros (never NaN), as the reference.
//   bwd: dx (rows, n) += y ⊙ (dy − Σ dy ⊙ y)
//   seg: the same per segment x[off[s] .. off[s+1]).

#include "tmpl_softmax_row.h"

// Segmented softmax, scalar reference: segment s is x[off[s] .. off[s+1]),
// normalised on its own exactly as a softmax row (softmax.c).
#include "scalar.h"

// x (off[nseg]) -> y (off[nseg])
void clef_f32_softmax_seg_fwd__scalar(int nseg, const int *off, const float *x,
                                      float *y)
{
    for (int s = 0; s < nseg; s++) {
        int len = off[s + 1] - off[s];
        clef_f32_softmax_fwd__scalar(1, len, x + off[s], y + off[s]);
    }
}

// dx (off[nseg]) += y ⊙ (dy − Σ_seg dy ⊙ y), per segment.
void clef_f32_softmax_seg_bwd__scalar(int nseg, const int *off, const float *y,
                                      const float *dy, float *dx)
{
    for (int s = 0; s < nseg; s++) {
        int len = off[s + 1] - off[s];
        clef_f32_softmax_bwd__scalar(1, len, y + off[s], dy + off[s],
                                     dx + off[s]);
    }
}

// Segmented softmax, NEON: segment s is x[off[s] .. off[s+1]), normalised on
// its own exactly as one softmax row (softmax.c).
#include "neon.h"

// x (off[nseg]) -> y (off[nseg])
void clef_f32_softmax_seg_fwd__neon(int nseg, const int *off, const float *x,
                                    float *y)
{
    for (int s = 0; s < nseg; s++)
        clef_f32_softmax_fwd__neon(1, off[s + 1] - off[s], x + off[s],
                                   y + off[s]);
}

// dx (off[nseg]) += y ⊙ (dy − Σ_seg dy ⊙ y), per segment
void clef_f32_softmax_seg_bwd__neon(int nseg, const int *off, const float *y,
                                    const float *dy, float *dx)
{
    for (int s = 0; s < nseg; s++)
        clef_f32_softmax_bwd__neon(1, off[s + 1] - off[s], y + off[s],
                                   dy + off[s], dx + off[s]);
}

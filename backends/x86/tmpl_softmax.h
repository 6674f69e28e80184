// Row and segmented softmax, written once against the vf layer.
//   fwd: y (rows, n) = exp(x − max) / Σ exp(x − max); −INF gives 0; a row of
//        only −INF gives zeros (never NaN), as the reference.
//   bwd: dx (rows, n) += y ⊙ (dy − Σ dy ⊙ y)
//   seg: the same per segment x[off[s] .. off[s+1]).

#include "tmpl_softmax_row.h"

void CLEF_KNAME(softmax_fwd)(int rows, int n, const float *x, float *y)
{
    CLEF_NARROW(n <= 8, clef_f32_softmax_fwd__avx2(rows, n, x, y));
    for (int r = 0; r < rows; r++)
        softmax_row(n, 1.0f, x + (size_t)r * n, y + (size_t)r * n);
}

void CLEF_KNAME(softmax_bwd)(int rows, int n, const float *y, const float *dy,
                             float *dx)
{
    CLEF_NARROW(n <= 8, clef_f32_softmax_bwd__avx2(rows, n, y, dy, dx));
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        softmax_bwd_row(n, 1.0f, y + o, dy + o, dx + o, 1);
    }
}

void CLEF_KNAME(softmax_seg_fwd)(int nseg, const int *off, const float *x,
                                 float *y)
{
    for (int s = 0; s < nseg; s++)
        softmax_row(off[s + 1] - off[s], 1.0f, x + off[s], y + off[s]);
}

void CLEF_KNAME(softmax_seg_bwd)(int nseg, const int *off, const float *y,
                                 const float *dy, float *dx)
{
    for (int s = 0; s < nseg; s++)
        softmax_bwd_row(off[s + 1] - off[s], 1.0f, y + off[s], dy + off[s],
                        dx + off[s], 1);
}

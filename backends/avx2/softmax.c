// softmax kernels for avx2: clef_f32_softmax_fwd__avx2 clef_f32_softmax_bwd__avx2 clef_f32_softmax_seg_fwd__avx2 clef_f32_softmax_seg_bwd__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_softmax.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_softmax.h"

void clef_f32_softmax_fwd__avx2(int rows, int n, const float *x, float *y)
{
#include "backends/x86/body/softmax_fwd.h"
}

void clef_f32_softmax_bwd__avx2(int rows, int n, const float *y,
                                const float *dy, float *dx)
{
#include "backends/x86/body/softmax_bwd.h"
}

void clef_f32_softmax_seg_fwd__avx2(int nseg, const int *off, const float *x,
                                    float *y)
{
#include "backends/x86/body/softmax_seg_fwd.h"
}

void clef_f32_softmax_seg_bwd__avx2(int nseg, const int *off, const float *y,
                                    const float *dy, float *dx)
{
#include "backends/x86/body/softmax_seg_bwd.h"
}

// span kernels for avx2: clef_f32_span_mean__avx2 clef_f32_span_scatter__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_span.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_span.h"

void clef_f32_span_mean__avx2(int nspan, const int *spans, int n,
                              const float *X, float *Y)
{
#include "backends/x86/body/span_mean.h"
}

void clef_f32_span_scatter__avx2(int nspan, const int *spans, int n,
                                 const float *dY, float *dX)
{
#include "backends/x86/body/span_scatter.h"
}

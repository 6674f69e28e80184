// span kernels for avx512: clef_f32_span_mean__avx512 clef_f32_span_scatter__avx512
// Written once for both ISAs: helpers in backends/x86/tmpl_span.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_span.h"

void clef_f32_span_mean__avx512(int nspan, const int *spans, int n,
                                const float *X, float *Y)
{
    CLEF_NARROW(n <= 8, clef_f32_span_mean__avx2(nspan, spans, n, X, Y));
#include "backends/x86/body/span_mean.h"
}

void clef_f32_span_scatter__avx512(int nspan, const int *spans, int n,
                                   const float *dY, float *dX)
{
    CLEF_NARROW(n <= 8, clef_f32_span_scatter__avx2(nspan, spans, n, dY, dX));
#include "backends/x86/body/span_scatter.h"
}

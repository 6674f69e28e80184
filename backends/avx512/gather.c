// gather kernels for avx512: clef_f32_gather_rows__avx512 clef_f32_scatter_add_rows__avx512
// Written once for both ISAs: helpers in backends/x86/tmpl_gather.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_gather.h"

void clef_f32_gather_rows__avx512(int nidx, const int *idx, int n,
                                  const float *X, float *Y)
{
    CLEF_NARROW(n <= 8, clef_f32_gather_rows__avx2(nidx, idx, n, X, Y));
#include "backends/x86/body/gather_rows.h"
}

void clef_f32_scatter_add_rows__avx512(int nidx, const int *idx, int n,
                                       const float *dY, float *dX)
{
    CLEF_NARROW(n <= 8, clef_f32_scatter_add_rows__avx2(nidx, idx, n, dY, dX));
#include "backends/x86/body/scatter_add_rows.h"
}

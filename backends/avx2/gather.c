// gather kernels for avx2: clef_f32_gather_rows__avx2 clef_f32_scatter_add_rows__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_gather.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_gather.h"

void clef_f32_gather_rows__avx2(int nidx, const int *idx, int n, const float *X,
                                float *Y)
{
#include "backends/x86/body/gather_rows.h"
}

void clef_f32_scatter_add_rows__avx2(int nidx, const int *idx, int n,
                                     const float *dY, float *dX)
{
#include "backends/x86/body/scatter_add_rows.h"
}

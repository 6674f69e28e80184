// normalize kernels for avx2: clef_f32_normalize_fwd__avx2 clef_f32_normalize_bwd__avx2 clef_f32_cosine_fwd__avx2 clef_f32_cosine_bwd__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_normalize.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_normalize.h"

void clef_f32_normalize_fwd__avx2(int rows, int n, float eps, const float *x,
                                  float *y, float *nrm)
{
#include "backends/x86/body/normalize_fwd.h"
}

void clef_f32_normalize_bwd__avx2(int rows, int n, float eps, const float *y,
                                  const float *nrm, const float *dy, float *dx)
{
#include "backends/x86/body/normalize_bwd.h"
}

void clef_f32_cosine_fwd__avx2(int rows, int n, const float *a, const float *b,
                               float *ahat, float *bhat, float *na, float *nb,
                               float *c)
{
#include "backends/x86/body/cosine_fwd.h"
}

void clef_f32_cosine_bwd__avx2(int rows, int n, const float *ahat,
                               const float *bhat, const float *na,
                               const float *nb, const float *dc, float *da,
                               float *db)
{
#include "backends/x86/body/cosine_bwd.h"
}

// GELU (exact erf) for avx2: clef_f32_gelu_fwd__avx2, clef_f32_gelu_bwd__avx2,
// and clef_f32_erf__avx2 (tests). Helpers: backends/x86/tmpl_gelu.h, math in
// backends/x86/tmpl_math.h; bodies in backends/x86/body/.
#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_gelu.h"

void clef_f32_gelu_fwd__avx2(size_t n, const float *x, float *y)
{
#include "backends/x86/body/gelu_fwd.h"
}

void clef_f32_gelu_bwd__avx2(size_t n, const float *x, const float *dy,
                             float *dx)
{
#include "backends/x86/body/gelu_bwd.h"
}

void clef_f32_erf__avx2(size_t n, const float *x, float *y)
{
#include "backends/x86/body/erf.h"
}

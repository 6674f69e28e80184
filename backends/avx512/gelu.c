// GELU (exact erf) for avx512: clef_f32_gelu_fwd__avx512, clef_f32_gelu_bwd__avx512,
// and clef_f32_erf__avx512 (tests). Helpers: backends/x86/tmpl_gelu.h, math in
// backends/x86/tmpl_math.h, bodies in backends/x86/body/; the hot path's Φ
// and φ tables in gelu_lut.h.
#include "vec.h"
#include "avx512.h"

#include "gelu_lut.h"

#include "backends/x86/tmpl_gelu.h"

void clef_f32_gelu_fwd__avx512(size_t n, const float *x, float *y)
{
#include "backends/x86/body/gelu_fwd.h"
}

void clef_f32_gelu_bwd__avx512(size_t n, const float *x, const float *dy,
                               float *dx)
{
#include "backends/x86/body/gelu_bwd.h"
}

void clef_f32_erf__avx512(size_t n, const float *x, float *y)
{
#include "backends/x86/body/erf.h"
}

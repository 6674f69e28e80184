// GELU (exact erf) for avx512: clef_f32_gelu_fwd__avx512, clef_f32_gelu_bwd__avx512,
// and clef_f32_erf__avx512 (tests). Body: backends/x86/tmpl_gelu.h, math in
// backends/x86/tmpl_math.h; the hot path's Φ and φ tables in gelu_lut.h.
#include "vec.h"
#include "avx512.h"

#include "gelu_lut.h"

#include "backends/x86/tmpl_gelu.h"

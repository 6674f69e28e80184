// GELU (exact erf) for avx2: clef_f32_gelu_fwd__avx2, clef_f32_gelu_bwd__avx2,
// and clef_f32_erf__avx2 (tests). Body: backends/x86/tmpl_gelu.h, math in
// backends/x86/tmpl_math.h.
#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_gelu.h"

// normalize kernels for avx512: clef_f32_normalize_fwd__avx512 clef_f32_normalize_bwd__avx512 clef_f32_cosine_fwd__avx512 clef_f32_cosine_bwd__avx512 
// Body written once for both ISAs: backends/x86/tmpl_normalize.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_normalize.h"

// span kernels for avx512: clef_f32_span_mean__avx512 clef_f32_span_scatter__avx512 
// Body written once for both ISAs: backends/x86/tmpl_span.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_span.h"

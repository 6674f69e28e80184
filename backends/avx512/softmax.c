// softmax kernels for avx512: clef_f32_softmax_fwd__avx512 clef_f32_softmax_bwd__avx512 clef_f32_softmax_seg_fwd__avx512 clef_f32_softmax_seg_bwd__avx512 
// Body written once for both ISAs: backends/x86/tmpl_softmax.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_softmax.h"

// layernorm kernels for avx512: clef_f32_layernorm_fwd__avx512 clef_f32_layernorm_bwd__avx512 
// Body written once for both ISAs: backends/x86/tmpl_layernorm.h (vector layer
// in this directory's vec.h).
#include <math.h>
#include <string.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_layernorm.h"

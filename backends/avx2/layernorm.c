// layernorm kernels for avx2: clef_f32_layernorm_fwd__avx2 clef_f32_layernorm_bwd__avx2 
// Body written once for both ISAs: backends/x86/tmpl_layernorm.h (vector layer
// in this directory's vec.h).
#include <math.h>
#include <string.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_layernorm.h"

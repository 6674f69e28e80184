// gather kernels for avx2: clef_f32_gather_rows__avx2 clef_f32_scatter_add_rows__avx2 
// Body written once for both ISAs: backends/x86/tmpl_gather.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_gather.h"

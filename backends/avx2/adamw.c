// adamw kernels for avx2: clef_f32_adamw__avx2 
// Body written once for both ISAs: backends/x86/tmpl_adamw.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_adamw.h"

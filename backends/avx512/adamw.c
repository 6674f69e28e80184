// adamw kernels for avx512: clef_f32_adamw__avx512
// Written once for both ISAs: helpers in backends/x86/tmpl_adamw.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_adamw.h"

void clef_f32_adamw__avx512(size_t n, float *theta, const float *g, float *m,
                            float *v, const clef_adamw_args *a)
{
#include "backends/x86/body/adamw.h"
}

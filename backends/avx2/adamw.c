// adamw kernels for avx2: clef_f32_adamw__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_adamw.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_adamw.h"

void clef_f32_adamw__avx2(size_t n, float *theta, const float *g, float *m,
                          float *v, const clef_adamw_args *a)
{
#include "backends/x86/body/adamw.h"
}

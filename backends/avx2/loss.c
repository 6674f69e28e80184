// loss kernels for avx2: clef_f32_loss__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_loss.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_loss.h"

void clef_f32_loss__avx2(int nq, const int *off, const int *is_score,
                         const float *z, const float *y,
                         const clef_loss_args *a, float *p, float *dz,
                         double *loss)
{
#include "backends/x86/body/loss.h"
}

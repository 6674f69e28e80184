// bias kernels for avx2: clef_f32_bias_add__avx2 clef_f32_colsum__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_bias.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#include "backends/x86/tmpl_bias.h"

void clef_f32_bias_add__avx2(int rows, int n, const float *b, float *y)
{
#include "backends/x86/body/bias_add.h"
}

void clef_f32_colsum__avx2(int rows, int n, const float *dy, float *db)
{
#include "backends/x86/body/colsum.h"
}

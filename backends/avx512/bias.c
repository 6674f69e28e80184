// bias kernels for avx512: clef_f32_bias_add__avx512 clef_f32_colsum__avx512 
// Written once for both ISAs: helpers in backends/x86/tmpl_bias.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#include "backends/x86/tmpl_bias.h"

void clef_f32_bias_add__avx512(int rows, int n, const float *b, float *y)
{
    CLEF_NARROW(n <= 8, clef_f32_bias_add__avx2(rows, n, b, y));
#include "backends/x86/body/bias_add.h"
}

void clef_f32_colsum__avx512(int rows, int n, const float *dy, float *db)
{
    CLEF_NARROW(n <= 8, clef_f32_colsum__avx2(rows, n, dy, db));
#include "backends/x86/body/colsum.h"
}

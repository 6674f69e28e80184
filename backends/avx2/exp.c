// The vector exp of avx2 alone, for its accuracy test: clef_f32_exp__avx2.
// Math in backends/x86/tmpl_math.h, body in backends/x86/body/exp.h.
#include "vec.h"
#include "avx2.h"

void clef_f32_exp__avx2(size_t n, const float *x, float *y)
{
#include "backends/x86/body/exp.h"
}

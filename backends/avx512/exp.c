// The vector exp of avx512 alone, for its accuracy test: clef_f32_exp__avx512.
// Math in backends/x86/tmpl_math.h, body in backends/x86/body/exp.h.
#include "vec.h"
#include "avx512.h"

void clef_f32_exp__avx512(size_t n, const float *x, float *y)
{
#include "backends/x86/body/exp.h"
}

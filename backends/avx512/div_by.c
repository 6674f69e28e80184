// Division by one value for avx512: clef_f32_div_by__avx512 (tests: the
// softmax and AdamW kernels divide this way). Math in
// backends/x86/tmpl_math.h, body in backends/x86/body/div_by.h.
#include "vec.h"
#include "avx512.h"

void clef_f32_div_by__avx512(size_t n, const float *a, float b, float *y)
{
#include "backends/x86/body/div_by.h"
}

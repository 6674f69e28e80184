// layernorm kernels for avx512: clef_f32_layernorm_fwd__avx512 clef_f32_layernorm_bwd__avx512 
// Body written once for both ISAs: backends/x86/tmpl_layernorm.h (vector layer
// in this directory's vec.h).
#include <math.h>
#include <string.h>

#include "vec.h"
#include "avx512.h"

// The template's hooks (backends/x86/tmpl_layernorm.h): none. Rows of 8
// floats or fewer, the only ones AVX2 takes its own way, never get here (the
// kernels hand them to AVX2).
#define LN_FWD_ISA_ROWS(rows, n, x, gamma, beta, y, xhat, rstd)                \
    do {                                                                       \
    } while (0)
#define LN_BWD_ISA_ROWS(r, rows, n, dy, xhat, rstd, gamma, dx, sg, sb)         \
    do {                                                                       \
    } while (0)

#include "backends/x86/tmpl_layernorm.h"

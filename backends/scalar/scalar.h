// The scalar reference backend: one declaration per kernel, named
// clef_f32_<op>__scalar. The kernels are the numerical reference every other
// backend is checked against: plain output-owned loops, float accumulation in
// the natural loop order, compiled with -ffp-contract=off and no fast-math.
// Contracts (shapes, overwrite vs accumulate) are in backends/kernels.h.
#ifndef CLEF_SCALAR_H
#define CLEF_SCALAR_H

#include "kernels.h"

// Every kernel, from the op list: clef_f32_<op>__scalar, in
// backends/scalar/<family>.c (gemm.c, bias.c, layernorm.c, gelu.c,
// softmax.c, softmax_seg.c, attention.c, span.c, gather.c, normalize.c,
// adamw.c, loss.c).
// The bf16 ops (gemm_bf16.c): clef_bf16_gemm_nt__scalar, ...,
// clef_cvt_f32_bf16__scalar (kernels.h CLEF_SSYM).
#define CLEF_SCALAR_DECL(op, sig, unit, work)                                  \
    clef_##sig##_t CLEF_SSYM(op, unit);
CLEF_OPS(CLEF_SCALAR_DECL)

#endif

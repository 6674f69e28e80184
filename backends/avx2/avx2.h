// The AVX2 + FMA backend: every kernel and the complete table.
// Kernels live in backends/avx2/<family>.c; only CPUs with avx2, fma and f16c
// (and OS ymm state) may call them: see scheduler/cpu.h, backends/registry.h.
#ifndef CLEF_AVX2_H
#define CLEF_AVX2_H

#include "kernels.h"

// Every kernel, from the op list: clef_f32_<op>__avx2, the GEMMs
// clef_f32_gemm_nt_6x16__avx2 (their register tile in the name).
#define CLEF_AVX2_GEMM_TILE 6x16
#define CLEF_AVX2_DECL(op, sig, unit, work)                                    \
    CLEF_KERNEL_DECL(op, sig, unit, avx2, CLEF_AVX2_GEMM_TILE)
CLEF_OPS(CLEF_AVX2_DECL)
// erf alone, for its accuracy test (gelu.c)
void clef_f32_erf__avx2(size_t n, const float *x, float *y);
// y (n) = a (n) / b as its softmax and AdamW divide, for its test (div_by.c)
void clef_f32_div_by__avx2(size_t n, const float *a, float b, float *y);
// y (n) = e^x (n), the softmax's and loss's exp, for its test (exp.c)
void clef_f32_exp__avx2(size_t n, const float *x, float *y);
// Pre-packed GEMM operands (kernels.h), on the same microkernel.
extern const clef_gemm_prepack clef_gemm_prepack_6x16__avx2;

// Every op has an entry that works for every shape; the bf16 GEMMs are
// this backend's fp32 GEMMs on operands widened to float (gemm_bf16.c), for
// CPUs without bf16 arithmetic.
extern clef_kernels clef_avx2_kernels;

#endif

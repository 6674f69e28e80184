// The AVX2 + FMA backend: every kernel and the complete table.
// Kernels live in backends/avx2/<family>.c; only CPUs with avx2, fma and f16c
// (and OS ymm state) may call them: see scheduler/cpu.h, backends/registry.h.
#ifndef CLEF_AVX2_H
#define CLEF_AVX2_H

#include "isa_decls.h"

CLEF_ISA_GEMM_DECL(clef_f32_gemm_nt_6x16__avx2)
CLEF_ISA_GEMM_DECL(clef_f32_gemm_nn_6x16__avx2)
CLEF_ISA_GEMM_DECL(clef_f32_gemm_tn_6x16__avx2)
// Pre-packed GEMM operands (kernels.h), on the same microkernel.
extern const clef_gemm_prepack clef_gemm_prepack_6x16__avx2;
CLEF_ISA_KERNEL_DECLS(avx2)

// Complete: every op has an entry that works for every shape.
extern const clef_kernels clef_avx2_kernels;

#endif

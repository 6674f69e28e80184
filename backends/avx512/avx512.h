// The AVX-512 backend: every kernel and the complete table.
// Kernels live in backends/avx512/<family>.c; only CPUs with avx512f/bw/dq/vl
// and fma (and OS zmm state) may call them: see scheduler/cpu.h,
// backends/registry.h.
#ifndef CLEF_AVX512_H
#define CLEF_AVX512_H

#include "../avx2/isa_decls.h"

CLEF_ISA_GEMM_DECL(clef_f32_gemm_nt_14x32__avx512)
CLEF_ISA_GEMM_DECL(clef_f32_gemm_nn_14x32__avx512)
CLEF_ISA_GEMM_DECL(clef_f32_gemm_tn_14x32__avx512)
// Pre-packed GEMM operands (kernels.h), on the same microkernel.
extern const clef_gemm_prepack clef_gemm_prepack_14x32__avx512;
CLEF_ISA_KERNEL_DECLS(avx512)

// Complete: every op has an entry that works for every shape.
extern const clef_kernels clef_avx512_kernels;

#endif

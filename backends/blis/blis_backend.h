// The BLIS backend (BLIS 0.9, Debian's OpenMP build): the three GEMM layouts
// through bli_sgemm_ex with general strides; every other op falls through to
// the best hand-written kernel (clef_best_handwritten()).
//
// BLIS picks a sub-configuration (its kernel set) for the CPU at start-up.
// On CPUs it does not know it picks `generic`: portable C, no SIMD kernels,
// several times slower. clef reports the choice (clef_blis_arch(), in the
// kernel names, CLEF_VERBOSE and clef-bench's header) and `auto` routes around
// a generic BLIS. (BLIS_ARCH_TYPE, BLIS's override, aborts in this build.)
//
// Threads: each call passes BLIS a runtime object with clef's thread count
// (omp_get_max_threads()), or 1 inside an OpenMP parallel region, so BLIS
// never nests a team inside clef's (and 1 for tiny GEMMs). BLIS splits GEMM over the M and N loops
// only, never over K: results do not depend on the thread count.
#ifndef CLEF_BLIS_BACKEND_H
#define CLEF_BLIS_BACKEND_H

#include "kernels.h"

void clef_f32_gemm_nt__blis(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate);
void clef_f32_gemm_nn__blis(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate);
void clef_f32_gemm_tn__blis(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate);

// The table as BLIS fills it: its GEMMs (names carrying the
// sub-configuration, e.g. "clef_f32_gemm_nt__blis_generic", resolved by the
// first clef_blis_unavailable() or clef_blis_kernels() call); every other
// op NULL. The selector (scheduler/registry.c) points
// those at the best hand-written kernels once; take the table through the
// registry (clef_backend_find("blis")) to get it composed.
extern clef_kernels clef_blis_table;
const clef_kernels *clef_blis_kernels(void);
const char *clef_blis_unavailable(void); // always NULL: BLIS runs anywhere

const char *clef_blis_arch(void); // BLIS's sub-configuration: "zen3", "generic"
int clef_blis_arch_is_generic(void); // 1 when it is "generic"
const char *clef_blis_version(void); // "0.9.0"
// The thread count a GEMM of `flops` (2MNK) called here gives BLIS: clef's
// count, or 1 inside a parallel region or below 2^18 flops.
int clef_blis_call_threads(double flops);

#endif

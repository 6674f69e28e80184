// The oneDNN backend (libdnnl 2.6, C API): matmul for the three GEMM layouts,
// layer_normalization, eltwise gelu_erf and softmax forward and backward.
// Every other op falls through to the best hand-written kernel
// (clef_best_handwritten(): avx512 > avx2 > scalar under CLEF_MAX_ISA); the
// table's names[] and CLEF_VERBOSE=1 show which.
//
// Primitives are created once per shape and cached (creating one costs
// milliseconds, reusing it microseconds): backends/onednn/cache.c.
// Threads: every primitive is planned and run on one thread, and clef splits
// the work (a GEMM's output in blocks fixed by its shape, the row-wise ops
// in core/rows.c's chunks) over its own team of omp_get_max_threads(), never
// nested in a parallel region. oneDNN thus never splits a sum by the thread
// count: with this backend the bits do not depend on it
// (tests/test_onednn.c, tests/test_thread_bits.c).
#ifndef CLEF_ONEDNN_H
#define CLEF_ONEDNN_H

#include <stddef.h>

#include "kernels.h"

// Kernels (backends/onednn/<op>.c). Outputs follow kernels.h: forward
// overwrites, backward accumulates. A primitive that oneDNN refuses to create
// makes the call fall through to the best hand-written kernel.
void clef_f32_gemm_nt__onednn(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate);
void clef_f32_gemm_nn__onednn(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate);
void clef_f32_gemm_tn__onednn(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate);
// bf16 src and weights, f32 dst (kernels.h gemm_bf16_*)
clef_gemm_bf16_t clef_bf16_gemm_nt__onednn;
clef_gemm_bf16_t clef_bf16_gemm_nn__onednn;
clef_gemm_bf16_t clef_bf16_gemm_tn__onednn;
void clef_f32_layernorm_fwd__onednn(int rows, int n, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y, float *xhat, float *rstd);
void clef_f32_layernorm_bwd__onednn(int rows, int n, const float *dy,
                                    const float *xhat, const float *rstd,
                                    const float *gamma, float *dx,
                                    float *dgamma, float *dbeta);
void clef_f32_gelu_fwd__onednn(size_t n, const float *x, float *y);
void clef_f32_gelu_bwd__onednn(size_t n, const float *x, const float *dy,
                               float *dx);
void clef_f32_softmax_fwd__onednn(int rows, int n, const float *x, float *y);
void clef_f32_softmax_bwd__onednn(int rows, int n, const float *y,
                                  const float *dy, float *dx);

// The table as oneDNN fills it: the ops it lacks are NULL. The selector (scheduler/registry.c) composes it once, after
// clef_onednn_unavailable() says oneDNN runs: it points those ops at the
// best hand-written kernels (clef_fill_fallthrough) and sets the kernels
// oneDNN's own ops fall back to for shapes it refuses. Take the table
// through the registry (clef_backend_find("onednn")) to get it composed.
extern clef_kernels clef_onednn_table;
const clef_kernels *clef_onednn_kernels(void); // resolved, as filled here
// The kernels gelu, softmax and layernorm use for shapes oneDNN refuses
// (scalar until the selector sets them; set once, before any use).
void clef_onednn_set_fallback(const clef_kernels *t);
// NULL when oneDNN can run here, else why not (engine creation failed).
const char *clef_onednn_unavailable(void);
// "2.6.3" (from dnnl_version()).
const char *clef_onednn_version(void);

// The primitive cache, for tests and clef-bench.
typedef struct clef_onednn_cache_stats {
    long hits, misses, evictions, uncached; // uncached: cache full and busy
    int entries, capacity;
} clef_onednn_cache_stats;
void clef_onednn_cache_get_stats(clef_onednn_cache_stats *s);
// Destroys every cached primitive not in use (tests; never needed otherwise).
void clef_onednn_cache_clear(void);

#endif

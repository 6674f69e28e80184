// bf16 GEMMs for CPUs without bf16 arithmetic (kernels.h, gemm_bf16_*):
// both operands widened to float, then the including backend's own fp32
// GEMM. Widening is exact (a bf16 value is the top half of a float), the
// product of two bf16 values is exact in float, and the sums are the fp32
// kernel's: the bf16 GEMMs' contract, at the fp32 kernel's speed less one
// pass over each operand, instead of the scalar reference's double sums
// (50-100 times slower). Portable C; the including file's ISA flags
// vectorise the widening.
//
// Operands are widened in their own layout (op(A) stored (ar, ac), op(B)
// (br, bc), as kernels.h lays them out) into per-thread scratch
// (backends/bf16_scratch.h), rows on the team when the operand is large and
// a team is free (CLEF_PAR_FOR): elementwise, so the bits never depend on the thread
// count, and the fp32 kernel's do not either.
#ifndef CLEF_GEMM_BF16_WIDEN_H
#define CLEF_GEMM_BF16_WIDEN_H

#include <stdint.h>
#include <string.h>

#include "backends/bf16_scratch.h"
#include "kernels.h"
#include "par.h"

// Below this many elements one thread widens an operand.
#define BF16_WIDEN_SERIAL 65536

// y (cols) = x (cols) widened to float.
static inline void bf16_widen_row(int cols, const uint16_t *x, float *y)
{
    uint32_t *yu = (uint32_t *)y;
#pragma omp simd
    for (int j = 0; j < cols; j++)
        yu[j] = (uint32_t)x[j] << 16;
}

// y (rows, cols) dense = x (rows, cols, stride ld) widened to float (no
// OpenMP region at all for a small operand: par.h).
static void bf16_widen_rows(int rows, int cols, const uint16_t *x, int ld,
                            float *y)
{
    CLEF_PAR_FOR((size_t)rows * cols >= BF16_WIDEN_SERIAL, int, r, rows,
        bf16_widen_row(cols, x + (size_t)r * ld, y + (size_t)r * cols);
    );
}

// C (M, N) [+]= op(A) op(B) on bf16 A, B: ta 1 for A (K, M) (tn), tb 1 for
// B (N, K) (nt). f32: the fp32 GEMM of the same form; fallback: the scalar
// reference, when the scratch cannot be had (same contract).
static inline void bf16_widen_gemm(int ta, int tb, int M, int N, int K,
                                   const uint16_t *A, int lda,
                                   const uint16_t *B, int ldb, float *C,
                                   int ldc, int accumulate, clef_gemm_fn f32,
                                   clef_gemm_bf16_fn fallback)
{
    if (M <= 0 || N <= 0)
        return;
    const int ar = ta ? K : M, ac = ta ? M : K;
    const int br = tb ? N : K, bc = tb ? K : N;
    const size_t na = (size_t)ar * ac, nb = (size_t)br * bc;
    float *Aw = bf16_scratch_get(&bf16_tls.a, sizeof(float) * (na ? na : 1));
    float *Bw = bf16_scratch_get(&bf16_tls.b, sizeof(float) * (nb ? nb : 1));
    if (!Aw || !Bw) {
        fallback(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
    }
    bf16_widen_rows(ar, ac, A, lda, Aw);
    bf16_widen_rows(br, bc, B, ldb, Bw);
    f32(M, N, K, Aw, ac > 0 ? ac : 1, Bw, bc > 0 ? bc : 1, C, ldc, accumulate);
}

// Defines the kernel `name` (spelled out in full where it is used, so that
// it can be found by its name): ta, tb as above, f32 the fp32 GEMM it runs,
// ref the scalar reference it falls back to.
#define CLEF_BF16_WIDEN_GEMM(name, ta, tb, f32, ref)                           \
    void name(int M, int N, int K, const uint16_t *A, int lda,                 \
              const uint16_t *B, int ldb, float *C, int ldc, int accumulate)   \
    {                                                                          \
        bf16_widen_gemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate,   \
                        f32, ref);                                             \
    }

#endif

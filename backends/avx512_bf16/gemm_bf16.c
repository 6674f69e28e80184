// bf16 GEMMs on AVX512-BF16 (vdpbf16ps): C (M,N) = [C +] op(A) · op(B).
//
// Both operands are packed (backends/x86/bf16_pack.h): A row-major with K
// padded to even, B in VNNI panels of 32 columns. The microkernel keeps a
// 12×32 block of C in 24 zmm accumulators; per pair of k it loads the two
// B vectors of the panel (16 dwords each, (B[2kp][n], B[2kp+1][n])) and,
// per row, broadcasts the dword (A[m][2kp], A[m][2kp+1]): one vdpbf16ps
// adds both products to 16 columns. K runs in blocks of KCP pairs (C is
// loaded and stored once per block); column chunks of CHUNK panels run in
// parallel, each packing its own B panels; the split never touches a sum,
// so the bits do not depend on the thread count. vdpbf16ps rounds each
// step to float (round to nearest even) and treats denormal inputs and
// outputs as zero.
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>

#include "avx512_bf16.h"
#include "backends/scalar/scalar.h"
#include "backends/x86/bf16_pack.h"

#define MR 12
#define KCP 256 // pairs of k per block: a 32 KiB B panel block
#define CHUNK 4 // B panels per parallel chunk (128 columns)
#define SERIAL_FLOPS 4194304.0

// C[0..mr, 0..nv) (ld ldc) [+]= the 12×32 block over kc pairs:
// a: rows of the A pack (ld lda32 dwords) at the block's first pair,
// b: the B panel at the block's first pair.
static inline __attribute__((always_inline)) void
ukr(const int mr, int kc, const uint32_t *a, size_t lda32, const uint32_t *b,
    float *C, int ldc, int nv, int add)
{
    // mr is a constant at every call (always_inline): the loops over rows
    // unroll and the accumulators stay in registers
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int kp = 0; kp < kc; kp++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(b + 32 * (size_t)kp);
        const __m512bh b1 =
            (__m512bh)_mm512_load_si512(b + 32 * (size_t)kp + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            if (r < mr) {
                const __m512bh av =
                    (__m512bh)_mm512_set1_epi32((int)a[r * lda32 + kp]);
                acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
                acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
            }
        }
    }
    const __mmask16 m0 = bf16_mask16(nv), m1 = bf16_mask16(nv - 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        if (r >= mr)
            continue;
        float *c = C + (size_t)r * ldc;
        __m512 c0 = acc[r][0], c1 = acc[r][1];
        if (add) {
            c0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, c), c0);
            c1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, c + 16), c1);
        }
        _mm512_mask_storeu_ps(c, m0, c0);
        _mm512_mask_storeu_ps(c + 16, m1, c1);
    }
}

#define UKR_CASE(n)                                                            \
    case n:                                                                    \
        ukr(n, kc, a, lda32, b, C, ldc, nv, add);                              \
        break;

static void ukr_any(int mr, int kc, const uint32_t *a, size_t lda32,
                    const uint32_t *b, float *C, int ldc, int nv, int add)
{
    switch (mr) {
        UKR_CASE(1)
        UKR_CASE(2)
        UKR_CASE(3)
        UKR_CASE(4)
        UKR_CASE(5)
        UKR_CASE(6)
        UKR_CASE(7)
        UKR_CASE(8)
        UKR_CASE(9)
        UKR_CASE(10)
        UKR_CASE(11)
        UKR_CASE(12)
    default:
        break;
    }
}

static void gemm(int ta, int tb, int M, int N, int K, const uint16_t *A,
                 int lda, const uint16_t *B, int ldb, float *C, int ldc,
                 int accumulate, clef_gemm_bf16_fn fallback)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) {
        if (!accumulate)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++)
                    C[(size_t)i * ldc + j] = 0.0f;
        return;
    }
    const int KPp = (K + 1) / 2,
              np = (N + CLEF_BF16_PANEL - 1) / CLEF_BF16_PANEL;
    const size_t lda32 = (size_t)KPp; // dwords per row of the A pack
    uint16_t *Ap = bf16_scratch_get(&bf16_tls.a, (size_t)M * lda32 * 4);
    uint32_t *Bp = bf16_scratch_get(
        &bf16_tls.b, (size_t)np * KPp * CLEF_BF16_PANEL * sizeof(uint32_t));
    if (!Ap || !Bp) { // no packing scratch: the reference, same contract
        fallback(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
    }
    const int nchunks = (np + CHUNK - 1) / CHUNK, nmb = (M + 15) / 16;
    const int par = nchunks > 1 && 2.0 * M * N * K >= SERIAL_FLOPS &&
                    omp_get_max_threads() > 1 && !omp_in_parallel();
#pragma omp parallel if (par)
    {
#pragma omp for schedule(static)
        for (int mb = 0; mb < nmb; mb++)
            bf16_pack_a(ta, M, K, A, lda, Ap, KPp, 16 * mb,
                        16 * mb + 16 < M ? 16 * mb + 16 : M);
#pragma omp for schedule(static)
        for (int ch = 0; ch < nchunks; ch++) {
            const int p0 = ch * CHUNK, p1 = p0 + CHUNK < np ? p0 + CHUNK : np;
            bf16_pack_b(tb, N, K, B, ldb, Bp, KPp, p0, p1);
            for (int k0 = 0; k0 < KPp; k0 += KCP) {
                const int kc = KPp - k0 < KCP ? KPp - k0 : KCP;
                const int add = k0 > 0 || accumulate;
                for (int p = p0; p < p1; p++) {
                    const uint32_t *b =
                        Bp + ((size_t)p * KPp + k0) * CLEF_BF16_PANEL;
                    const int n0 = p * CLEF_BF16_PANEL;
                    const int nv = N - n0 < 32 ? N - n0 : 32;
                    for (int m0 = 0; m0 < M; m0 += MR) {
                        const int mr = M - m0 < MR ? M - m0 : MR;
                        const uint32_t *a =
                            (const uint32_t *)Ap + (size_t)m0 * lda32 + k0;
                        float *c = C + (size_t)m0 * ldc + n0;
                        if (mr == MR)
                            ukr(MR, kc, a, lda32, b, c, ldc, nv, add);
                        else
                            ukr_any(mr, kc, a, lda32, b, c, ldc, nv, add);
                    }
                }
            }
        }
    }
}

void clef_bf16_gemm_nt_12x32__avx512bf16(int M, int N, int K, const uint16_t *A,
                                         int lda, const uint16_t *B, int ldb,
                                         float *C, int ldc, int accumulate)
{
    gemm(0, 1, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
         clef_bf16_gemm_nt__scalar);
}

void clef_bf16_gemm_nn_12x32__avx512bf16(int M, int N, int K, const uint16_t *A,
                                         int lda, const uint16_t *B, int ldb,
                                         float *C, int ldc, int accumulate)
{
    gemm(0, 0, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
         clef_bf16_gemm_nn__scalar);
}

void clef_bf16_gemm_tn_12x32__avx512bf16(int M, int N, int K, const uint16_t *A,
                                         int lda, const uint16_t *B, int ldb,
                                         float *C, int ldc, int accumulate)
{
    gemm(1, 0, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
         clef_bf16_gemm_tn__scalar);
}

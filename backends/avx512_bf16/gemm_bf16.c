// bf16 GEMMs on AVX512-BF16 (vdpbf16ps): C (M,N) = [C +] op(A) · op(B).
//
// Both operands are packed: op(B) into VNNI panels of 32 columns
// (backends/x86/bf16_pack.h, shared with the AMX kernels), op(A) row-major
// with K padded to even (pack_a_rows: row copies, or for Aᵀ pairs of rows
// of A interleaved and transposed in 16×16 dword blocks). The microkernel
// keeps a 12×32 block of C in 24 zmm accumulators; per pair of k it loads
// the two B vectors of the panel (16 dwords each, (B[2kp][n], B[2kp+1][n]))
// and, per row, broadcasts the dword (A[m][2kp], A[m][2kp+1]): one
// vdpbf16ps adds both products to 16 columns. It prefetches its C block
// first, so the load (or the store's read for ownership) at the end does
// not wait on memory. K runs in blocks of KCP pairs (C is loaded and stored
// once per block); column chunks of CHUNK panels run in parallel, each
// packing its own B panels; the split never touches a sum, so the bits do
// not depend on the thread count. vdpbf16ps rounds each step to float
// (round to nearest even) and treats denormal inputs and outputs as zero.
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "avx512_bf16.h"
#include "backends/scalar/scalar.h"
#include "backends/x86/bf16_pack.h"
#include "par.h"

#define MR 12
#define KCP 256 // pairs of k per block: a 32 KiB B panel block
#define CHUNK 4 // B panels per parallel chunk (128 columns)
#define SERIAL_FLOPS 4194304.0

// Rows [12 q, 12 q + 12) ∩ [0, M) of the A pack (M rows; the microkernel
// reads only the rows of C it writes): row m holds KPp dwords (A[m][2kp],
// A[m][2kp+1]) of op(A), an odd K's last high half zero. trans 0: A (M,K),
// row copies; trans 1: A (K,M): rows 2kp and 2kp+1 of A interleaved, 16
// pairs × 16 columns at a time, the 16×16 dwords transposed into 12 rows.
static void pack_a_rows(int trans, int M, int K, const uint16_t *A, int lda,
                        uint32_t *Ap, int KPp, int q)
{
    const int m0 = MR * q, mr = M - m0 < MR ? M - m0 : MR;
    if (!trans) {
        for (int r = 0; r < mr; r++) {
            uint16_t *d = (uint16_t *)(Ap + (size_t)(m0 + r) * KPp);
            memcpy(d, A + (size_t)(m0 + r) * lda, (size_t)K * sizeof *d);
            memset(d + K, 0, (2 * (size_t)KPp - K) * sizeof *d);
        }
        return;
    }
    for (int kp0 = 0; kp0 < KPp; kp0 += 16) {
        const int nkp = KPp - kp0 < 16 ? KPp - kp0 : 16;
        __m512i v[16];
        bf16_pairs_t16(A, lda, K, kp0, m0, mr, v); // v[r]: row m0 + r
        const __mmask16 keep = bf16_mask16(nkp);
        for (int r = 0; r < mr; r++)
            _mm512_mask_storeu_epi32(Ap + (size_t)(m0 + r) * KPp + kp0, keep,
                                     v[r]);
    }
}

// C[0..mr, 0..nv) (ld ldc) [+]= the 12×32 block over kc pairs:
// a: row 0 of the block's rows in the A pack at the block's first pair (ld
// lda32 dwords), b: the B panel at the block's first pair.
static inline __attribute__((always_inline)) void
ukr(const int mr, int kc, const uint32_t *a, size_t lda32, const uint32_t *b,
    float *C, int ldc, int nv, int add)
{
    // mr is a constant at every call (always_inline): the loops over rows
    // unroll and the accumulators stay in registers
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
        if (r < mr) { // C is read or written after the loop: fetch it now
            _mm_prefetch((const char *)(C + (size_t)r * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(C + (size_t)r * ldc + 16), _MM_HINT_T0);
        }
    }
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

// The chunk's panels [p0, p1) over K block [k0, k0 + kc): every row of C
// against each panel (its B block stays in L1).
static void chunk_block(int M, int N, const uint32_t *Ap, const uint32_t *Bp,
                        int KPp, int k0, int kc, int p0, int p1, float *C,
                        int ldc, int add)
{
    for (int p = p0; p < p1; p++) {
        const uint32_t *b = Bp + ((size_t)p * KPp + k0) * CLEF_BF16_PANEL;
        const int n0 = p * CLEF_BF16_PANEL;
        const int nv = N - n0 < 32 ? N - n0 : 32;
        for (int m0 = 0; m0 < M; m0 += MR) {
            const int mr = M - m0 < MR ? M - m0 : MR;
            const uint32_t *a = Ap + (size_t)m0 * KPp + k0;
            float *c = C + (size_t)m0 * ldc + n0;
            if (mr == MR)
                ukr(MR, kc, a, KPp, b, c, ldc, nv, add);
            else
                ukr_any(mr, kc, a, KPp, b, c, ldc, nv, add);
        }
    }
}

static void gemm(int ta, int tb, int M, int N, int K, const uint16_t *A,
                 int lda, const uint16_t *B, int ldb, float *C, int ldc,
                 int accumulate, clef_gemm_bf16_fn fallback)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) { // the empty sum
        clef_gemm_empty_sum(M, N, C, ldc, accumulate);
        return;
    }
    const int KPp = (K + 1) / 2,
              np = (N + CLEF_BF16_PANEL - 1) / CLEF_BF16_PANEL,
              nblk = (M + MR - 1) / MR;
    uint32_t *Ap =
        bf16_scratch_get(&bf16_tls.a, (size_t)M * KPp * sizeof(uint32_t));
    uint32_t *Bp = bf16_scratch_get(
        &bf16_tls.b, (size_t)np * KPp * CLEF_BF16_PANEL * sizeof(uint32_t));
    if (!Ap || !Bp) { // no packing scratch: the reference, same contract
        fallback(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
    }
    const int nchunks = (np + CHUNK - 1) / CHUNK;
    const int par = nchunks > 1 && 2.0 * M * N * K >= SERIAL_FLOPS;
    CLEF_PAR_FOR(par, int, q, nblk,
        pack_a_rows(ta, M, K, A, lda, Ap, KPp, q);
    );
    CLEF_PAR_FOR(par, int, ch, nchunks,
        const int p0 = ch * CHUNK, p1 = p0 + CHUNK < np ? p0 + CHUNK : np;
        bf16_pack_b(tb, N, K, B, ldb, Bp, KPp, p0, p1);
        for (int k0 = 0; k0 < KPp; k0 += KCP) {
            const int kc = KPp - k0 < KCP ? KPp - k0 : KCP;
            chunk_block(M, N, Ap, Bp, KPp, k0, kc, p0, p1, C, ldc,
                        k0 > 0 || accumulate);
        }
    );
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

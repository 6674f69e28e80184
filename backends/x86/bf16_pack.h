// Packing of bf16 GEMM operands for the AMX and AVX512-BF16 kernels
// (backends/amx/, backends/avx512_bf16/; AVX-512 F/BW/VL code, included only
// by files built with those flags).
//
// Both kernels read op(B) in one layout, zero-padded so that no kernel ever
// reads an element outside op(B) (K,N), and padded elements add exact zeros
// (each packs op(A) in its own layout, in its own file):
//   B  VNNI panels of 32 columns: panel p holds, for each pair kp < KPp, 32
//      dwords (B[2kp][n], B[2kp+1][n]) for n = 32p .. 32p+31 (low half the
//      even k), zeros past N and K. An AMX B tile is 16 kp rows × 16 of those
//      dwords (stride 128 bytes); the AVX512-BF16 kernel loads 2 × 16 dwords
//      per kp.
// KPp: pairs of k, ≥ ceil(K/2) (the AMX kernel rounds it up to 16, a tile's
// depth). The layouts gemm_nt/nn/tn read (kernels.h) map onto it as:
//   op(B) = Bᵀ, B (N,K) (nt): each dword is two consecutive values of a row
//   of B: 16×16 blocks of dwords from 16 rows, transposed;  op(B) = B (K,N)
//   (nn, tn): pairs of rows of B interleaved.
#ifndef CLEF_X86_BF16_PACK_H
#define CLEF_X86_BF16_PACK_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backends/bf16_scratch.h" // the packing scratch, per thread

#define CLEF_BF16_PANEL 32 // columns of a B panel
// Pairs of rows of B (K,N) the nn / tn pack prefetches ahead: each row's
// piece of a chunk is 256 bytes on a page of its own when B is wide, where
// the hardware prefetchers do not follow (Zen 5, a weight cold in memory:
// 1.2-1.4x the packed nn product at M = 4 and 32, docs/PERF-NOTES.md).
#define BF16_PF_PAIRS 8

static inline __mmask16 bf16_mask16(int n)
{
    return n >= 16  ? (__mmask16)0xffff
           : n <= 0 ? (__mmask16)0
                    : (__mmask16)((1u << n) - 1u);
}

// 16 bf16 of row a and 16 of row b (each n valid values, the rest zero)
// as 16 dwords a | b << 16.
static inline __m512i bf16_pair16(const uint16_t *a, const uint16_t *b, int n)
{
    const __mmask16 m = bf16_mask16(n);
    const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a));
    if (!b)
        return lo;
    const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b));
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// r[i] (16 dwords each) := column i of the 16×16 dword matrix r.
static inline __attribute__((always_inline)) void
bf16_transpose16(__m512i r[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    // u[4g + j], lane L: column 4L + j of rows 4g .. 4g+3
    for (int g = 0; g < 16; g += 4) {
        u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
        u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
        u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
        u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
    }
    for (int j = 0; j < 4; j++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44);
        const __m512i x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xee);
        const __m512i y0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
        const __m512i y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xee);
        r[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + j] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
        r[8 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
    }
}

// Pairs kp0 .. kp0 + 15 of rows of A (K,M) (Aᵀ operands), columns m0 ..
// m0 + 15 (valid of them, the rest zero), as 16 rows: v[r] holds the 16
// dwords (A[2kp][m0 + r], A[2kp+1][m0 + r]), zeros for pairs past K.
static inline __attribute__((always_inline)) void
bf16_pairs_t16(const uint16_t *A, int lda, int K, int kp0, int m0, int valid,
               __m512i v[16])
{
    for (int i = 0; i < 16; i++) {
        const int k = 2 * (kp0 + i);
        v[i] = k < K ? bf16_pair16(A + (size_t)k * lda + m0,
                                   k + 1 < K ? A + (size_t)(k + 1) * lda + m0
                                             : NULL,
                                   valid)
                     : _mm512_setzero_si512();
    }
    bf16_transpose16(v);
}

// Columns [nb, nb + 16) of panels of B (N,K) (nt): rows nb.. of B, 16
// dwords (32 values of k) each, as 16×16 blocks of dwords transposed (row kp
// of the panel); dh: the panel's half at pair 0.
static inline void bf16_pack_bt_half(int N, int K, const uint16_t *B, int ldb,
                                     uint32_t *dh, int KPp, int nb)
{
    const int nn = N - nb; // valid columns
    for (int kp0 = 0; kp0 < KPp; kp0 += 16) {
        const int nk = K - 2 * kp0; // values of k left
        const __mmask32 mk = nk >= 32  ? 0xffffffffu
                             : nk <= 0 ? 0u
                                       : (__mmask32)((1u << nk) - 1u);
        __m512i r[16];
        if (2 * kp0 + 128 < K) // the rows 4 blocks ahead
            for (int j = 0; j < 16 && j < nn; j++)
                _mm_prefetch((const char *)(B + (size_t)(nb + j) * ldb +
                                            2 * (size_t)kp0 + 128),
                             _MM_HINT_T0);
        for (int j = 0; j < 16; j++)
            r[j] = j < nn
                       ? _mm512_maskz_loadu_epi16(
                             mk, B + (size_t)(nb + j) * ldb + 2 * (size_t)kp0)
                       : _mm512_setzero_si512();
        bf16_transpose16(r);
        const int nrow = KPp - kp0 < 16 ? KPp - kp0 : 16;
        for (int i = 0; i < nrow; i++)
            _mm512_store_si512(dh + (size_t)(kp0 + i) * CLEF_BF16_PANEL, r[i]);
    }
}

// Panels [p0, p1) of B (K,N) (nn, tn): per pair of rows of B, the 32·(p1-p0)
// columns read in one sweep (whole cache lines) and interleaved into
// dwords, 32 per panel.
static inline void bf16_pack_bn(int N, int K, const uint16_t *B, int ldb,
                                uint32_t *Bp, int KPp, int p0, int p1)
{
    // word 2j of a result: x[j], word 2j+1: y[j] (lo: j < 16, hi: j ≥ 16)
    __m512i lo, hi;
    {
        uint16_t il[32], ih[32];
        for (int j = 0; j < 16; j++) {
            il[2 * j] = (uint16_t)j, il[2 * j + 1] = (uint16_t)(32 + j);
            ih[2 * j] = (uint16_t)(16 + j), ih[2 * j + 1] = (uint16_t)(48 + j);
        }
        lo = _mm512_loadu_si512(il), hi = _mm512_loadu_si512(ih);
    }
    const int c0 = p0 * CLEF_BF16_PANEL;
    const int c1 = p1 * CLEF_BF16_PANEL < N ? p1 * CLEF_BF16_PANEL : N;
    for (int kp = 0; kp < KPp; kp++) {
        const int rows = K - 2 * kp; // rows 2kp, 2kp + 1 where they exist
        const uint16_t *r0 = rows > 0 ? B + 2 * (size_t)kp * ldb : NULL;
        // the two rows BF16_PF_PAIRS pairs ahead, the chunk's columns
        if (2 * (kp + BF16_PF_PAIRS) + 1 < K)
            for (int c = c0; c < c1; c += 32) {
                const uint16_t *f =
                    B + 2 * (size_t)(kp + BF16_PF_PAIRS) * ldb + c;
                _mm_prefetch((const char *)f, _MM_HINT_T0);
                _mm_prefetch((const char *)(f + ldb), _MM_HINT_T0);
            }
        for (int p = p0; p < p1; p++) {
            uint32_t *d = Bp + ((size_t)p * KPp + kp) * CLEF_BF16_PANEL;
            if (!r0) { // KPp past K (the AMX kernel's whole tiles): zeros
                _mm512_store_si512(d, _mm512_setzero_si512());
                _mm512_store_si512(d + 16, _mm512_setzero_si512());
                continue;
            }
            const int n0 = p * CLEF_BF16_PANEL, nn = N - n0;
            const __mmask32 m =
                nn >= 32 ? 0xffffffffu : (__mmask32)((1u << nn) - 1u);
            const __m512i x = _mm512_maskz_loadu_epi16(m, r0 + n0);
            const __m512i y = rows > 1
                                  ? _mm512_maskz_loadu_epi16(m, r0 + ldb + n0)
                                  : _mm512_setzero_si512();
            _mm512_store_si512(d, _mm512_permutex2var_epi16(x, lo, y));
            _mm512_store_si512(d + 16, _mm512_permutex2var_epi16(x, hi, y));
        }
    }
}

// Panels [p0, p1) of the B pack. trans 1: B (N,K) (nt); 0: B (K,N).
static inline void bf16_pack_b(int trans, int N, int K, const uint16_t *B,
                               int ldb, uint32_t *Bp, int KPp, int p0, int p1)
{
    if (!trans) {
        bf16_pack_bn(N, K, B, ldb, Bp, KPp, p0, p1);
        return;
    }
    for (int p = p0; p < p1; p++)
        for (int h = 0; h < 2; h++)
            bf16_pack_bt_half(N, K, B, ldb,
                              Bp + (size_t)p * KPp * CLEF_BF16_PANEL + 16 * h,
                              KPp, p * CLEF_BF16_PANEL + 16 * h);
}

#endif

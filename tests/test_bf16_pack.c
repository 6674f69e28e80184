// The VNNI B panels both hardware bf16 kernels read (backends/x86/bf16_pack.h)
// against the layout written out element by element: for every pair kp <
// KPp and column n of panel p, the dword (B[2kp][n], B[2kp+1][n]) of op(B)
// (low half the even k), zero past N and K. Both forms (nt: B (N,K); nn/tn:
// B (K,N)), every remainder of the 32-column panel and of the k pair, and
// KPp rounded up to whole 16-pair tiles as the AMX kernel packs it: pairs
// wholly past K, which only the AMX kernel asks for, are checked here on
// any CPU with AVX-512 BW. Every dword of the pack is written (a sentinel
// fill must be gone). The same for the AMX kernels' A tiles
// (backends/x86/amx_pack.h), so their layout is checked on CPUs without AMX
// too. Skipped, with the reason, on a CPU without AVX-512 BW.
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__)
#include "isa_common.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include "backends/x86/amx_pack.h"

static void pack(int trans, int N, int K, const uint16_t *B, int ldb,
                 uint32_t *Bp, int KPp, int p0, int p1)
{
    bf16_pack_b(trans, N, K, B, ldb, Bp, KPp, p0, p1);
}

static void pack_a(int trans, int M, int K, const uint16_t *A, int lda,
                   uint16_t *Ap, int nkb, int mt0, int mt1)
{
    amx_pack_a_tiles(trans, M, K, A, lda, Ap, nkb, mt0, mt1);
}
#pragma GCC pop_options

// op(B)[k][n] of B, or 0 outside (K, N).
static uint32_t value(int trans, int N, int K, const uint16_t *B, int ldb,
                      int k, int n)
{
    if (k >= K || n >= N)
        return 0;
    return trans ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n];
}

// The first dword that differs from the layout, or -1.
static long pack_case(int trans, int N, int K, int KPp)
{
    const int ldb = (trans ? K : N) + 3, rows = trans ? N : K;
    const int np = (N + CLEF_BF16_PANEL - 1) / CLEF_BF16_PANEL;
    const size_t nb = (size_t)rows * ldb,
                 n = (size_t)np * KPp * CLEF_BF16_PANEL;
    uint16_t *B = malloc(nb * sizeof *B);
    uint32_t *Bp = aligned_alloc(64, (n * sizeof *Bp + 63) / 64 * 64);
    cr_assert(B && Bp);
    for (size_t i = 0; i < nb; i++) // distinct, nonzero values
        B[i] = (uint16_t)(1 + i % 65521);
    for (size_t i = 0; i < n; i++)
        Bp[i] = 0xdeadbeefu;
    pack(trans, N, K, B, ldb, Bp, KPp, 0, np);
    long bad = -1;
    for (int p = 0; p < np && bad < 0; p++)
        for (int kp = 0; kp < KPp && bad < 0; kp++)
            for (int j = 0; j < CLEF_BF16_PANEL; j++) {
                const int col = p * CLEF_BF16_PANEL + j;
                const uint32_t want =
                    value(trans, N, K, B, ldb, 2 * kp, col) |
                    value(trans, N, K, B, ldb, 2 * kp + 1, col) << 16;
                const size_t at = ((size_t)p * KPp + kp) * CLEF_BF16_PANEL + j;
                if (Bp[at] != want) {
                    bad = (long)at;
                    break;
                }
            }
    free(B);
    free(Bp);
    return bad;
}

Test(bf16_pack, b_panels_as_laid_out)
{
    avx512_packs_or_skip();
    static const int ns[] = {1, 15, 16, 17, 31, 32, 33, 100};
    static const int ks[] = {1, 2, 3, 31, 32, 33, 34, 65, 100};
    for (int trans = 0; trans < 2; trans++)
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
            for (size_t b = 0; b < sizeof ks / sizeof *ks; b++) {
                const int N = ns[a], K = ks[b], kp = (K + 1) / 2;
                const int tiles = (kp + 15) / 16 * 16; // AMX: whole tiles
                const int kps[2] = {kp, tiles + 16};
                for (int c = 0; c < 2; c++) {
                    const long bad = pack_case(trans, N, K, kps[c]);
                    cr_assert_eq(bad, -1,
                                 "%s N=%d K=%d KPp=%d: dword %ld differs",
                                 trans ? "nt" : "nn/tn", N, K, kps[c], bad);
                }
            }
}

// The first bf16 value of the A tiles that differs from the layout, or -1.
// The row blocks are packed one call each, as the kernel does.
static long a_tiles_case(int trans, int M, int K)
{
    const int lda = (trans ? M : K) + 3, rows = trans ? K : M;
    const int nkb = (K + 31) / 32, nmt = 2 * ((M + 31) / 32);
    const size_t na = (size_t)rows * lda,
                 n = (size_t)nmt * nkb * CLEF_AMX_TILE_BF16;
    uint16_t *A = malloc(na * sizeof *A);
    uint16_t *Ap = aligned_alloc(64, (n * sizeof *Ap + 63) / 64 * 64);
    cr_assert(A && Ap);
    for (size_t i = 0; i < na; i++) // distinct, nonzero, never the sentinel
        A[i] = (uint16_t)(1 + i % 32749);
    for (size_t i = 0; i < n; i++)
        Ap[i] = 0xffffu;
    for (int mt = 0; mt < nmt; mt++)
        pack_a(trans, M, K, A, lda, Ap, nkb, mt, mt + 1);
    long bad = -1;
    for (int mt = 0; mt < nmt && bad < 0; mt++)
        for (int kb = 0; kb < nkb && bad < 0; kb++)
            for (int r = 0; r < 16 && bad < 0; r++)
                for (int j = 0; j < 32; j++) {
                    const int m = 16 * mt + r, k = 32 * kb + j;
                    const uint16_t want = m >= M || k >= K ? 0
                                          : trans ? A[(size_t)k * lda + m]
                                                  : A[(size_t)m * lda + k];
                    const size_t at =
                        ((size_t)mt * nkb + kb) * CLEF_AMX_TILE_BF16 +
                        32 * (size_t)r + j;
                    if (Ap[at] != want) {
                        bad = (long)at;
                        break;
                    }
                }
    free(A);
    free(Ap);
    return bad;
}

Test(bf16_pack, amx_a_tiles_as_laid_out)
{
    avx512_packs_or_skip();
    static const int ms[] = {1, 15, 16, 17, 31, 32, 33, 47, 64, 100};
    static const int ks[] = {1, 2, 3, 31, 32, 33, 63, 64, 65, 100};
    for (int trans = 0; trans < 2; trans++)
        for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
            for (size_t b = 0; b < sizeof ks / sizeof *ks; b++) {
                const long bad = a_tiles_case(trans, ms[a], ks[b]);
                cr_assert_eq(bad, -1, "%s M=%d K=%d: value %ld differs",
                             trans ? "A (K,M)" : "A (M,K)", ms[a], ks[b], bad);
            }
}
#endif

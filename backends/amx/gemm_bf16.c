// bf16 GEMMs on AMX tiles: C (M,N) = [C +] op(A) · op(B).
//
// Tiles (one configuration, palette 1, every tile 16 rows × 64 bytes):
//   tmm0..3  C: the 32×32 block of C as 2×2 tiles of 16×16 floats
//   tmm4, 5  A: rows m0..m0+15 and m0+16..m0+31, 32 values of k each
//   tmm6, 7  B: 16 pairs of k × 16 columns (VNNI: a dword holds the values
//            of k = 2kp and 2kp+1 of one column), columns n0.. and n0+16..
// Per 32 values of k: 4 tile loads, 4 _tile_dpbf16ps.
//
// Packing (per call, into scratch kept per calling thread): op(B) in the
// VNNI panels of backends/x86/bf16_pack.h (32 columns, K padded with zeros
// to a multiple of 32: a B tile is 16 kp rows of a panel, stride 128
// bytes); op(A) in the tile order of backends/x86/amx_pack.h: tile
// (mt, kb) is 16 rows × 32 values, 1 KiB contiguous, rows and K padded with
// zeros (M to 32). Both layouts are tested on any AVX-512 CPU
// (tests/test_bf16_pack.c). Zero padding is what handles every remainder
// of M, N and K: padded products are exact zeros. C blocks that are not
// whole inside (M, N) go through a 32×32 scratch (loaded from C, stored
// back to its valid part).
//
// Blocking: K in blocks of KCB × 32 values (C tiles loaded and stored once
// per block; the next block's C lines are prefetched while this one runs);
// column chunks of 8 panels (4, or fewer, where 8 would leave a thread
// without one) run in parallel, each packing its own B panels; within a chunk,
// per K block and 32-row block of A, every panel: the A block's tiles are read
// from L2 once per panel of the chunk instead of streaming all of A from
// memory once per panel (docs/PERF-NOTES.md, an Intel Xeon on 1 thread:
// 344 GFLOP/s before, 388 with chunks of 4, 416 with chunks of 8). The
// split never cuts a sum: bits depend neither on the thread count nor on
// the chunk width. _tile_dpbf16ps accumulates in float (round to nearest
// even) and treats denormal inputs and outputs as zero.
#include <immintrin.h>
#ifdef CLEF_AMX_EMULATE // tests only: the tile instructions in C
#include "tile_emu.h"
#endif
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "amx.h"
#include "backends/scalar/scalar.h"
#include "backends/x86/amx_pack.h"

#define KCB 32       // blocks of 32 k per K block (1024 values of k)
#define CHUNK_WIDE 8 // panels per column chunk, where every thread gets one
#define CHUNK 4      // else 4, else fewer: a chunk for every thread
#define SERIAL_FLOPS 4194304.0

typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

static void tiles_configure(void)
{
    tilecfg cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
}

// The 32×32 block of C at (m0, n0) [+]= A row blocks mt, mt+1 × B panel
// over k blocks [kb0, kb1). load: start from C (else from zero).
// a0, a1: the two A tiles of k block kb0 (row stride as bytes; the next k
// block step values further on).
static void block(const uint16_t *a0, const uint16_t *a1, size_t as,
                  size_t astep, const uint32_t *bpanel, int kb0, int kb1,
                  float *C, int ldc, int mv, int nv, int load,
                  const float *Cnext)
{
    float tmp[32 * 32] __attribute__((aligned(64)));
    const int whole = mv == 32 && nv == 32;
    float *c = C;
    size_t ldcb = (size_t)ldc * sizeof(float);
    if (!whole) { // through the scratch: its valid part is C's
        c = tmp, ldcb = 32 * sizeof(float);
        if (load) {
            memset(tmp, 0, sizeof tmp);
            for (int i = 0; i < mv; i++)
                memcpy(tmp + 32 * i, C + (size_t)i * ldc, nv * sizeof(float));
        }
    }
    const size_t ldc32 = ldcb / sizeof(float);
    if (load) {
        _tile_loadd(0, c, ldcb);
        _tile_loadd(1, c + 16, ldcb);
        _tile_loadd(2, c + 16 * ldc32, ldcb);
        _tile_loadd(3, c + 16 * ldc32 + 16, ldcb);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    const uint32_t *b = bpanel + (size_t)kb0 * 16 * CLEF_BF16_PANEL;
    int pr = 0;
    for (int kb = kb0; kb < kb1; kb++) {
        if (Cnext)
            for (int q = 0; q < 4 && pr < 64; q++, pr++)
                _mm_prefetch((const char *)(Cnext + (size_t)(pr >> 1) * ldc +
                                            16 * (pr & 1)),
                             _MM_HINT_T0);
        _tile_loadd(4, a0, as);
        _tile_loadd(6, b, 128);
        _tile_loadd(7, b + 16, 128);
        _tile_loadd(5, a1, as);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        a0 += astep, a1 += astep, b += 16 * CLEF_BF16_PANEL;
    }
    _tile_stored(0, c, ldcb);
    _tile_stored(1, c + 16, ldcb);
    _tile_stored(2, c + 16 * ldc32, ldcb);
    _tile_stored(3, c + 16 * ldc32 + 16, ldcb);
    if (!whole)
        for (int i = 0; i < mv; i++)
            memcpy(C + (size_t)i * ldc, tmp + 32 * i, nv * sizeof(float));
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
    const int nkb = (K + 31) / 32, KPp = 16 * nkb;
    const int np = (N + CLEF_BF16_PANEL - 1) / CLEF_BF16_PANEL;
    const int nmt = 2 * ((M + 31) / 32); // 16-row blocks, an even count
    uint16_t *Ap = bf16_scratch_get(
        &bf16_tls.a, (size_t)nmt * nkb * CLEF_AMX_TILE_BF16 * sizeof(uint16_t));
    uint32_t *Bp = bf16_scratch_get(
        &bf16_tls.b, (size_t)np * KPp * CLEF_BF16_PANEL * sizeof(uint32_t));
    if (!Ap || !Bp) { // no packing scratch: the reference, same contract
        fallback(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
    }
    // the team a parallel region would have (1: the product runs serially)
    const int team = 2.0 * M * N * K >= SERIAL_FLOPS && !omp_in_parallel()
                         ? omp_get_max_threads()
                         : 1;
    const int chunk = np >= CHUNK_WIDE * team ? CHUNK_WIDE
                      : np >= CHUNK * team    ? CHUNK
                      : np >= team            ? np / team
                                              : 1;
    const int nchunks = (np + chunk - 1) / chunk;
    const int par = nchunks > 1 && team > 1;
#pragma omp parallel if (par)
    {
        tiles_configure();
#pragma omp for schedule(static)
        for (int mt = 0; mt < nmt; mt++)
            amx_pack_a_tiles(ta, M, K, A, lda, Ap, nkb, mt, mt + 1);
#pragma omp for schedule(static)
        for (int ch = 0; ch < nchunks; ch++) {
            const int p0 = ch * chunk, p1 = p0 + chunk < np ? p0 + chunk : np;
            bf16_pack_b(tb, N, K, B, ldb, Bp, KPp, p0, p1);
            for (int kb0 = 0; kb0 < nkb; kb0 += KCB) {
                const int kb1 = nkb - kb0 < KCB ? nkb : kb0 + KCB;
                const int load = kb0 > 0 || accumulate;
                for (int mt = 0; mt < nmt; mt += 2) {
                    const int m0 = 16 * mt;
                    const int mv = M - m0 < 32 ? M - m0 : 32;
                    const uint16_t *a0 =
                        Ap + ((size_t)mt * nkb + kb0) * CLEF_AMX_TILE_BF16;
                    for (int p = p0; p < p1; p++) {
                        const uint32_t *bp =
                            Bp + (size_t)p * KPp * CLEF_BF16_PANEL;
                        const int n0 = p * CLEF_BF16_PANEL;
                        const int nv = N - n0 < 32 ? N - n0 : 32;
                        float *c = C + (size_t)m0 * ldc + n0;
                        // the next block: the next panel, else the chunk's
                        // first one 32 rows down
                        const float *nx = p + 1 < p1 ? c + CLEF_BF16_PANEL
                                          : mt + 2 < nmt
                                              ? C + (size_t)(m0 + 32) * ldc +
                                                    p0 * CLEF_BF16_PANEL
                                              : NULL;
                        block(a0, a0 + (size_t)nkb * CLEF_AMX_TILE_BF16, 64,
                              CLEF_AMX_TILE_BF16, bp, kb0, kb1, c, ldc, mv, nv,
                              load, load ? nx : NULL);
                    }
                }
            }
        }
        _tile_release();
    }
}

void clef_bf16_gemm_nt_32x32__amx(int M, int N, int K, const uint16_t *A,
                                  int lda, const uint16_t *B, int ldb, float *C,
                                  int ldc, int accumulate)
{
    gemm(0, 1, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
         clef_bf16_gemm_nt__scalar);
}

void clef_bf16_gemm_nn_32x32__amx(int M, int N, int K, const uint16_t *A,
                                  int lda, const uint16_t *B, int ldb, float *C,
                                  int ldc, int accumulate)
{
    gemm(0, 0, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
         clef_bf16_gemm_nn__scalar);
}

void clef_bf16_gemm_tn_32x32__amx(int M, int N, int K, const uint16_t *A,
                                  int lda, const uint16_t *B, int ldb, float *C,
                                  int ldc, int accumulate)
{
    gemm(1, 0, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
         clef_bf16_gemm_tn__scalar);
}

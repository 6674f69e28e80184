// The A operand of the AMX bf16 GEMMs (backends/amx/) in tile order:
// AVX-512 F/BW code, included only by files built with those flags (and by
// tests/test_bf16_pack.c, which checks the layout on any AVX-512 CPU).
//
// Tile (mt, kb) holds rows 16 mt .. 16 mt + 15 of op(A) (M,K) and values
// 32 kb .. 32 kb + 31 of k: 16 rows of 64 bytes, 1 KiB contiguous (an AMX
// A tile, stride 64); row r is 16 dwords (op(A)[m][k], op(A)[m][k+1]), k =
// 32 kb + 2j, low half the even k. Zeros past M and K, so padded products
// add exact zeros. The nkb tiles of a row block follow each other, then the
// next row block. (The B operand: bf16_pack.h's VNNI panels.)
#ifndef CLEF_X86_AMX_PACK_H
#define CLEF_X86_AMX_PACK_H

#include "backends/x86/bf16_pack.h"

#define CLEF_AMX_TILE_BF16 512 // bf16 values of one A tile (16 × 32)

// Row blocks [mt0, mt1) of 16 rows of the tile-ordered A pack (nkb tiles
// of 32 k per row block). trans 0: A (M,K); 1: A (K,M).
static inline void amx_pack_a_tiles(int trans, int M, int K, const uint16_t *A,
                                    int lda, uint16_t *Ap, int nkb, int mt0,
                                    int mt1)
{
    if (!trans) {
        for (int mt = mt0; mt < mt1; mt++)
            for (int r = 0; r < 16; r++) {
                const int m = 16 * mt + r;
                uint16_t *d =
                    Ap + (size_t)mt * nkb * CLEF_AMX_TILE_BF16 + 32 * r;
                const uint16_t *s = A + (size_t)(m < M ? m : 0) * lda;
                for (int kb = 0; kb < nkb; kb++, d += CLEF_AMX_TILE_BF16) {
                    const int k0 = 32 * kb;
                    const int n = m >= M ? 0 : K - k0 < 32 ? K - k0 : 32;
                    const __mmask32 mk =
                        n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1u);
                    _mm512_store_si512(d, _mm512_maskz_loadu_epi16(mk, s + k0));
                }
            }
        return;
    }
    // Aᵀ: dword kp of row m is A[2kp][m] | A[2kp+1][m] << 16; per tile, the
    // 16 pairs kp of 16 columns m, transposed into the tile's 16 rows
    for (int mt = mt0; mt < mt1; mt++) {
        const int mb = 16 * mt, valid = M - mb;
        uint16_t *t = Ap + (size_t)mt * nkb * CLEF_AMX_TILE_BF16;
        if (valid <= 0) { // a padding row block: zeros, A not read
            memset(t, 0, sizeof *t * nkb * CLEF_AMX_TILE_BF16);
            continue;
        }
        for (int kb = 0; kb < nkb; kb++, t += CLEF_AMX_TILE_BF16) {
            __m512i v[16]; // the tile's rows
            bf16_pairs_t16(A, lda, K, 16 * kb, mb, valid, v);
            for (int r = 0; r < 16; r++)
                _mm512_store_si512(t + 32 * r, v[r]);
        }
    }
}

#endif

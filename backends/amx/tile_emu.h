// The AMX tile instructions backends/amx/gemm_bf16.c uses, written in C, for
// tests on CPUs without AMX: tests/util_amx_emu.c builds that file with
// CLEF_AMX_EMULATE defined, so the kernels' blocking, packing, remainders,
// edge scratch and threading run on any CPU with AVX-512 (the packs need
// AVX-512 F/BW). Never part of the library.
//
// Each thread has its own 8 tiles and configuration, as each core does.
// _tile_dpbf16ps follows the pseudo-code of TDPBF16PS in the Intel SDM: per
// row m of C, per pair k of A's row, per column n, two float additions in
// that order (round to nearest even); denormal inputs are read as zero and
// denormal results written as zero, as the hardware does.
#ifndef CLEF_AMX_TILE_EMU_H
#define CLEF_AMX_TILE_EMU_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct clef_tile_emu {
    uint8_t rows[8];
    uint16_t colsb[8];
    uint8_t data[8][16][64]; // tile t, row r: colsb[t] bytes
} clef_tile_emu;

static _Thread_local clef_tile_emu clef_emu_tiles;

// The 64-byte configuration of _tile_loadconfig (palette 1): colsb of tile
// t at byte 16 + 2t, rows at byte 48 + t. Loading it zeroes every tile.
static inline void clef_emu_tile_loadconfig(const void *config)
{
    const uint8_t *c = config;
    for (int t = 0; t < 8; t++) {
        uint16_t cb;
        memcpy(&cb, c + 16 + 2 * t, sizeof cb);
        clef_emu_tiles.colsb[t] = cb > 64 ? 64 : cb;
        clef_emu_tiles.rows[t] = c[48 + t] > 16 ? 16 : c[48 + t];
    }
    memset(clef_emu_tiles.data, 0, sizeof clef_emu_tiles.data);
}

static inline void clef_emu_tile_release(void)
{
    memset(&clef_emu_tiles, 0, sizeof clef_emu_tiles);
}

static inline void clef_emu_tile_zero(int t)
{
    memset(clef_emu_tiles.data[t], 0, sizeof clef_emu_tiles.data[t]);
}

static inline void clef_emu_tile_loadd(int t, const void *base, size_t stride)
{
    const uint8_t *p = base;
    clef_emu_tile_zero(t); // bytes past colsb and rows read as zero
    for (int r = 0; r < clef_emu_tiles.rows[t]; r++)
        memcpy(clef_emu_tiles.data[t][r], p + (size_t)r * stride,
               clef_emu_tiles.colsb[t]);
}

static inline void clef_emu_tile_stored(int t, void *base, size_t stride)
{
    uint8_t *p = base;
    for (int r = 0; r < clef_emu_tiles.rows[t]; r++)
        memcpy(p + (size_t)r * stride, clef_emu_tiles.data[t][r],
               clef_emu_tiles.colsb[t]);
}

// bf16 value i of row r of tile t, a denormal read as zero.
static inline float clef_emu_bf16(int t, int r, int i)
{
    uint16_t h;
    memcpy(&h, &clef_emu_tiles.data[t][r][2 * i], sizeof h);
    uint32_t u = (uint32_t)h << 16;
    if (!(u & 0x7f800000u))
        u &= 0x80000000u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float clef_emu_ftz(float x)
{
    return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x;
}

// C tile c (rows × colsb/4 floats) += A tile a · B tile b, A's row m holding
// colsb/4 pairs of k, B's row k the pair k of each column.
static inline void clef_emu_tile_dpbf16ps(int c, int a, int b)
{
    const int rows = clef_emu_tiles.rows[c], nn = clef_emu_tiles.colsb[c] / 4;
    const int kk = clef_emu_tiles.colsb[a] / 4;
    for (int m = 0; m < rows; m++) {
        float acc[16];
        memcpy(acc, clef_emu_tiles.data[c][m], sizeof acc);
        for (int k = 0; k < kk; k++)
            for (int n = 0; n < nn; n++) {
                acc[n] = clef_emu_ftz(acc[n] + clef_emu_bf16(a, m, 2 * k) *
                                                   clef_emu_bf16(b, k, 2 * n));
                acc[n] =
                    clef_emu_ftz(acc[n] + clef_emu_bf16(a, m, 2 * k + 1) *
                                              clef_emu_bf16(b, k, 2 * n + 1));
            }
        memcpy(clef_emu_tiles.data[c][m], acc, sizeof acc);
    }
}

// gcc's names, as the kernels call them
#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbf16ps
#define _tile_loadconfig(config) clef_emu_tile_loadconfig(config)
#define _tile_release() clef_emu_tile_release()
#define _tile_loadd(t, base, stride) clef_emu_tile_loadd(t, base, stride)
#define _tile_stored(t, base, stride) clef_emu_tile_stored(t, base, stride)
#define _tile_zero(t) clef_emu_tile_zero(t)
#define _tile_dpbf16ps(c, a, b) clef_emu_tile_dpbf16ps(c, a, b)

#endif

// Counter-based dropout masks (dropout.h): each element's draw is a chain
// of splitmix64 output functions over (seed, step) → site → record → row →
// column, so any element's draw costs one mix given its row's key.
#include "dropout.h"
#include "par.h"
#include "rng.h"

#include <math.h>
#include <stddef.h>

// Keeps dropout masks apart from every other stream a seed drives.
#define DROP_SALT 0x64726f706f757421ull // "dropout!"

void clef_dropout_set(clef_dropout *d, double p, uint64_t seed, long step,
                      int rec0)
{
    *d = (clef_dropout){0};
    if (!(p > 0))
        return;
    d->p = (float)p;
    d->scale = (float)(1.0 / (1.0 - p));
    d->thr = (uint32_t)floor(p * 4294967296.0);
    d->key = clef_mix64(clef_mix64(seed ^ DROP_SALT) + (uint64_t)step);
    d->rec0 = rec0;
}

uint64_t clef_dropout_site(const clef_dropout *d, int site, int layer)
{
    return clef_mix64(d->key + (uint64_t)site * 256 + (uint64_t)layer);
}

// The key of row `row` of record b of the sub-batch.
static uint64_t row_key(const clef_dropout *d, uint64_t site, int b, int row)
{
    return clef_mix64(clef_mix64(site + (uint64_t)(d->rec0 + b)) +
                      (uint64_t)row);
}

static int keep(const clef_dropout *d, uint64_t rk, int col)
{
    return (uint32_t)(clef_mix64(rk + (uint64_t)col) >> 32) >= d->thr;
}

int clef_dropout_keeps(const clef_dropout *d, uint64_t site, int b, int row,
                       int col)
{
    return keep(d, row_key(d, site, b, row), col);
}

// y (n) = r + mask ⊙ x · scale for one row (r NULL: no residual).
static void drop_row(const clef_dropout *d, uint64_t rk, int n, const float *x,
                     const float *r, float *y)
{
    const float s = d->scale;
    for (int c = 0; c < n; c++) {
        const float v = keep(d, rk, c) ? x[c] * s : 0.f;
        y[c] = r ? r[c] + v : v;
    }
}

// The record of row r: the b with off[b] <= r < off[b+1].
static int record_of(const int *off, int r)
{
    int b = 0;
    while (off[b + 1] <= r)
        b++;
    return b;
}

void clef_dropout_rows(const clef_dropout *d, uint64_t site, int nb,
                       const int *off, int n, float *x, int ld)
{
    const int rows = off[nb];
    CLEF_PAR_FOR((size_t)rows * n > (1 << 14), int, r, rows,
        const int b = record_of(off, r);
        float *xr = x + (size_t)r * ld;
        drop_row(d, row_key(d, site, b, r - off[b]), n, xr, NULL, xr);
    );
}

void clef_dropout_add_rows(const clef_dropout *d, uint64_t site, int nb,
                           const int *off, int n, const float *x,
                           const float *resid, float *y)
{
    const int rows = off[nb];
    CLEF_PAR_FOR((size_t)rows * n > (1 << 14), int, r, rows,
        const int b = record_of(off, r);
        const size_t o = (size_t)r * n;
        drop_row(d, row_key(d, site, b, r - off[b]), n, x + o, resid + o,
                 y + o);
    );
}

void clef_dropout_map(const clef_dropout *d, uint64_t site, int b, int head,
                      int nq, int nk, const float *x, float *y)
{
    for (int i = 0; i < nq; i++) {
        const size_t o = (size_t)i * nk;
        drop_row(d, row_key(d, site, b, head * nq + i), nk, x + o, NULL, y + o);
    }
}

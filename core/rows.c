// Row-wise and elementwise kernels split in fixed chunks across threads
// (rows.h): the memory_norm LayerNorm over B·T rows, the batch's stacked
// copies and the FFN's GELU, which would otherwise run on one thread while
// the others wait.
#include "rows.h"
#include "par.h"

#include <string.h>

// Elements per chunk (128 KiB of floats), and the size below which a single
// call on the calling thread is cheaper than a parallel region.
#define ROWS_CHUNK ((size_t)1 << 15)
#define ROWS_PAR_MIN ((size_t)1 << 16)

// Rows per chunk for rows of n elements: about ROWS_CHUNK elements, a
// multiple of 8 rows (the narrow kernels take 8 rows at a time).
static int chunk_rows(int n)
{
    size_t r = ROWS_CHUNK / (size_t)n;
    r = r < 8 ? 8 : r / 8 * 8;
    return (int)r;
}

static int split(int rows, int n)
{
    return (size_t)rows * n >= ROWS_PAR_MIN;
}

void clef_rows_layernorm_fwd(const clef_kernels *k, int rows, int n,
                             const float *x, const float *gamma,
                             const float *beta, float *y, float *xhat,
                             float *rstd)
{
    if (!split(rows, n)) {
        k->layernorm_fwd(rows, n, x, gamma, beta, y, xhat, rstd);
        return;
    }
    const int cr = chunk_rows(n), nc = (rows + cr - 1) / cr;
    CLEF_PAR_FOR(1, int, c, nc,
        const int r0 = c * cr, m = rows - r0 < cr ? rows - r0 : cr;
        const size_t o = (size_t)r0 * n;
        k->layernorm_fwd(m, n, x + o, gamma, beta, y + o, xhat + o, rstd + r0);
    );
}

size_t clef_rows_layernorm_bwd_scratch(int rows, int n)
{
    const int cr = chunk_rows(n);
    return (size_t)2 * n * ((rows + cr - 1) / cr);
}

void clef_rows_layernorm_bwd(const clef_kernels *k, int rows, int n,
                             const float *dy, const float *xhat,
                             const float *rstd, const float *gamma, float *dx,
                             float *dgamma, float *dbeta, float *part)
{
    if (!split(rows, n)) {
        k->layernorm_bwd(rows, n, dy, xhat, rstd, gamma, dx, dgamma, dbeta);
        return;
    }
    // chunk c's γ and β sums in part[2nc..], added in chunk order below
    const int cr = chunk_rows(n), nc = (rows + cr - 1) / cr;
    memset(part, 0, sizeof(float) * 2 * (size_t)n * nc);
    CLEF_PAR_FOR(1, int, c, nc,
        const int r0 = c * cr, m = rows - r0 < cr ? rows - r0 : cr;
        const size_t o = (size_t)r0 * n;
        float *pg = part + (size_t)2 * n * c;
        k->layernorm_bwd(m, n, dy + o, xhat + o, rstd + r0, gamma,
                         dx ? dx + o : NULL, pg, pg + n);
    );
    for (int c = 0; c < nc; c++) {
        const float *pg = part + (size_t)2 * n * c;
        for (int i = 0; i < n; i++) {
            dgamma[i] += pg[i];
            dbeta[i] += pg[n + i];
        }
    }
}

void clef_rows_bias_add(const clef_kernels *k, int rows, int n, const float *b,
                        float *y)
{
    if (!split(rows, n)) {
        k->bias_add(rows, n, b, y);
        return;
    }
    const int cr = chunk_rows(n), nc = (rows + cr - 1) / cr;
    CLEF_PAR_FOR(1, int, c, nc,
        const int r0 = c * cr, m = rows - r0 < cr ? rows - r0 : cr;
        k->bias_add(m, n, b, y + (size_t)r0 * n);
    );
}

// Elementwise ops over n floats: chunks of ROWS_CHUNK (one call up to that),
// on the team from ROWS_PAR_MIN.
static size_t nchunks(size_t n)
{
    return (n + ROWS_CHUNK - 1) / ROWS_CHUNK;
}
static size_t chunk_len(size_t n, size_t i0)
{
    return n - i0 < ROWS_CHUNK ? n - i0 : ROWS_CHUNK;
}

void clef_rows_gelu_fwd(const clef_kernels *k, size_t n, const float *x,
                        float *y)
{
    CLEF_PAR_FOR(n >= ROWS_PAR_MIN, size_t, c, nchunks(n),
        const size_t i0 = c * ROWS_CHUNK;
        k->gelu_fwd(chunk_len(n, i0), x + i0, y + i0);
    );
}

void clef_rows_gelu_bwd(const clef_kernels *k, size_t n, const float *x,
                        const float *dy, float *dx)
{
    CLEF_PAR_FOR(n >= ROWS_PAR_MIN, size_t, c, nchunks(n),
        const size_t i0 = c * ROWS_CHUNK;
        k->gelu_bwd(chunk_len(n, i0), x + i0, dy + i0, dx + i0);
    );
}

void clef_rows_copy(float *dst, const float *src, size_t n)
{
    CLEF_PAR_FOR(n >= ROWS_PAR_MIN, size_t, c, nchunks(n),
        const size_t i0 = c * ROWS_CHUNK;
        memcpy(dst + i0, src + i0, sizeof(float) * chunk_len(n, i0));
    );
}

void clef_rows_zero(float *x, size_t n)
{
    CLEF_PAR_FOR(n >= ROWS_PAR_MIN, size_t, c, nchunks(n),
        const size_t i0 = c * ROWS_CHUNK;
        memset(x + i0, 0, sizeof(float) * chunk_len(n, i0));
    );
}

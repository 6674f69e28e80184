// LayerNorm: hidden_norm over the backbone states, rows = T, n = d (n >= 2:
// with n = 1, x̂ is identically 0 and the case proves nothing).
#include "case.h"

#include <math.h>
#include <stdio.h>

typedef struct bench_layernorm {
    int rows, n;
    float *x, *gamma, *beta, *y, *xhat, *rstd; // forward (gamma, xhat, rstd
    float *dy, *dx, *dgamma, *dbeta;           // are backward inputs too)
} bench_layernorm;

static void layernorm_size(clef_bench_case *c, bench_layernorm *ln)
{
    ln->rows = c->shape->T, ln->n = bench_max_int(c->shape->d, 2);
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", ln->rows, ln->n);
}

static int layernorm_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_layernorm *ln = st;
    layernorm_size(c, ln);
    int rows = ln->rows, n = ln->n;
    BENCH_ADD(c, ln, x, BENCH_IN, rows, n, n);
    BENCH_ADD(c, ln, gamma, BENCH_IN, 1, n, n);
    BENCH_ADD(c, ln, beta, BENCH_IN, 1, n, n);
    BENCH_ADD(c, ln, y, BENCH_OUT, rows, n, n);
    BENCH_ADD(c, ln, xhat, BENCH_OUT, rows, n, n);
    BENCH_ADD(c, ln, rstd, BENCH_OUT, 1, rows, rows);
    // Rows with a mean off 0 (the subtraction must happen) but within a
    // few σ: the mean's rounding is amplified by |μ|/σ, a property of
    // the input that no kernel can avoid.
    for (int r = 0; r < rows; r++) {
        float offset = bench_uniform(rng, -1, 1);
        float scale = bench_uniform(rng, 0.5f, 2);
        for (int k = 0; k < n; k++)
            BENCH_LIVE(x, r, k) = offset + scale * bench_uniform(rng, -1, 1);
    }
    bench_fill_uniform(gamma, rng, 0.5f, 1.5f);
    bench_fill_uniform(beta, rng, -1, 1);
    c->tol = &bench_tol_layernorm_fwd;
    c->tol_len = n;
    return 0;
}

// x̂: zero mean, unit variance per row.
static void fill_xhat(bench_buf *xhat, bench_rng *rng)
{
    int n = xhat->cols;
    for (int r = 0; r < xhat->rows; r++) {
        double mean = 0.0, var = 0.0;
        for (int k = 0; k < n; k++) {
            BENCH_LIVE(xhat, r, k) = bench_uniform(rng, -1, 1);
            mean += BENCH_LIVE(xhat, r, k);
        }
        mean /= n;
        for (int k = 0; k < n; k++)
            var += (BENCH_LIVE(xhat, r, k) - mean) *
                   (BENCH_LIVE(xhat, r, k) - mean);
        double inv = 1.0 / sqrt(var / n + 1e-12);
        for (int k = 0; k < n; k++)
            BENCH_LIVE(xhat, r, k) =
                (float)((BENCH_LIVE(xhat, r, k) - mean) * inv);
    }
}

static int layernorm_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_layernorm *ln = st;
    layernorm_size(c, ln);
    int rows = ln->rows, n = ln->n;
    BENCH_ADD(c, ln, dy, BENCH_IN, rows, n, n);
    BENCH_ADD(c, ln, xhat, BENCH_IN, rows, n, n);
    BENCH_ADD(c, ln, rstd, BENCH_IN, 1, rows, rows);
    BENCH_ADD(c, ln, gamma, BENCH_IN, 1, n, n);
    BENCH_ADD(c, ln, dx, BENCH_ACC, rows, n, n);
    BENCH_ADD(c, ln, dgamma, BENCH_ACC, 1, n, n);
    BENCH_ADD(c, ln, dbeta, BENCH_ACC, 1, n, n);
    bench_fill_uniform(dy, rng, -1, 1);
    fill_xhat(xhat, rng);
    bench_fill_uniform(rstd, rng, 0.5f, 2);
    bench_fill_uniform(gamma, rng, 0.5f, 1.5f);
    bench_fill_uniform(dx, rng, -1, 1);
    bench_fill_uniform(dgamma, rng, -1, 1);
    bench_fill_uniform(dbeta, rng, -1, 1);
    c->tol = &bench_tol_layernorm_bwd;
    c->tol_len = bench_max_int(rows, n);
    return 0;
}

static void layernorm_fwd_call(const clef_kernels *k, void *st)
{
    bench_layernorm *ln = st;
    k->layernorm_fwd(ln->rows, ln->n, ln->x, ln->gamma, ln->beta, ln->y,
                     ln->xhat, ln->rstd);
}

static void layernorm_bwd_call(const clef_kernels *k, void *st)
{
    bench_layernorm *ln = st;
    k->layernorm_bwd(ln->rows, ln->n, ln->dy, ln->xhat, ln->rstd, ln->gamma,
                     ln->dx, ln->dgamma, ln->dbeta);
}

const bench_case_def bench_case_layernorm_fwd = {
    sizeof(bench_layernorm), layernorm_fwd_setup, layernorm_fwd_call};
const bench_case_def bench_case_layernorm_bwd = {
    sizeof(bench_layernorm), layernorm_bwd_setup, layernorm_bwd_call};

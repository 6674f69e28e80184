// LayerNorm (eps CLEF_LN_EPS) of the scalar backend, rows × n over
// {1, 2, 3, 7, 13, 17, 31, 33}².
//   forward:  y, xhat, rstd against double. With κ = max|x| · rstd (how much
//             centring amplifies rounding), per element
//             |Δxhat| ≤ 2 (n + 8) FLT_EPSILON (κ + |xhat|),
//             |Δy| ≤ |γ| |Δxhat| + 2 FLT_EPSILON (|γ xhat| + |β|),
//             |Δrstd| ≤ 2 (n + 8) FLT_EPSILON κ² rstd.
//   backward: dx, dgamma, dbeta by central finite differences in double of
//             L = Σ w ⊙ LN(x), tolerance 4 (n + 8) FLT_EPSILON · scale for dx,
//             4 (n + rows + 8) FLT_EPSILON · scale for dgamma and dbeta,
//             scale = max|grad|, for dx at least rstd · max|dy ⊙ γ| (the size of
//             the terms it is a difference of; κ stays near 2 for the inputs
//             used); all three accumulate;
//             dx = NULL leaves dgamma/dbeta unchanged.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int shapes[] = {1, 2, 3, 7, 13, 17, 31, 33};
#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

// Everything one (rows, n) case needs, float and double.
typedef struct ln_case {
    int rows, n;
    float *x, *gamma, *beta, *y, *xhat, *rstd, *w;
    double *xd, *gd, *bd, *wd, *yd;
} ln_case;

static ln_case ln_alloc(int rows, int n, float offset, uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    ln_case c = {.rows = rows, .n = n};
    c.x = clef_test_falloc(sz), c.y = clef_test_falloc(sz);
    c.xhat = clef_test_falloc(sz), c.w = clef_test_falloc(sz);
    c.gamma = clef_test_falloc(n), c.beta = clef_test_falloc(n);
    c.rstd = clef_test_falloc(rows);
    c.xd = clef_test_dalloc(sz), c.wd = clef_test_dalloc(sz);
    c.yd = clef_test_dalloc(sz);
    c.gd = clef_test_dalloc(n), c.bd = clef_test_dalloc(n);
    clef_test_fill_uniform(c.x, sz, offset - 2, offset + 2, rng);
    clef_test_fill_uniform(c.gamma, n, 0.5f, 1.5f, rng);
    clef_test_fill_uniform(c.beta, n, -0.5f, 0.5f, rng);
    clef_test_fill_uniform(c.w, sz, -1, 1, rng);
    clef_test_to_double(c.x, c.xd, sz);
    clef_test_to_double(c.w, c.wd, sz);
    clef_test_to_double(c.gamma, c.gd, n);
    clef_test_to_double(c.beta, c.bd, n);
    return c;
}

static void ln_free(ln_case *c)
{
    free(c->x), free(c->gamma), free(c->beta), free(c->y), free(c->xhat);
    free(c->rstd), free(c->w), free(c->xd), free(c->gd), free(c->bd);
    free(c->wd), free(c->yd);
}

// Forward of one case against double; returns false on a mismatch.
static bool ln_forward_ok(ln_case *c)
{
    int rows = c->rows, n = c->n;
    clef_scalar_kernels.layernorm_fwd(rows, n, c->x, c->gamma, c->beta, c->y,
                                      c->xhat, c->rstd);
    double *one = clef_test_dalloc(n), *zero = clef_test_dalloc(n);
    double *hd = clef_test_dalloc(n), *bh = clef_test_dalloc(n);
    double *by = clef_test_dalloc(n);
    for (int i = 0; i < n; i++)
        one[i] = 1.0;
    bool ok = true;
    for (int r = 0; r < rows && ok; r++) {
        const double *xr = c->xd + (size_t)r * n;
        double mean = 0, var = 0, maxabs = clef_test_max_abs_d(xr, n);
        for (int i = 0; i < n; i++)
            mean += xr[i];
        mean /= n;
        for (int i = 0; i < n; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        var /= n;
        double rs = 1.0 / sqrt(var + CLEF_LN_EPS), kappa = maxabs * rs;
        clef_test_ref_layernorm(n, xr, one, zero, CLEF_LN_EPS, hd);
        clef_test_ref_layernorm(n, xr, c->gd, c->bd, CLEF_LN_EPS, c->yd);
        for (int i = 0; i < n; i++) {
            bh[i] = 2.0 * (n + 8) * CLEF_TEST_EPS * (kappa + fabs(hd[i]));
            by[i] =
                fabs(c->gd[i]) * bh[i] +
                2 * CLEF_TEST_EPS * (fabs(c->gd[i] * hd[i]) + fabs(c->bd[i]));
        }
        double brs = 2.0 * (n + 8) * CLEF_TEST_EPS * kappa * kappa * rs;
        ok = clef_test_within(c->xhat + (size_t)r * n, hd, bh, n) &&
             clef_test_within(c->y + (size_t)r * n, c->yd, by, n) &&
             clef_test_within(c->rstd + r, &rs, &brs, 1);
        if (!ok)
            fprintf(stderr, "layernorm_fwd: row %d of %d (n=%d)\n", r, rows, n);
    }
    free(one), free(zero), free(hd), free(bh), free(by);
    return ok;
}

Test(layernorm, forward)
{
    uint64_t rng = 31;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++)
            for (int off = 0; off <= 1; off++) { // centred and offset by 3
                ln_case c = ln_alloc(shapes[ri], shapes[ni], 3.0f * off, &rng);
                bool ok = ln_forward_ok(&c);
                ln_free(&c);
                cr_assert(ok, "layernorm_fwd rows=%d n=%d offset=%d",
                          shapes[ri], shapes[ni], 3 * off);
            }
}

// L = Σ w ⊙ LN(x; γ, β) in double.
static double ln_objective(void *p)
{
    ln_case *c = p;
    double L = 0.0;
    for (int r = 0; r < c->rows; r++) {
        size_t o = (size_t)r * c->n;
        clef_test_ref_layernorm(c->n, c->xd + o, c->gd, c->bd, CLEF_LN_EPS,
                                c->yd + o);
    }
    L = clef_test_dot_d(c->wd, c->yd, (size_t)c->rows * c->n);
    return L;
}

static bool ln_backward_ok(ln_case *c)
{
    int rows = c->rows, n = c->n;
    size_t sz = (size_t)rows * n;
    clef_scalar_kernels.layernorm_fwd(rows, n, c->x, c->gamma, c->beta, c->y,
                                      c->xhat, c->rstd);
    float *dx = clef_test_falloc(sz), *dg = clef_test_falloc(n);
    float *db = clef_test_falloc(n);
    clef_scalar_kernels.layernorm_bwd(rows, n, c->w, c->xhat, c->rstd, c->gamma,
                                      dx, dg, db);

    double *fdx = clef_test_dalloc(sz), *fdg = clef_test_dalloc(n);
    double *fdb = clef_test_dalloc(n);
    clef_test_fd_grad(c->xd, sz, 1e-6, ln_objective, c, fdx);
    clef_test_fd_grad(c->gd, n, 1e-6, ln_objective, c, fdg);
    clef_test_fd_grad(c->bd, n, 1e-6, ln_objective, c, fdb);

    double units = 4.0 * (n + rows + 8);
    char what[3][64];
    snprintf(what[0], 64, "layernorm_bwd dx rows=%d n=%d", rows, n);
    snprintf(what[1], 64, "layernorm_bwd dgamma rows=%d n=%d", rows, n);
    snprintf(what[2], 64, "layernorm_bwd dbeta rows=%d n=%d", rows, n);
    // dx is a difference of terms of size rstd·|dy ⊙ γ| (tiny for n = 2)
    double mag = 0.0;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < n; i++) {
            double t = c->rstd[r] * fabs(c->wd[(size_t)r * n + i] * c->gd[i]);
            mag = t > mag ? t : mag;
        }
    bool ok =
        clef_test_grad_close_scaled(what[0], dx, fdx, sz, 4.0 * (n + 8), mag);
    ok = clef_test_grad_close(what[1], dg, fdg, n, units) && ok;
    ok = clef_test_grad_close(what[2], db, fdb, n, units) && ok;

    // accumulate on top of known values
    float *ax = clef_test_falloc(sz), *ag = clef_test_falloc(n);
    float *ab = clef_test_falloc(n), *px = clef_test_falloc(sz);
    float *pg = clef_test_falloc(n);
    clef_test_fill_pattern(px, sz);
    clef_test_fill_pattern(pg, n);
    clef_test_fcopy(ax, px, sz);
    clef_test_fcopy(ag, pg, n);
    clef_test_fcopy(ab, pg, n);
    clef_scalar_kernels.layernorm_bwd(rows, n, c->w, c->xhat, c->rstd, c->gamma,
                                      ax, ag, ab);
    bool acc = clef_test_accumulated(px, dx, ax, sz) &&
               clef_test_accumulated(pg, dg, ag, n) &&
               clef_test_accumulated(pg, db, ab, n);
    if (!acc)
        fprintf(stderr, "layernorm_bwd rows=%d n=%d does not accumulate\n",
                rows, n);

    // dx = NULL: dgamma and dbeta only, same values
    clef_test_fcopy(ag, pg, n);
    clef_test_fcopy(ab, pg, n);
    clef_scalar_kernels.layernorm_bwd(rows, n, c->w, c->xhat, c->rstd, c->gamma,
                                      NULL, ag, ab);
    bool nul = clef_test_accumulated(pg, dg, ag, n) &&
               clef_test_accumulated(pg, db, ab, n);

    free(dx), free(dg), free(db), free(fdx), free(fdg), free(fdb);
    free(ax), free(ag), free(ab), free(px), free(pg);
    return ok && acc && nul;
}

Test(layernorm, backward_fd_and_accumulates)
{
    uint64_t rng = 32;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++) {
            ln_case c = ln_alloc(shapes[ri], shapes[ni], 0.25f, &rng);
            bool ok = ln_backward_ok(&c);
            ln_free(&c);
            cr_assert(ok, "layernorm_bwd rows=%d n=%d", shapes[ri], shapes[ni]);
        }
}

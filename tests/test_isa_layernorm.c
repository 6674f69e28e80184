// layernorm_fwd / layernorm_bwd of the ISA backends against the scalar
// reference, every n in 1..33 and larger (8200: the unfused backward);
// 1, 3, 5 and 17 rows (the width-8 path works in blocks of 8 rows); rows
// offset from zero (so centring matters). Tolerances (FLT_EPSILON units, relative to the
// output's scale): y, xhat, rstd 4(n + 4) (two length-n reductions);
// dgamma, dbeta bitwise (same column order, no FMA); dx 4(n + 4).
#include "isa_common.h"

static void layernorm_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x1a7e0u;
    static const int row_counts[] = {1, 3, 5, 17}; // 17: blocks of 8 rows + 1
    for (int li = 0; li <= ISA_NLENGTHS; li++)     // last: 8200 > LN_FUSED_MAX
        for (int ri = 0; ri < 4; ri++) {
            int rows = row_counts[ri];
            int n = li < ISA_NLENGTHS ? isa_lengths[li] : 8200;
            size_t sz = (size_t)rows * n;
            double units = 4.0 * (n + 4);
            float *x = clef_test_falloc(sz), *g = clef_test_falloc(n),
                  *b = clef_test_falloc(n);
            float *y = clef_test_falloc(sz), *h = clef_test_falloc(sz),
                  *rs = clef_test_falloc(rows);
            float *yr = clef_test_falloc(sz), *hr = clef_test_falloc(sz),
                  *rsr = clef_test_falloc(rows);
            clef_test_fill_uniform(x, sz, 2.0f, 4.0f, &rng);
            clef_test_fill_uniform(g, n, 0.5f, 1.5f, &rng);
            clef_test_fill_uniform(b, n, -0.5f, 0.5f, &rng);
            k->layernorm_fwd(rows, n, x, g, b, y, h, rs);
            clef_scalar_kernels.layernorm_fwd(rows, n, x, g, b, yr, hr, rsr);
            cr_assert(isa_close("y", y, yr, sz, units),
                      "%s layernorm_fwd y rows=%d n=%d", isa, rows, n);
            cr_assert(isa_close("xhat", h, hr, sz, units),
                      "%s layernorm_fwd xhat rows=%d n=%d", isa, rows, n);
            cr_assert(isa_close("rstd", rs, rsr, rows, units),
                      "%s layernorm_fwd rstd rows=%d n=%d", isa, rows, n);

            float *dy = clef_test_falloc(sz), *dx = clef_test_falloc(sz),
                  *dxr = clef_test_falloc(sz);
            float *dg = clef_test_falloc(n), *dgr = clef_test_falloc(n);
            float *dbt = clef_test_falloc(n), *dbr = clef_test_falloc(n);
            clef_test_fill_uniform(dy, sz, -1, 1, &rng);
            clef_test_fill_pattern(dx, sz), clef_test_fcopy(dxr, dx, sz);
            clef_test_fill_pattern(dg, n), clef_test_fcopy(dgr, dg, n);
            clef_test_fill_pattern(dbt, n), clef_test_fcopy(dbr, dbt, n);
            k->layernorm_bwd(rows, n, dy, hr, rsr, g, dx, dg, dbt);
            clef_scalar_kernels.layernorm_bwd(rows, n, dy, hr, rsr, g, dxr, dgr,
                                              dbr);
            cr_assert(isa_close("dx", dx, dxr, sz, units),
                      "%s layernorm_bwd dx rows=%d n=%d", isa, rows, n);
            cr_assert(isa_same("dgamma", dg, dgr, n),
                      "%s layernorm_bwd dgamma rows=%d n=%d", isa, rows, n);
            cr_assert(isa_same("dbeta", dbt, dbr, n),
                      "%s layernorm_bwd dbeta rows=%d n=%d", isa, rows, n);
            // dx = NULL: parameter gradients only
            k->layernorm_bwd(rows, n, dy, hr, rsr, g, NULL, dg, dbt);
            clef_scalar_kernels.layernorm_bwd(rows, n, dy, hr, rsr, g, NULL,
                                              dgr, dbr);
            cr_assert(isa_same("dgamma (dx NULL)", dg, dgr, n),
                      "%s layernorm_bwd dx=NULL n=%d", isa, n);
            free(x), free(g), free(b), free(y), free(h), free(rs), free(yr),
                free(hr), free(rsr);
            free(dy), free(dx), free(dxr), free(dg), free(dgr), free(dbt),
                free(dbr);
        }
}

Test(isa_layernorm, avx512)
{
    layernorm_family("avx512");
}
Test(isa_layernorm, avx2)
{
    layernorm_family("avx2");
}

// avx512's backward for rows of 8 runs whole 16-row blocks in zmm
// (ln_bwd_rows16) and hands the rest to AVX2: dx, dgamma and dbeta must be
// the AVX2 kernel's bit for bit, for row counts around the 16- and 8-row
// blocks, with dx and without.
Test(isa_layernorm, avx512_rows8_bwd_bitwise_avx2)
{
    const clef_kernels *k512 = isa_table_or_skip("avx512");
    const clef_kernels *k2 = isa_table_or_skip("avx2");
    static const int rs[] = {16, 17, 23, 24, 25, 31, 32, 33, 40, 47, 96, 100};
    uint64_t rng = 0x1e8u;
    for (size_t ri = 0; ri < sizeof rs / sizeof rs[0]; ri++)
        for (int with_dx = 0; with_dx < 2; with_dx++) {
            const int rows = rs[ri], n = 8;
            const size_t e = (size_t)rows * n;
            float *x = clef_test_falloc(e), *y = clef_test_falloc(e);
            float *xh = clef_test_falloc(e), *rstd = clef_test_falloc(rows);
            float *dy = clef_test_falloc(e), *gamma = clef_test_falloc(n);
            float *beta = clef_test_falloc(n);
            float *dx[2], *dg[2], *db[2];
            clef_test_fill_normal(x, e, 0.5f, 2.0f, &rng);
            clef_test_fill_uniform(dy, e, -1.0f, 1.0f, &rng);
            clef_test_fill_uniform(gamma, n, 0.5f, 1.5f, &rng);
            clef_test_fill_uniform(beta, n, -0.5f, 0.5f, &rng);
            k2->layernorm_fwd(rows, n, x, gamma, beta, y, xh, rstd);
            for (int i = 0; i < 2; i++) {
                dx[i] = clef_test_falloc(e), dg[i] = clef_test_falloc(n);
                db[i] = clef_test_falloc(n);
                clef_test_fill_pattern(dx[i], e);
                clef_test_fill_pattern(dg[i], n);
                clef_test_fill_pattern(db[i], n);
                (i ? k2 : k512)
                    ->layernorm_bwd(rows, n, dy, xh, rstd, gamma,
                                    with_dx ? dx[i] : NULL, dg[i], db[i]);
            }
            cr_assert(clef_test_first_diff(dx[0], dx[1], e) < 0 &&
                          clef_test_first_diff(dg[0], dg[1], n) < 0 &&
                          clef_test_first_diff(db[0], db[1], n) < 0,
                      "layernorm_bwd rows=%d n=8 dx=%d: avx512 and avx2 differ",
                      rows, with_dx);
            for (int i = 0; i < 2; i++)
                free(dx[i]), free(dg[i]), free(db[i]);
            free(x), free(y), free(xh), free(rstd), free(dy), free(gamma),
                free(beta);
        }
}

// AVX2 LayerNorm on rows of exactly 8 floats against a scalar emulation of
// its two row orders, in bits: whole blocks of 8 rows in the transposed
// path's order (sequential column sums and FMA chains), the rows after the
// last block (or all of fewer than 8) in the generic row path's (vf_hsum's
// tree ((0+4)+(2+6))+((1+5)+(3+7)) over accumulators that start at zero,
// one FMA into dx): what any faster path for these rows must keep. (A
// transposed 8-row tile for the few rows kept these bits but was 2-4x
// slower below 8 rows: its transposes cost more than the generic rows.)
static float tree8(const float *s)
{
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

static void ln8_fwd_ref(int block, const float *x, const float *gamma,
                        const float *beta, float *y, float *xh, float *rstd)
{
    float t[8], d[8], q[8], sum, ss = 0.0f;
    for (int k = 0; k < 8; k++)
        t[k] = 0.0f + x[k];
    sum = block ? ((x[0] + x[1]) + (x[2] + x[3])) +
                      ((x[4] + x[5]) + (x[6] + x[7]))
                : tree8(t);
    const float mean = sum * 0.125f;
    for (int k = 0; k < 8; k++) {
        d[k] = x[k] - mean;
        q[k] = fmaf(d[k], d[k], 0.0f) + 0.0f;
        ss = fmaf(d[k], d[k], ss);
    }
    const float var = (block ? ss : tree8(q)) * 0.125f;
    const float rs = 1.0f / sqrtf(var + CLEF_LN_EPS);
    for (int k = 0; k < 8; k++) {
        xh[k] = d[k] * rs;
        y[k] = fmaf(gamma[k], xh[k], beta[k]);
    }
    *rstd = rs;
}

static void ln8_bwd_ref(int block, const float *g, const float *h, float rs,
                        const float *gamma, float *dx)
{
    float dxh[8], a[8], b[8], s1 = 0.0f, s2 = 0.0f;
    for (int k = 0; k < 8; k++) {
        dxh[k] = g[k] * gamma[k];
        a[k] = 0.0f + dxh[k];
        b[k] = fmaf(dxh[k], h[k], 0.0f);
        s1 = s1 + dxh[k];
        s2 = fmaf(dxh[k], h[k], s2);
    }
    const float m1 = (block ? s1 : tree8(a)) * 0.125f;
    const float m2 = (block ? s2 : tree8(b)) * 0.125f;
    for (int k = 0; k < 8; k++) {
        const float v = fmaf(-h[k], m2, dxh[k] - m1);
        dx[k] = block ? dx[k] + rs * v : fmaf(rs, v, dx[k]);
    }
}

Test(isa_layernorm, avx2_rows8_both_orders_bitwise)
{
    const clef_kernels *k = isa_table_or_skip("avx2");
    uint64_t rng = 0x18au;
    for (int rows = 1; rows <= 27; rows++) {
        const size_t e = (size_t)rows * 8;
        float *x = clef_test_falloc(e), *y = clef_test_falloc(e),
              *xh = clef_test_falloc(e);
        float *rstd = clef_test_falloc(rows), *dy = clef_test_falloc(e);
        float *dx = clef_test_falloc(e), *yr = clef_test_falloc(e),
              *xhr = clef_test_falloc(e);
        float *rstdr = clef_test_falloc(rows), *dxr = clef_test_falloc(e);
        float gamma[8], beta[8], dg[8], db[8], dgr[8], dbr[8];
        clef_test_fill_normal(x, e, 0.3f, 1.7f, &rng);
        clef_test_fill_uniform(dy, e, -1.0f, 1.0f, &rng);
        clef_test_fill_uniform(gamma, 8, 0.5f, 1.5f, &rng);
        clef_test_fill_uniform(beta, 8, -0.5f, 0.5f, &rng);
        clef_test_fill_pattern(dx, e);
        clef_test_fcopy(dxr, dx, e);
        clef_test_fill_pattern(dg, 8), clef_test_fill_pattern(db, 8);
        clef_test_fcopy(dgr, dg, 8), clef_test_fcopy(dbr, db, 8);
        const int r8 = rows / 8 * 8;
        k->layernorm_fwd(rows, 8, x, gamma, beta, y, xh, rstd);
        for (int r = 0; r < rows; r++)
            ln8_fwd_ref(r < r8, x + (size_t)r * 8, gamma, beta,
                        yr + (size_t)r * 8, xhr + (size_t)r * 8, rstdr + r);
        cr_assert(clef_test_first_diff(y, yr, e) < 0 &&
                      clef_test_first_diff(xh, xhr, e) < 0 &&
                      clef_test_first_diff(rstd, rstdr, rows) < 0,
                  "layernorm_fwd rows=%d n=8: not the emulated orders' bits",
                  rows);
        k->layernorm_bwd(rows, 8, dy, xh, rstd, gamma, dx, dg, db);
        float sg[8] = {0}, sb[8] = {0};
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < 8; c++) {
                sg[c] = sg[c] + dy[(size_t)r * 8 + c] * xh[(size_t)r * 8 + c];
                sb[c] = sb[c] + dy[(size_t)r * 8 + c];
            }
            ln8_bwd_ref(r < r8, dy + (size_t)r * 8, xh + (size_t)r * 8, rstd[r],
                        gamma, dxr + (size_t)r * 8);
        }
        for (int c = 0; c < 8; c++)
            dgr[c] += sg[c], dbr[c] += sb[c];
        cr_assert(clef_test_first_diff(dx, dxr, e) < 0,
                  "layernorm_bwd rows=%d: dx differs at %ld", rows,
                  clef_test_first_diff(dx, dxr, e));
        cr_assert(clef_test_first_diff(dg, dgr, 8) < 0 &&
                      clef_test_first_diff(db, dbr, 8) < 0,
                  "layernorm_bwd rows=%d: dgamma or dbeta differ", rows);
        free(x), free(y), free(xh), free(rstd), free(dy), free(dx), free(yr),
            free(xhr);
        free(rstdr), free(dxr);
    }
}

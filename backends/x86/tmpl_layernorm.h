// LayerNorm over the last axis (eps CLEF_LN_EPS), written once against the
// vf layer.
//   fwd: x (rows, n) -> y = gamma ⊙ xhat + beta, xhat (rows, n), rstd (rows)
//        two passes for mean and centred variance (as the reference), vector
//        partial sums combined in a fixed tree: deterministic.
//   bwd: dx (rows, n) += rstd (dxh − mean(dxh) − xhat·mean(dxh⊙xhat)),
//        dgamma (n) += Σ dy⊙xhat, dbeta (n) += Σ dy (columns sum from zero over
//        increasing rows, the reference's order); one fused sweep for rows up
//        to LN_FUSED_MAX.
// The including file defines two statement hooks, empty or a path of the
// ISA's own for some rows (AVX2: rows of exactly 8 floats):
//   LN_FWD_ISA_ROWS(rows, n, x, gamma, beta, y, xhat, rstd)
//       runs the first rows its own way and advances rows and the pointers
//       past them
//   LN_BWD_ISA_ROWS(r, rows, n, dy, xhat, rstd, gamma, dx, sg, sb)
//       runs rows [0, r) its own way, setting r, with their dgamma and dbeta
//       partial sums in sg, sb (n), as the generic rows leave them

// Σ x over a row with 2 vector accumulators.
static inline float ln_row_sum(int n, const float *x)
{
    vf s0 = vf_zero(), s1 = vf_zero();
    int i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        s0 = vf_add(s0, vf_load(x + i));
        s1 = vf_add(s1, vf_load(x + i + VW));
    }
    for (; i + VW <= n; i += VW)
        s0 = vf_add(s0, vf_load(x + i));
    if (i < n)
        s1 = vf_add(s1, vf_loadn(x + i, n - i));
    return vf_hsum(vf_add(s0, s1));
}

// Σ (x − mean)² over a row.
static inline float ln_row_ss(int n, const float *x, float mean)
{
    vf m = vf_set1(mean), s0 = vf_zero(), s1 = vf_zero();
    int i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        vf d0 = vf_sub(vf_load(x + i), m), d1 = vf_sub(vf_load(x + i + VW), m);
        s0 = vf_fma(d0, d0, s0);
        s1 = vf_fma(d1, d1, s1);
    }
    for (; i + VW <= n; i += VW) {
        vf d = vf_sub(vf_load(x + i), m);
        s0 = vf_fma(d, d, s0);
    }
    if (i < n) {
        vf d = vf_keepn(vf_sub(vf_loadn(x + i, n - i), m), n - i);
        s1 = vf_fma(d, d, s1);
    }
    return vf_hsum(vf_add(s0, s1));
}

// Rows up to this length take the fused backward: one sweep reads dy and
// xhat once for dx, dgamma and dbeta (the per-column partial sums live on the
// stack, 2 × 32 KiB at most).
#define LN_FUSED_MAX 8192

// dx row (n) += rs (dxh − mean1 − xhat·mean2), dxh = dy ⊙ gamma; when sg is
// not NULL also sg (n) += dy ⊙ xhat and sb (n) += dy (column partial sums,
// no FMA: the reference's rounding).
static void ln_bwd_row(int n, const float *g, const float *h, float rs,
                       const float *gamma, float *d, float *sg, float *sb)
{
    vf s1 = vf_zero(), s2 = vf_zero();
    int i = 0;
    for (; i + VW <= n; i += VW) {
        vf gi = vf_load(g + i), hi = vf_load(h + i);
        vf dxh = vf_mul(gi, vf_load(gamma + i));
        s1 = vf_add(s1, dxh);
        s2 = vf_fma(dxh, hi, s2);
        if (sg) {
            vf_store(sg + i, vf_add(vf_load(sg + i), vf_mul(gi, hi)));
            vf_store(sb + i, vf_add(vf_load(sb + i), gi));
        }
    }
    if (i < n) {
        int t = n - i;
        vf gi = vf_loadn(g + i, t), hi = vf_loadn(h + i, t);
        vf dxh = vf_mul(gi, vf_loadn(gamma + i, t));
        s1 = vf_add(s1, dxh);
        s2 = vf_fma(dxh, hi, s2);
        if (sg) {
            vf_storen(sg + i, vf_add(vf_loadn(sg + i, t), vf_mul(gi, hi)), t);
            vf_storen(sb + i, vf_add(vf_loadn(sb + i, t), gi), t);
        }
    }
    if (!d)
        return;
    vf m1 = vf_set1(vf_hsum(s1) / (float)n),
       m2 = vf_set1(vf_hsum(s2) / (float)n);
    vf r = vf_set1(rs);
    for (i = 0; i + VW <= n; i += VW) {
        vf dxh = vf_mul(vf_load(g + i), vf_load(gamma + i));
        vf v = vf_fnma(vf_load(h + i), m2, vf_sub(dxh, m1));
        vf_store(d + i, vf_fma(r, v, vf_load(d + i)));
    }
    if (i < n) {
        int t = n - i;
        vf dxh = vf_mul(vf_loadn(g + i, t), vf_loadn(gamma + i, t));
        vf v = vf_fnma(vf_loadn(h + i, t), m2, vf_sub(dxh, m1));
        vf_storen(d + i, vf_fma(r, v, vf_loadn(d + i, t)), t);
    }
}

// dgamma, dbeta columns [c, c + w) (w ≤ VW) over all rows (long rows only).
static void ln_bwd_cols(int rows, int n, int c, int w, const float *dy,
                        const float *xhat, float *dgamma, float *dbeta)
{
    vf sg = vf_zero(), sb = vf_zero();
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n + c;
        vf g = w == VW ? vf_load(dy + o) : vf_loadn(dy + o, w);
        vf h = w == VW ? vf_load(xhat + o) : vf_loadn(xhat + o, w);
        sg = vf_add(sg, vf_mul(g, h)); // no FMA: the reference's rounding
        sb = vf_add(sb, g);
    }
    if (w == VW) {
        vf_store(dgamma + c, vf_add(vf_load(dgamma + c), sg));
        vf_store(dbeta + c, vf_add(vf_load(dbeta + c), sb));
    } else {
        vf_storen(dgamma + c, vf_add(vf_loadn(dgamma + c, w), sg), w);
        vf_storen(dbeta + c, vf_add(vf_loadn(dbeta + c, w), sb), w);
    }
}

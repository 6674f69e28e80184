// Multi-head attention core, written once against the vf layer. Heads up to
// ATTN_SMALL_DH wide (the head's dh = 4) take the small path below, which
// vectorises over the keys; wider heads run their two products per head
// through this ISA's own GEMM (ATTN_GEMM_NT/NN/TN, defined by the including
// file); the softmax rows, as long as the keys, use the full vector width.
//   fwd: A_h (nq, nk) = softmax_rows(scale · Q_h K_hᵀ), O_h = A_h V_h
//   bwd: dA = dO_h V_hᵀ; dV_h += A_hᵀ dO_h; dS = scale · A ⊙ (dA − rowsum(dA⊙A));
//        dQ_h += dS K_h; dK_h += dSᵀ Q_h       (scale = 1/√dh, folded into dS)
// Needs tmpl_softmax.h included first (softmax_row, softmax_bwd_row).

static float attn_scale(int dh)
{
    return (float)(1.0 / sqrt((double)dh));
}

// ---- small-head path: dh ≤ ATTN_SMALL_DH, vectorised over the keys ----
// The GEMM path's products have inner dimension dh, which for the head's
// narrow heads (dh = 4) leaves them mostly call and packing overhead. Instead,
// per group of heads, K and V (nk, g·dh) are transposed into stack blocks
// Kt, Vt (⌈g·dh⌉₈, nkp), keys padded with zeros to nkp = nk rounded up to VW;
// then every product runs over whole vectors of keys:
//   scores  s[j]    = Σ_e q[e] · Kt[e][j]          (broadcast-FMA over j)
//   output  O[i][e] = Σ_j A[i][j] · Vt[e][j]       (4 dots at a time)
//   bwd     dA[j]   = Σ_e dO[i][e] · Vt[e][j];  dVt[e][j] += A[i][j] · dO[i][e]
//           dQ[i][e] += Σ_j dS[j] · Kt[e][j];    dKt[e][j] += dS[j] · Q[i][e]
// dKt, dVt accumulate on the stack and are added, transposed back, into dK, dV.
// Query rows go through each pass in batches of ATTN_NB (shared K/V loads,
// overlapped reductions). Fixed order everywhere: results do not depend on
// anything but the inputs. Stack: 48 KB (fwd), 80 KB (bwd) at the limits.
#define ATTN_SMALL_DH 16   // widest head the path takes
#define ATTN_SMALL_NK 1024 // longest padded key row (stack rows)
#define ATTN_SMALL_FLOATS                                                      \
    4096 // one transposed block: ⌈g·dh⌉₈·nkp floats (16 KB)

// Rows of a transposed block: nc rounded up to 8 (whole tiles).
static inline int attn_rows8(int nc)
{
    return (nc + 7) & ~7;
}

// Heads per group of the small path, 0 when the shape takes the GEMM path.
static int attn_small_group(int nk, int heads, int dh)
{
    int nkp = (nk + VW - 1) / VW * VW;
    if (dh < 1 || dh > ATTN_SMALL_DH || nk < 1 || nkp > ATTN_SMALL_NK)
        return 0;
    int g = heads;
    while (g > 0 && (size_t)attn_rows8(g * dh) * nkp > ATTN_SMALL_FLOATS)
        g--;
    return g;
}

// first n (≤ 8) floats of p as a ymm, the rest zero; never touches p[n..]
static inline v8f attn_ld8n(const float *p, int n)
{
    if (n == 8)
        return v8_load(p);
    return v8_loadn(p, n);
}
static inline void attn_st8n(float *p, v8f v, int n)
{
    if (n == 8) {
        v8_store(p, v);
        return;
    }
    v8_storen(p, v, n);
}

// Xt (attn_rows8(nc), nkp) = Xᵀ for X (nk, nc) ld ldx; keys nk..nkp-1 and
// rows nc.. are zero. Blocks of VW keys × 8 columns (vec.h's vf_tile_in),
// stored as whole vector rows (as the kernels load them).
static void attn_transpose_in(int nk, int nkp, int nc, const float *X, int ldx,
                              float *Xt)
{
    for (int c0 = 0; c0 < nc; c0 += 8) {
        int w = nc - c0 < 8 ? nc - c0 : 8;
        for (int j0 = 0; j0 < nkp; j0 += VW) {
            float *T = Xt + (size_t)c0 * nkp + j0;
            if (w == 8 && j0 + VW <= nk) {
                vf_tile_in(X + (size_t)j0 * ldx + c0, (size_t)ldx, T,
                           (size_t)nkp);
                continue;
            }
            _Alignas(4 * VW) float
                e[8 * VW]; // edge block (VW keys, 8 columns), zero padded
            for (int k = 0; k < VW; k++)
                v8_store_a(e + 8 * k,
                           j0 + k < nk
                               ? attn_ld8n(X + (size_t)(j0 + k) * ldx + c0, w)
                               : v8_zero());
            vf_tile_in(e, 8, T, (size_t)nkp);
        }
    }
}

// X (nk, nc) ld ldx += Xtᵀ for Xt (attn_rows8(nc), nkp).
static void attn_transpose_add(int nk, int nkp, int nc, const float *Xt,
                               float *X, int ldx)
{
    enum { KB = VW }; // keys per block: whole vector rows of Xt
    for (int c0 = 0; c0 < nc; c0 += 8) {
        int w = nc - c0 < 8 ? nc - c0 : 8;
        for (int j0 = 0; j0 < nk; j0 += KB) {
            const float *T = Xt + (size_t)c0 * nkp + j0;
            float *P = X + (size_t)j0 * ldx + c0;
            _Alignas(64) float e[8 * KB]; // edge block (KB keys, 8 columns)
            if (w == 8 && j0 + KB <= nk) {
                vf_tile_add(T, (size_t)nkp, P, (size_t)ldx);
                continue;
            }
            vf_tile_out(T, (size_t)nkp, e);
            int rows = nk - j0 < KB ? nk - j0 : KB;
            for (int k = 0; k < rows; k++) {
                float *p = P + (size_t)k * ldx;
                attn_st8n(p, v8_add(attn_ld8n(p, w), v8_load_a(e + 8 * k)), w);
            }
        }
    }
}

// out[e] (+)= mul · Σ_j x[j] · Y[e][j] for e < n: x (len), Y (n, len) ld len,
// len a multiple of VW. `acc` 0 overwrites out, 1 adds to it.
static inline __attribute__((always_inline)) void
attn_rowdots(int n, int len, const float *x, const float *Y, float mul,
             float *out, int acc)
{
    for (int e0 = 0; e0 < n; e0 += 4) {
        int m = n - e0 < 4 ? n - e0 : 4;
        // rows past n repeat the last one; their sums are dropped
        const float *y0 = Y + (size_t)e0 * len;
        const float *y1 = Y + (size_t)(e0 + (m > 1 ? 1 : 0)) * len;
        const float *y2 = Y + (size_t)(e0 + (m > 2 ? 2 : 0)) * len;
        const float *y3 = Y + (size_t)(e0 + (m > 3 ? 3 : 0)) * len;
        vf s0 = vf_zero(), s1 = vf_zero(), s2 = vf_zero(), s3 = vf_zero();
        for (int j = 0; j < len; j += VW) {
            vf xv = vf_load(x + j);
            s0 = vf_fma(xv, vf_load(y0 + j), s0);
            s1 = vf_fma(xv, vf_load(y1 + j), s1);
            s2 = vf_fma(xv, vf_load(y2 + j), s2);
            s3 = vf_fma(xv, vf_load(y3 + j), s3);
        }
        float r[4];
        v4_store(r, v4_mul(vf_hsum4(s0, s1, s2, s3), v4_set1(mul)));
        for (int k = 0; k < m; k++)
            out[e0 + k] = acc ? out[e0 + k] + r[k] : r[k];
    }
}

// exp(x) for the max-subtracted scores (x ≤ 0, or NaN, which propagates):
// vf_exp's range reduction and polynomial without its overflow and NaN
// selects; the clamp and the final 2^n (with its flush to 0) are the ISA's
// (vec.h: VF_EXP_LE0_MIN, vf_exp_le0_scale).
static inline vf attn_exp_le0(vf x)
{
    vf xm = x;
    x = vf_max(vf_set1(VF_EXP_LE0_MIN), x); // NaN propagates (second operand)
    vf n = vf_round(vf_mul(x, vf_set1(1.44269504088896341f)));
    vf r = vf_fnma(n, vf_set1(0.693359375f), x);
    r = vf_fnma(n, vf_set1(-2.12194440e-4f), r);
    vf p = vf_set1(1.9841269841e-4f); // 1/7!
    p = vf_fma(p, r, vf_set1(1.3888888889e-3f));
    p = vf_fma(p, r, vf_set1(8.3333333333e-3f));
    p = vf_fma(p, r, vf_set1(4.1666666667e-2f));
    p = vf_fma(p, r, vf_set1(1.6666666667e-1f));
    p = vf_fma(p, r, vf_set1(0.5f));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    return vf_exp_le0_scale(p, n, xm);
}

// x[j..j+VW) of a row of n floats, lanes past n zero (never read).
static inline vf attn_ldrow(const float *x, int j, int n)
{
    return n - j >= VW ? vf_load(x + j) : vf_loadn(x + j, n - j);
}

#define ATTN_NB 4 // query rows per batch (fwd and bwd)

// A batch of nb (≤ ATTN_NB) query rows of one head, forward: A rows a[b] (nk)
// and O rows o[b] (dh).
//   s_b (nkp) = scale · q_b Khᵀ, max-subtracted exp, a_b = s_b / Σ s_b,
//   o_b = a_b Vh.
// Three passes over s (ld nkp); the rows of a batch go through each pass
// together, so their reductions (max, sum, dots) overlap instead of chaining.
static inline __attribute__((always_inline)) void
attn_fwd_rows(int nk, int nkp, int dh, int nb, float scale,
              const float *const *q, const float *Kh, const float *Vh, float *s,
              float *const *a, float *const *o)
{
    vf mx[ATTN_NB], sum[ATTN_NB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
        mx[b] = vf_set1(-__builtin_inff()), sum[b] = vf_zero();
    for (int j = 0; j < nkp; j += VW) { // scores (pads 0) and their max
        vf acc[ATTN_NB];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
            acc[b] = vf_zero();
#pragma GCC unroll 4
        for (int e = 0; e < dh; e++) {
            vf k = vf_load(Kh + (size_t)e * nkp + j);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++)
                acc[b] = vf_fma(vf_set1(q[b][e] * scale), k, acc[b]);
        }
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            float *sb = s + (size_t)b * nkp + j;
            vf_store(sb, acc[b]);
            mx[b] = vf_max(mx[b],
                           nk - j >= VW
                               ? acc[b]
                               : vf_loadn_fill(sb, nk - j, -__builtin_inff()));
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
        mx[b] = vf_set1(vf_hmax(mx[b]));
    for (int j = 0; j < nkp; j += VW) { // exp, pads back to 0
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            float *sb = s + (size_t)b * nkp + j;
            vf e = attn_exp_le0(vf_sub(vf_load(sb), mx[b]));
            if (nk - j < VW)
                e = vf_keepn(e, nk - j);
            vf_store(sb, e);
            sum[b] = vf_add(sum[b], e);
        }
    }
    float inv[ATTN_NB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
        inv[b] = 1.0f / vf_hsum(sum[b]);
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        const float *sb = s + (size_t)b * nkp;
        vf iv = vf_set1(inv[b]);
        int j = 0;
        for (; j + VW <= nk; j += VW)
            vf_store(a[b] + j, vf_mul(vf_load(sb + j), iv));
        if (j < nk)
            vf_storen(a[b] + j, vf_mul(vf_load(sb + j), iv), nk - j);
        attn_rowdots(dh, nkp, sb, Vh, inv[b], o[b], 0);
    }
}

// attn_fwd_rows with nb and (for the head's dh = 4) dh as constants, so the
// batch loops unroll and the per-row vectors stay in registers.
static void attn_fwd_batch(int nk, int nkp, int dh, int nb, float scale,
                           const float *const *q, const float *Kh,
                           const float *Vh, float *s, float *const *a,
                           float *const *o)
{
#define ATTN_FWD_NB_CASE(n)                                                    \
    case n:                                                                    \
        if (dh == 4)                                                           \
            attn_fwd_rows(nk, nkp, 4, n, scale, q, Kh, Vh, s, a, o);           \
        else                                                                   \
            attn_fwd_rows(nk, nkp, dh, n, scale, q, Kh, Vh, s, a, o);          \
        break;
    switch (nb) {
        ATTN_FWD_NB_CASE(1)
        ATTN_FWD_NB_CASE(2)
        ATTN_FWD_NB_CASE(3)
        ATTN_FWD_NB_CASE(4)
    default:
        break;
    }
#undef ATTN_FWD_NB_CASE
}

// A batch of nb (≤ ATTN_NB) query rows of one head, backward, given their
// A rows a[b] (nk):
//   dA_b = dy_b Vhᵀ; dVh += Σ_b a_b ⊗ dy_b;
//   dS_b = scale · a_b ⊙ (dA_b − Σ dA_b ⊙ a_b)   (into ds + b·nkp);
//   dq_b += dS_b Kh; dKh += Σ_b dS_b ⊗ q_b.
// Each chunk of dVh, dKh is loaded and stored once per batch; `first` (the
// head's first batch) stores them instead of adding.
static inline __attribute__((always_inline)) void
attn_bwd_rows(int nk, int nkp, int dh, int nb, float scale,
              const float *const *q, const float *const *dy,
              const float *const *a, const float *Kh, const float *Vh,
              float *dKh, float *dVh, float *ds, float *const *dq, int first)
{
    vf dot[ATTN_NB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
        dot[b] = vf_zero();
    for (int j = 0; j < nkp; j += VW) {
        vf p[ATTN_NB], da[ATTN_NB];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
            p[b] = attn_ldrow(a[b], j, nk), da[b] = vf_zero();
#pragma GCC unroll 4
        for (int e = 0; e < dh; e++) {
            vf v = vf_load(Vh + (size_t)e * nkp + j);
            float *dvp = dVh + (size_t)e * nkp + j;
            vf dv = first ? vf_zero() : vf_load(dvp);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) {
                vf ye = vf_set1(dy[b][e]);
                da[b] = vf_fma(ye, v, da[b]);
                dv = vf_fma(p[b], ye, dv);
            }
            vf_store(dvp, dv);
        }
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            vf_store(ds + (size_t)b * nkp + j, da[b]);
            dot[b] = vf_fma(da[b], p[b], dot[b]);
        }
    }
    vf sc = vf_set1(scale);
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
        dot[b] = vf_set1(vf_hsum(dot[b]));
    for (int j = 0; j < nkp; j += VW) { // pads: a = 0, so dS = 0
        vf g[ATTN_NB];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            float *d = ds + (size_t)b * nkp + j;
            g[b] = vf_mul(
                vf_mul(attn_ldrow(a[b], j, nk), vf_sub(vf_load(d), dot[b])),
                sc);
            vf_store(d, g[b]);
        }
#pragma GCC unroll 4
        for (int e = 0; e < dh; e++) {
            float *dkp = dKh + (size_t)e * nkp + j;
            vf dk = first ? vf_zero() : vf_load(dkp);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++)
                dk = vf_fma(g[b], vf_set1(q[b][e]), dk);
            vf_store(dkp, dk);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
        attn_rowdots(dh, nkp, ds + (size_t)b * nkp, Kh, 1.0f, dq[b], 1);
}

// attn_bwd_rows with nb and (for the head's dh = 4) dh as constants, so the
// batch loops unroll and the per-row vectors stay in registers.
static void attn_bwd_batch(int nk, int nkp, int dh, int nb, float scale,
                           const float *const *q, const float *const *dy,
                           const float *const *a, const float *Kh,
                           const float *Vh, float *dKh, float *dVh, float *ds,
                           float *const *dq, int first)
{
#define ATTN_NB_CASE(n)                                                        \
    case n:                                                                    \
        if (dh == 4)                                                           \
            attn_bwd_rows(nk, nkp, 4, n, scale, q, dy, a, Kh, Vh, dKh, dVh,    \
                          ds, dq, first);                                      \
        else                                                                   \
            attn_bwd_rows(nk, nkp, dh, n, scale, q, dy, a, Kh, Vh, dKh, dVh,   \
                          ds, dq, first);                                      \
        break;
    switch (nb) {
        ATTN_NB_CASE(1)
        ATTN_NB_CASE(2)
        ATTN_NB_CASE(3)
        ATTN_NB_CASE(4)
    default:
        break;
    }
#undef ATTN_NB_CASE
}

static void attn_fwd_small(int nq, int nk, int heads, int dh, int g,
                           const float *Q, int ldq, const float *K, int ldk,
                           const float *V, int ldv, float *A, float *O, int ldo)
{
    _Alignas(64) float Kt[ATTN_SMALL_FLOATS],
        Vt[ATTN_SMALL_FLOATS];                     // (⌈g·dh⌉₈, nkp)
    _Alignas(64) float s[ATTN_NB * ATTN_SMALL_NK]; // (nb, nkp)
    int nkp = (nk + VW - 1) / VW * VW;
    float scale = attn_scale(dh);
    for (int h0 = 0; h0 < heads; h0 += g) {
        int gh = heads - h0 < g ? heads - h0 : g, c0 = h0 * dh;
        attn_transpose_in(nk, nkp, gh * dh, K + c0, ldk, Kt);
        attn_transpose_in(nk, nkp, gh * dh, V + c0, ldv, Vt);
        for (int hh = 0; hh < gh; hh++) {
            int h = h0 + hh;
            const float *Kh = Kt + (size_t)hh * dh * nkp; // (dh, nkp)
            const float *Vh = Vt + (size_t)hh * dh * nkp; // (dh, nkp)
            for (int i0 = 0; i0 < nq; i0 += ATTN_NB) {
                int nb = nq - i0 < ATTN_NB ? nq - i0 : ATTN_NB;
                const float *q[ATTN_NB];        // rows (dh)
                float *a[ATTN_NB], *o[ATTN_NB]; // rows (nk), (dh)
                for (int b = 0; b < nb; b++) {
                    int i = i0 + b;
                    q[b] = Q + (size_t)i * ldq + h * dh;
                    a[b] = A + ((size_t)h * nq + i) * nk;
                    o[b] = O + (size_t)i * ldo + h * dh;
                }
                attn_fwd_batch(nk, nkp, dh, nb, scale, q, Kh, Vh, s, a, o);
            }
        }
    }
}

static void attn_bwd_small(int nq, int nk, int heads, int dh, int g,
                           const float *Q, int ldq, const float *K, int ldk,
                           const float *V, int ldv, const float *A,
                           const float *dO, int lddo, float *dQ, int lddq,
                           float *dK, int lddk, float *dV, int lddv)
{
    _Alignas(64) float Kt[ATTN_SMALL_FLOATS],
        Vt[ATTN_SMALL_FLOATS]; // (⌈g·dh⌉₈, nkp)
    _Alignas(64) float dKt[ATTN_SMALL_FLOATS],
        dVt[ATTN_SMALL_FLOATS];                     // (⌈g·dh⌉₈, nkp)
    _Alignas(64) float ds[ATTN_NB * ATTN_SMALL_NK]; // (nb, nkp)
    int nkp = (nk + VW - 1) / VW * VW;
    float scale = attn_scale(dh);
    if (nq < 1)
        return; // no gradient to add
    for (int h0 = 0; h0 < heads; h0 += g) {
        int gh = heads - h0 < g ? heads - h0 : g, c0 = h0 * dh, nc = gh * dh;
        attn_transpose_in(nk, nkp, nc, K + c0, ldk, Kt);
        attn_transpose_in(nk, nkp, nc, V + c0, ldv, Vt);
        // the first query of each head stores rows 0..nc of dKt, dVt; the
        // tile padding rows nc..⌈nc⌉₈ are zero
        for (size_t t = (size_t)nc * nkp; t < (size_t)attn_rows8(nc) * nkp;
             t += VW) {
            vf_store(dKt + t, vf_zero());
            vf_store(dVt + t, vf_zero());
        }
        for (int hh = 0; hh < gh; hh++) {
            int h = h0 + hh;
            size_t o = (size_t)hh * dh * nkp;
            const float *Kh = Kt + o, *Vh = Vt + o; // (dh, nkp)
            float *dKh = dKt + o, *dVh = dVt + o;   // (dh, nkp)
            for (int i0 = 0; i0 < nq; i0 += ATTN_NB) {
                int nb = nq - i0 < ATTN_NB ? nq - i0 : ATTN_NB;
                const float *q[ATTN_NB], *dy[ATTN_NB], *a[ATTN_NB]; // rows
                float *dq[ATTN_NB];
                for (int b = 0; b < nb; b++) {
                    int i = i0 + b;
                    q[b] = Q + (size_t)i * ldq + h * dh;    // (dh)
                    dy[b] = dO + (size_t)i * lddo + h * dh; // (dh)
                    a[b] = A + ((size_t)h * nq + i) * nk;   // (nk)
                    dq[b] = dQ + (size_t)i * lddq + h * dh; // (dh)
                }
                attn_bwd_batch(nk, nkp, dh, nb, scale, q, dy, a, Kh, Vh, dKh,
                               dVh, ds, dq, i0 == 0);
            }
        }
        attn_transpose_add(nk, nkp, nc, dKt, dK + c0, lddk);
        attn_transpose_add(nk, nkp, nc, dVt, dV + c0, lddv);
    }
}

// ---- GEMM path ----

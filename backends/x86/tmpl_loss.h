// Grouped loss (HEAD.md §6), written once against the vf layer: each
// question's options are processed VW at a time (masked tail); the
// per-question sums are float, the question shares of L are combined in
// double, as the reference (backends/scalar/loss.c) does.
//   p = softmax(z) per question; y' = (1−ε) y + ε/n
//   L += (1/N)[−Σ y' log p + β Σ (p − y)²] + [score] (λ/N_score) Σ_ij p_i |i−j| y_j / max(n−1,1)
//   dz = [(p − y') + 2β p ((p − y) − Σ p (p − y))] / N + [score] p (a − Σ p a)

// lanes i0 + 0 .. i0 + VW−1 as floats
static inline vf loss_lane_index(int i0)
{
    float t[VW];
    for (int l = 0; l < VW; l++)
        t[l] = (float)(i0 + l);
    return vf_load(t);
}

static inline vf loss_ld(const float *p, int w)
{
    return w == VW ? vf_load(p) : vf_loadn(p, w);
}
static inline void loss_st(float *p, vf v, int w)
{
    if (w == VW)
        vf_store(p, v);
    else
        vf_storen(p, v, w);
}

// Σ_j |i−j| y_j for the VW options starting at i0, over increasing j
static inline vf loss_ordinal_weight(int n, int i0, const float *y)
{
    vf iv = loss_lane_index(i0), acc = vf_zero();
    for (int j = 0; j < n; j++)
        acc = vf_add(
            acc, vf_mul(vf_abs(vf_sub(iv, vf_set1((float)j))), vf_set1(y[j])));
    return acc;
}

static double loss_question_v(int n, int score, const float *z, const float *y,
                              const clef_loss_args *a, float *p, float *dz)
{
    if (n == 1) {
        p[0] = 1.0f;
        dz[0] = 0.0f;
        return 0.0;
    }
    const float ninf = -__builtin_inff();
    vf mxv = vf_set1(ninf);
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        mxv = vf_max(mxv,
                     w == VW ? vf_load(z + i) : vf_loadn_fill(z + i, w, ninf));
    }
    vf mx = vf_set1(vf_hmax(mxv)), sv = vf_zero();
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        vf zi = w == VW ? vf_load(z + i) : vf_loadn_fill(z + i, w, ninf);
        vf e = vf_exp(vf_sub(zi, mx));
        loss_st(p + i, e, w);
        sv = vf_add(sv, e);
    }
    float sum = vf_hsum(sv);
    vf sumv = vf_set1(sum);
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        loss_st(p + i, vf_div(loss_ld(p + i, w), sumv), w);
    }
    vf lse = vf_set1(logf(sum));
    vf one_eps = vf_set1(1.0f - a->smoothing),
       eps_n = vf_set1(a->smoothing / (float)n);
    vf ce = vf_zero(), brier = vf_zero(), pb = vf_zero();
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        vf yi = loss_ld(y + i, w), pi = loss_ld(p + i, w),
           zi = loss_ld(z + i, w);
        vf ys = vf_add(vf_mul(one_eps, yi), eps_n);
        vf logp = vf_sub(vf_sub(zi, mx), lse);
        vf d = vf_sub(pi, yi);
        vf t = vf_mul(ys, logp);
        ce = vf_sub(ce, w == VW ? t : vf_keepn(t, w));
        brier = vf_add(brier, vf_mul(d, d));
        pb = vf_add(pb, vf_mul(pi, d));
    }
    float ces = vf_hsum(ce), brs = vf_hsum(brier);
    vf pbv = vf_set1(vf_hsum(pb));
    vf two_beta = vf_set1(2.0f * a->brier), inv_n = vf_set1(a->inv_n);
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        vf yi = loss_ld(y + i, w), pi = loss_ld(p + i, w);
        vf gce = vf_sub(pi, vf_add(vf_mul(one_eps, yi), eps_n));
        vf gbr = vf_mul(vf_mul(two_beta, pi), vf_sub(vf_sub(pi, yi), pbv));
        loss_st(dz + i, vf_mul(vf_add(gce, gbr), inv_n), w);
    }
    double share = (double)a->inv_n * ((double)ces + (double)a->brier * brs);
    if (!(score && a->ordinal != 0.0f && a->inv_nscore != 0.0f))
        return share;
    // ordinal term: a_i = λ ow_i / (n−1) / N_score
    float den = (float)(n - 1);
    vf lam = vf_set1(a->ordinal), denv = vf_set1(den),
       ins = vf_set1(a->inv_nscore);
    vf ord = vf_zero(), pa = vf_zero();
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        vf pi = loss_ld(p + i, w); // zero beyond w
        vf ow = loss_ordinal_weight(n, i, y);
        vf ai = vf_mul(vf_div(vf_mul(lam, ow), denv), ins);
        ord = vf_add(ord, vf_mul(pi, ow));
        pa = vf_add(pa, vf_mul(pi, ai));
    }
    vf pav = vf_set1(vf_hsum(pa));
    for (int i = 0; i < n; i += VW) {
        int w = n - i < VW ? n - i : VW;
        vf pi = loss_ld(p + i, w);
        vf ai = vf_mul(vf_div(vf_mul(lam, loss_ordinal_weight(n, i, y)), denv),
                       ins);
        loss_st(dz + i, vf_add(loss_ld(dz + i, w), vf_mul(pi, vf_sub(ai, pav))),
                w);
    }
    share += (double)a->ordinal * (double)a->inv_nscore *
             ((double)vf_hsum(ord) / den);
    return share;
}

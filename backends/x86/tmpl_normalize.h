// normalize and cosine per row, written once against the vf layer.
//   normalize_fwd: y (rows, n) = x / max(|x|, eps), nrm (rows) = |x|
//   normalize_bwd: dx += |x| > eps ? (dy − y (y·dy)) / |x| : dy / eps
//   cosine_fwd:    c (rows) = â·b̂, â = a / max(|a|, CLEF_COSINE_EPS); saves
//                  â, b̂ (rows, n), na, nb (rows)
//   cosine_bwd:    da += normalize-back(â, na, dc·b̂), db likewise

static inline float nz_dot(int n, const float *a, const float *b)
{
    vf s0 = vf_zero(), s1 = vf_zero();
    int i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        s0 = vf_fma(vf_load(a + i), vf_load(b + i), s0);
        s1 = vf_fma(vf_load(a + i + VW), vf_load(b + i + VW), s1);
    }
    for (; i + VW <= n; i += VW)
        s0 = vf_fma(vf_load(a + i), vf_load(b + i), s0);
    if (i < n)
        s1 = vf_fma(vf_loadn(a + i, n - i), vf_loadn(b + i, n - i), s1);
    return vf_hsum(vf_add(s0, s1));
}

// y (n) = x / den
static inline void nz_scale(int n, const float *x, float den, float *y)
{
    vf d = vf_set1(den);
    int i = 0;
    for (; i + VW <= n; i += VW)
        vf_store(y + i, vf_div(vf_load(x + i), d));
    if (i < n)
        vf_storen(y + i, vf_div(vf_loadn(x + i, n - i), d), n - i);
}

// dx (n) += nrm > eps ? (g − y·dot) / nrm : g / eps, with g = gs · G (gs = 1
// and G = dy for normalize; gs = dc and G = the other unit vector for cosine)
static inline void nz_back(int n, float eps, const float *y, float nrm,
                           float gs, const float *G, float *dx)
{
    vf s = vf_set1(gs);
    int big = nrm > eps;
    float dot = 0.0f;
    if (big) {
        vf acc = vf_zero();
        int i = 0;
        for (; i + VW <= n; i += VW)
            acc = vf_fma(vf_load(y + i), vf_mul(s, vf_load(G + i)), acc);
        if (i < n)
            acc = vf_fma(vf_loadn(y + i, n - i),
                         vf_mul(s, vf_loadn(G + i, n - i)), acc);
        dot = vf_hsum(acc);
    }
    vf dv = vf_set1(dot), den = vf_set1(big ? nrm : eps);
    int i = 0;
    for (; i + VW <= n; i += VW) {
        vf g = vf_mul(s, vf_load(G + i));
        vf v = big ? vf_fnma(vf_load(y + i), dv, g) : g;
        vf_store(dx + i, vf_add(vf_load(dx + i), vf_div(v, den)));
    }
    if (i < n) {
        int t = n - i;
        vf g = vf_mul(s, vf_loadn(G + i, t));
        vf v = big ? vf_fnma(vf_loadn(y + i, t), dv, g) : g;
        vf_storen(dx + i, vf_add(vf_loadn(dx + i, t), vf_div(v, den)), t);
    }
}

// Softmax of one row and its backward, against the vf layer; shared by
// tmpl_softmax.h and tmpl_attention.h.
#ifndef CLEF_TMPL_SOFTMAX_ROW_H
#define CLEF_TMPL_SOFTMAX_ROW_H

// One row of length n: y = softmax(scale · x). scale 1 for plain softmax
// (attention passes 1/√dh).
static void softmax_row(int n, float scale, const float *x, float *y)
{
    vf sc = vf_set1(scale);
    vf mx = vf_set1(-__builtin_inff());
    int i = 0;
    for (; i + VW <= n; i += VW)
        mx = vf_max(mx, vf_mul(vf_load(x + i), sc));
    if (i < n)
        mx = vf_max(mx,
                    vf_mul(vf_loadn_fill(x + i, n - i, -__builtin_inff()), sc));
    float m = vf_hmax(mx);
    if (m == -__builtin_inff() || n == 0) {
        for (i = 0; i < n; i++)
            y[i] = 0.0f;
        return;
    }
    vf mv = vf_set1(m), s0 = vf_zero(), s1 = vf_zero();
    for (i = 0; i + VW <= n; i += VW) {
        vf e = vf_exp(vf_fms(vf_load(x + i), sc, mv));
        vf_store(y + i, e);
        s0 = vf_add(s0, e);
    }
    if (i < n) {
        vf e = vf_exp(
            vf_fms(vf_loadn_fill(x + i, n - i, -__builtin_inff()), sc, mv));
        vf_storen(y + i, e, n - i);
        s1 = vf_add(s1, e);
    }
    // the sum is ≥ 1 (the maximum's term is 1): vf_div_by's fast range
    const vf_divisor sum = vf_divisor_of(vf_hsum(vf_add(s0, s1)));
    for (i = 0; i + VW <= n; i += VW)
        vf_store(y + i, vf_div_by(vf_load(y + i), sum));
    if (i < n)
        vf_storen(y + i, vf_div_by(vf_loadn(y + i, n - i), sum), n - i);
}

// dx (n) += y ⊙ (dy − dot) · scale, dot = Σ dy ⊙ y; `out` may alias dy when
// `acc` is 0 (attention writes dS over dA in place).
static void softmax_bwd_row(int n, float scale, const float *y, const float *dy,
                            float *out, int acc)
{
    vf s = vf_zero();
    int i = 0;
    for (; i + VW <= n; i += VW)
        s = vf_fma(vf_load(dy + i), vf_load(y + i), s);
    if (i < n)
        s = vf_fma(vf_loadn(dy + i, n - i), vf_loadn(y + i, n - i), s);
    vf dot = vf_set1(vf_hsum(s)), sc = vf_set1(scale);
    for (i = 0; i + VW <= n; i += VW) {
        vf g = vf_mul(vf_mul(vf_load(y + i), vf_sub(vf_load(dy + i), dot)), sc);
        vf_store(out + i, acc ? vf_add(vf_load(out + i), g) : g);
    }
    if (i < n) {
        int t = n - i;
        vf g = vf_mul(
            vf_mul(vf_loadn(y + i, t), vf_sub(vf_loadn(dy + i, t), dot)), sc);
        vf_storen(out + i, acc ? vf_add(vf_loadn(out + i, t), g) : g, t);
    }
}

#endif

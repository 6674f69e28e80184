// Vector exp and erf, written once against the vf layer (backends/avx2/vec.h,
// backends/avx512/vec.h). Included by those headers only.
//
// exp: Cody-Waite reduction x = n ln2 + r, |r| ≤ ln2/2, degree-7 Taylor
//      polynomial, 2^n through the exponent field. ≤ 2 ulp on normal results;
//      results below FLT_MIN flush to 0, above FLT_MAX give +Inf, NaN stays NaN.
// erf: |x| < 0.875:      erf(x) = x·P(x²)                   (P degree 6)
//      0.875 ≤ |x|:      erf(|x|) = 1 − e^{−x²}·erfcx(|x|), erfcx by two
//                        polynomials (degree 12 in |x| − 2.4375 below 4,
//                        degree 6 in 1/|x| from 4 to 10.1), x² split exactly
//                        with an FMA so e^{−x²} keeps full relative accuracy;
//      NaN → NaN, ±Inf → ±1.
// Φ:   the same pieces give erfc(|x|/√2) with RELATIVE accuracy in the lower
//      tail (GELU of large negative x), until e^{−x²/2} flushes below FLT_MIN.
// Coefficients: weighted least squares on 4000 Chebyshev nodes against double
// erf/erfc, rounded to float. tests/test_erf.c checks every ISA against
// double erf on a dense sweep of all float magnitudes.
#ifndef CLEF_TMPL_MATH_H
#define CLEF_TMPL_MATH_H

#define CLEF_CAT3_(a, b, c) a##b##c
#define CLEF_CAT3(a, b, c) CLEF_CAT3_(a, b, c)
// CLEF_KNAME(gelu_fwd) -> clef_f32_gelu_fwd__avx512 (or __avx2)
#define CLEF_KNAME(op) CLEF_CAT3(clef_f32_, op, CLEF_CAT3(__, CLEF_ISA_SUFFIX, ))

// CLEF_NARROW(cond, call): in the AVX-512 build, when cond holds (rows of 8
// floats or fewer), run `call` (the AVX2 kernel of the op) and return; in the
// AVX2 build it is nothing.
#ifdef CLEF_ISA_NARROW
#define CLEF_NARROW(cond, call)                                                \
    do {                                                                       \
        if (cond) {                                                            \
            call;                                                              \
            return;                                                            \
        }                                                                      \
    } while (0)
#else
#define CLEF_NARROW(cond, call)                                                \
    do {                                                                       \
    } while (0)
#endif

static inline vf vf_exp(vf x)
{
    const vf hi = vf_set1(88.3762626647949f);  // n stays ≤ 127
    const vf lo = vf_set1(-87.3365447505531f); // n stays ≥ −126
    vf xc = vf_min(hi, vf_max(lo, x)); // NaN propagates (second operand)
    vf n = vf_round(vf_mul(xc, vf_set1(1.44269504088896341f)));
    vf r = vf_fnma(n, vf_set1(0.693359375f), xc);
    r = vf_fnma(n, vf_set1(-2.12194440e-4f), r);
    vf p = vf_set1(1.9841269841e-4f); // 1/7!
    p = vf_fma(p, r, vf_set1(1.3888888889e-3f));
    p = vf_fma(p, r, vf_set1(8.3333333333e-3f));
    p = vf_fma(p, r, vf_set1(4.1666666667e-2f));
    p = vf_fma(p, r, vf_set1(1.6666666667e-1f));
    p = vf_fma(p, r, vf_set1(0.5f));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    vf y = vf_mul(p, vf_pow2i(vf_select(vf_isnan(n), vf_zero(), n)));
    y = vf_select(vf_lt(x, lo), vf_zero(), y);
    y = vf_select(vf_gt(x, vf_set1(88.72283905206835f)), vf_set1(__builtin_inff()), y);
    return vf_select(vf_isnan(x), x, y);
}

// erfcx(a) = e^{a²} erfc(a) for a in [0.875, 10.1]: degree 12 in a − 2.4375
// below 4, degree 6 in 1/a above (relative error a few 1e-8 in double).
static inline vf vf_erfcx_q(vf a)
{
    vf t = vf_sub(a, vf_set1(2.4375f));
    vf q = vf_set1(1.212920466e-07f);
    q = vf_fma(q, t, vf_set1(-5.355154258e-07f));
    q = vf_fma(q, t, vf_set1(1.199950589e-06f));
    q = vf_fma(q, t, vf_set1(-4.280663688e-06f));
    q = vf_fma(q, t, vf_set1(1.858803989e-05f));
    q = vf_fma(q, t, vf_set1(-6.847934856e-05f));
    q = vf_fma(q, t, vf_set1(2.386721026e-04f));
    q = vf_fma(q, t, vf_set1(-8.170705987e-04f));
    q = vf_fma(q, t, vf_set1(2.709090477e-03f));
    q = vf_fma(q, t, vf_set1(-8.648257703e-03f));
    q = vf_fma(q, t, vf_set1(2.649797499e-02f));
    q = vf_fma(q, t, vf_set1(-7.756081223e-02f));
    q = vf_fma(q, t, vf_set1(2.155524790e-01f));
    vf r = vf_div(vf_set1(1.0f), a);
    vf w = vf_set1(-4.015366137e-01f);
    w = vf_fma(w, r, vf_set1(4.556439817e-01f));
    w = vf_fma(w, r, vf_set1(1.393201575e-02f));
    w = vf_fma(w, r, vf_set1(-2.864433229e-01f));
    w = vf_fma(w, r, vf_set1(5.393334432e-04f));
    w = vf_fma(w, r, vf_set1(5.641571879e-01f));
    w = vf_fma(w, r, vf_set1(7.771523087e-07f));
    return vf_select(vf_lt(a, vf_set1(4.0f)), q, w);
}

// erf(x) · x-free polynomial for |x| < 0.875: P(x²) with erf(x) = x·P(x²)
static inline vf vf_erf_p(vf x2)
{
    vf p = vf_set1(8.714060095e-05f);
    p = vf_fma(p, x2, vf_set1(-8.220518357e-04f));
    p = vf_fma(p, x2, vf_set1(5.207621492e-03f));
    p = vf_fma(p, x2, vf_set1(-2.686196938e-02f));
    p = vf_fma(p, x2, vf_set1(1.128374115e-01f));
    p = vf_fma(p, x2, vf_set1(-3.761263788e-01f));
    p = vf_fma(p, x2, vf_set1(1.128379226e+00f));
    return p;
}

// e^{−s·(hi + lo)} ≈ e^{−s·hi}(1 − s·lo), where hi + lo = x² exactly
static inline vf vf_exp_neg_sq(vf x, float s)
{
    vf hi = vf_mul(x, x);
    vf lo = vf_fms(x, x, hi);
    vf e = vf_exp(vf_mul(vf_set1(-s), hi));
    return vf_fnma(e, vf_mul(vf_set1(s), lo), e);
}

static inline vf vf_erf(vf x)
{
    vf ax = vf_abs(x);
    vf sign = vf_xor(x, ax); // the sign bit alone
    vf small = vf_mul(x, vf_erf_p(vf_mul(x, x)));
    vf a = vf_max(vf_set1(0.875f), vf_min(ax, vf_set1(10.1f)));
    vf erfc = vf_mul(vf_exp_neg_sq(a, 1.0f), vf_erfcx_q(a));
    vf large = vf_or(vf_sub(vf_set1(1.0f), erfc), sign);
    vf y = vf_select(vf_lt(ax, vf_set1(0.875f)), small, large);
    return vf_select(vf_isnan(x), x, y);
}

// e^x for x ≤ 0 without the special cases (results below FLT_MIN flush to
// 0; NaN propagates through the arithmetic): the GELU hot path.
static inline vf vf_exp_neg(vf x)
{
    const vf lo = vf_set1(-87.3365447505531f);
    vf xc = vf_max(lo, x);
    vf n = vf_round(vf_mul(xc, vf_set1(1.44269504088896341f)));
    vf r = vf_fnma(n, vf_set1(0.693359375f), xc);
    r = vf_fnma(n, vf_set1(-2.12194440e-4f), r);
    vf p = vf_set1(1.9841269841e-4f);
    p = vf_fma(p, r, vf_set1(1.3888888889e-3f));
    p = vf_fma(p, r, vf_set1(8.3333333333e-3f));
    p = vf_fma(p, r, vf_set1(4.1666666667e-2f));
    p = vf_fma(p, r, vf_set1(1.6666666667e-1f));
    p = vf_fma(p, r, vf_set1(0.5f));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    vf y = vf_mul(p, vf_pow2i(n));
    return vf_select(vf_lt(x, lo), vf_zero(), y);
}

// erfcx(u) for u in [0, 4): degree 16 in u − 2 (one polynomial: no select,
// no division on the hot path).
static inline vf vf_erfcx_0_4(vf u)
{
    vf t = vf_sub(u, vf_set1(2.0f));
    vf q = vf_set1(3.346257715e-09f);
    q = vf_fma(q, t, vf_set1(-1.644465897e-08f));
    q = vf_fma(q, t, vf_set1(1.261427940e-08f));
    q = vf_fma(q, t, vf_set1(-6.542442144e-09f));
    q = vf_fma(q, t, vf_set1(3.641633270e-07f));
    q = vf_fma(q, t, vf_set1(-1.604064664e-06f));
    q = vf_fma(q, t, vf_set1(4.653990800e-06f));
    q = vf_fma(q, t, vf_set1(-1.560990677e-05f));
    q = vf_fma(q, t, vf_set1(5.557759141e-05f));
    q = vf_fma(q, t, vf_set1(-1.855742594e-04f));
    q = vf_fma(q, t, vf_set1(5.926880985e-04f));
    q = vf_fma(q, t, vf_set1(-1.831183909e-03f));
    q = vf_fma(q, t, vf_set1(5.440609995e-03f));
    q = vf_fma(q, t, vf_set1(-1.546076499e-02f));
    q = vf_fma(q, t, vf_set1(4.180277884e-02f));
    q = vf_fma(q, t, vf_set1(-1.067964509e-01f));
    return vf_fma(q, t, vf_set1(2.553956807e-01f));
}

// Φ(x) = erfc(−x/√2)/2 = ½ e^{−x²/2} erfcx(|x|/√2) for x < 0 (1 − that for
// x ≥ 0): one path for every x, relative-accurate in the lower tail (no
// 1 + erf cancellation) until e^{−x²/2} flushes below FLT_MIN (x < −13.2).
// *e2 = e^{−x²/2}, for φ(x) = e2/√(2π). The |x|/√2 ≥ 4 piece (|x| > 5.66)
// is evaluated only when a lane needs it.
static inline void vf_norm_parts(vf x, vf *xc, vf *e2, vf *q)
{
    // Φ(±20) is 1 or 0 in float and e^{−200} flushes: clamping keeps x² finite
    // (no Inf − Inf in the exact split); NaN passes through min/max.
    *xc = vf_min(vf_set1(20.0f), vf_max(vf_set1(-20.0f), x));
    vf u = vf_mul(vf_abs(*xc), vf_set1(0.70710678118654752f)); // |x|/√2
    vf hi = vf_mul(*xc, *xc);
    vf lo = vf_fms(*xc, *xc, hi);
    vf e = vf_exp_neg(vf_mul(vf_set1(-0.5f), hi));
    *e2 = vf_fnma(e, vf_mul(vf_set1(0.5f), lo), e); // e^{−(hi+lo)/2}
    *q = vf_erfcx_0_4(u);
    vm far = vf_le(vf_set1(4.0f), u);
    if (vm_any(far))
        *q = vf_select(far, vf_erfcx_q(vf_min(u, vf_set1(10.1f))), *q);
}

static inline vf vf_norm_cdf(vf x, vf *e2)
{
    vf xc, q;
    vf_norm_parts(x, &xc, e2, &q);
    vf h = vf_mul(vf_mul(vf_set1(0.5f), *e2), q);
    return vf_select(vf_lt(xc, vf_zero()), h, vf_sub(vf_set1(1.0f), h));
}

#endif

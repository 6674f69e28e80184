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
// Φ:   ½ e^{−x²/2} erfcx(|x|/√2) (erfcx: one degree-16 polynomial on [0, 4),
//      16 table-driven pieces on AVX-512), RELATIVE accuracy in the lower
//      tail (GELU of large negative x) until e^{−x²/2} flushes below FLT_MIN.
//      The AVX-512 GELU hot path tabulates Φ and φ directly instead
//      (backends/avx512/gelu_lut.h) and uses this form beyond |x| = 4√2.
// Coefficients: weighted least squares on Chebyshev nodes against double
// erf/erfc, rounded to float: backends/x86/fit_coefficients.py reproduces
// them. tests/test_erf.c checks every ISA against double erf on a dense sweep
// of all float magnitudes, and GELU against the scalar reference.
#ifndef CLEF_TMPL_MATH_H
#define CLEF_TMPL_MATH_H

static inline vf vf_exp(vf x)
{
    const vf hi = vf_set1(88.3762626647949f);  // n stays ≤ 127
    const vf lo = vf_set1(-87.3365447505531f); // n stays ≥ −126
    const vm under = vf_lt(x, lo);             // the result is 0 there
    vf xc = vf_min(hi, vf_max(lo, x)); // NaN propagates (second operand)
    // lanes under lo compute e^0 instead of p·2⁻¹²⁶, a subnormal product
    // (a microcode assist per vector: masked -Inf tails, peaked softmaxes);
    // their result is the same 0
    xc = vf_select(under, vf_zero(), xc);
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
    y = vf_select(under, vf_zero(), y);
    y = vf_select(vf_gt(x, vf_set1(88.72283905206835f)),
                  vf_set1(__builtin_inff()), y);
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
    const vm under = vf_lt(x, lo); // 0 there: e^0 computed (as vf_exp)
    vf xc = vf_select(under, vf_zero(), vf_max(lo, x));
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
    return vf_select(under, vf_zero(), y);
}

#ifdef CLEF_ISA_LOOKUP16
// With a per-lane 16-entry lookup (vec.h: vf_lookup16 and the vi lanes; the
// AVX-512 layer) the hot path is: 16 pieces of width 1/4 on [0, 4), degree 6 each in
// u − centre (weighted least squares per piece, float-evaluated relative
// error 1.0e-7; fit_coefficients.py lut16), coefficients picked per lane
// with vpermps.
static inline vf vf_erfcx_0_4(vf u)
{
    static const float c0[16] = {
        8.732218742e-01f, 6.858572364e-01f, 5.568138957e-01f, 4.643115699e-01f,
        3.956980705e-01f, 3.432959020e-01f, 3.022612035e-01f, 2.694299817e-01f,
        2.426703572e-01f, 2.205056995e-01f, 2.018875480e-01f, 1.860549301e-01f,
        1.724443585e-01f, 1.606310755e-01f, 1.502897292e-01f, 1.411674172e-01f};
    static const float c1[16] = {
        -9.100737572e-01f, -6.139862537e-01f, -4.323618114e-01f,
        -3.158338964e-01f, -2.380584925e-01f, -1.843154728e-01f,
        -1.460302323e-01f, -1.180167198e-01f, -9.703011811e-02f,
        -8.097712696e-02f, -6.846950203e-02f, -5.856329203e-02f,
        -5.060196668e-02f, -4.411945865e-02f, -3.877867758e-02f,
        -3.433166444e-02f};
    static const float c2[16] = {
        7.594625950e-01f, 4.556123912e-01f, 2.865877450e-01f, 1.879569292e-01f,
        1.278822869e-01f, 8.986211568e-02f, 6.496207416e-02f, 4.814862832e-02f,
        3.648136556e-02f, 2.818500996e-02f, 2.215510234e-02f, 1.768546738e-02f,
        1.431320701e-02f, 1.172790024e-02f, 9.717010893e-03f, 8.132222109e-03f};
    static const float c3[16] = {
        -5.434148908e-01f, -2.954160869e-01f, -1.688275337e-01f,
        -1.009134501e-01f, -6.279350817e-02f, -4.050315544e-02f,
        -2.697779983e-02f, -1.849197038e-02f, -1.300477982e-02f,
        -9.358468466e-03f, -6.874897983e-03f, -5.145041272e-03f,
        -3.915459383e-03f, -3.025194164e-03f, -2.369675785e-03f,
        -1.879534684e-03f};
    static const float c4[16] = {
        3.457698822e-01f, 1.724154353e-01f, 9.053476155e-02f, 4.982843995e-02f,
        2.861953899e-02f, 1.708498411e-02f, 1.056147926e-02f, 6.738035474e-03f,
        4.423067905e-03f, 2.979301615e-03f, 2.054232405e-03f, 1.446727780e-03f,
        1.038691844e-03f, 7.589304005e-04f, 5.634650006e-04f, 4.245104792e-04f};
    static const float c5[16] = {
        -2.016043514e-01f, -9.291809797e-02f, -4.515800253e-02f,
        -2.304185182e-02f, -1.229311246e-02f, -6.831171457e-03f,
        -3.939725459e-03f, -2.350430004e-03f, -1.446224283e-03f,
        -9.152636630e-04f, -5.943013821e-04f, -3.950477112e-04f,
        -2.682891791e-04f, -1.858162286e-04f, -1.310346561e-04f,
        -9.394574590e-05f};
    static const float c6[16] = {
        1.072820574e-01f, 4.608531669e-02f, 2.088997513e-02f, 9.952021763e-03f,
        4.963813350e-03f, 2.582683694e-03f, 1.397003885e-03f, 7.830992690e-04f,
        4.535817134e-04f, 2.707349777e-04f, 1.661164570e-04f, 1.045407407e-04f,
        6.734045746e-05f, 4.431793059e-05f, 2.974867130e-05f, 2.033637429e-05f};
    vi j = vi_min(vf_cvtt_i(vf_mul(u, vf_set1(4.0f))), vi_set1(15));
    vf t = vf_sub(u, vf_fma(vi_cvt_f(j), vf_set1(0.25f), vf_set1(0.125f)));
#define LUT(c) vf_lookup16(c, j)
    vf q = LUT(c6);
    q = vf_fma(q, t, LUT(c5));
    q = vf_fma(q, t, LUT(c4));
    q = vf_fma(q, t, LUT(c3));
    q = vf_fma(q, t, LUT(c2));
    q = vf_fma(q, t, LUT(c1));
    return vf_fma(q, t, LUT(c0));
#undef LUT
}

// e^z for z ≤ 0 (flushes to 0 below −87.3, where every GELU use is below
// FLT_MIN): z = k ln2/16 + r, |r| ≤ ln2/32, e^r by degree 3 (error 1e-8),
// 2^{k/16} from a 16-entry table and the exponent field.
static inline vf vf_exp_neg_hot(vf z)
{
    static const float p2[16] = {
        1.0f,        1.04427378f, 1.09050773f, 1.13878863f,
        1.18920712f, 1.24185781f, 1.29683955f, 1.35425555f,
        1.41421356f, 1.47682615f, 1.54221083f, 1.61049033f,
        1.68179283f, 1.75625216f, 1.83400809f, 1.91520656f};
    vi k = vf_cvt_i(vf_mul(z, vf_set1(23.0831206542234f))); // 16/ln2
    vf kf = vi_cvt_f(k);
    vf r =
        vf_fnma(kf, vf_set1(0.043334960937f), z); // ln2/16, high part (exact)
    r = vf_fnma(kf, vf_set1(-1.32621525e-5f), r); // low part
    vf p = vf_fma(vf_set1(1.6666666667e-1f), r, vf_set1(0.5f));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    vf e = vf_mul(p, vf_lookup16(p2, vi_and(k, vi_set1(15))));
    vi sh = vi_slli(vi_srai(k, 4), 23);
    e = vi_bits(vi_add(vf_bits(e), sh));
    return vf_select(vf_lt(z, vf_set1(-87.3f)), vf_zero(), e);
}
#else
static inline vf vf_exp_neg_hot(vf z)
{
    return vf_exp_neg(z);
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
#endif

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
    vf e = vf_exp_neg_hot(vf_mul(vf_set1(-0.5f), hi));
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

// a / b in every lane for one b shared by all of them (a softmax row's sum,
// AdamW's √(1 − β2ᵗ)), bitwise equal to vf_div(a, vf_set1(b)), on the FMA
// units instead of the divider (a zmm vdivps is about four times the cost).
// rb = 1/b rounded to nearest (one scalar division per b). With x = a/b:
//   q0 = RN(a·rb)             within 1.5 ulp of x
//   q1 = RN(q0 + RN(a − b·q0)·rb)  within 1 ulp (the error left is ~2⁻²³ ulp)
//   q2 = RN(q1 + (a − b·q1)·rb)    = RN(x): the remainder is exact in an FMA
//                                  (q1 within 1 ulp, nothing underflows) and
//                                  Markstein's theorem applies (rb within
//                                  ½ ulp of 1/b, q1 within 1 ulp of x).
// Its preconditions hold when b is in [2⁻²⁰, 2²⁰] (fast) and every |a| is 0
// or in [2⁻¹⁰⁰, 2¹⁰⁰]: no quotient or remainder leaves the normal range. Any
// other b, or a vector with any other lane (tiny, huge, Inf, NaN), is divided.
// The sign bit of a is ORed in so that −0 / b gives −0 as the division does.
// tests/test_div_by.c compares it with the division, in bits.
typedef struct vf_divisor {
    vf b, rb;
    int fast;
} vf_divisor;

static inline vf_divisor vf_divisor_of(float b)
{
    const int fast = b >= 0x1p-20f && b <= 0x1p20f;
    return (vf_divisor){vf_set1(b), vf_set1(fast ? 1.0f / b : 1.0f), fast};
}

static inline vf vf_div_by(vf a, vf_divisor d)
{
    if (!d.fast)
        return vf_div(a, d.b);
    vf t = vf_abs(a);
    t = vf_select(vf_le(t, vf_zero()), vf_set1(1.0f), t); // 0 is exact too
    if (!vm_all(vf_le(vf_set1(0x1p-100f), t)) ||
        !vm_all(vf_le(t, vf_set1(0x1p100f))))
        return vf_div(a, d.b);
    vf q = vf_mul(a, d.rb);
    q = vf_fma(vf_fnma(q, d.b, a), d.rb, q);
    q = vf_fma(vf_fnma(q, d.b, a), d.rb, q);
    return vf_or(q, vf_and(a, vf_set1(-0.0f)));
}

#endif

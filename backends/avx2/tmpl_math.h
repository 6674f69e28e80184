// Vector exp and erf, written once against the vf layer (backends/avx2/vec.h,
// backends/avx512/vec.h). Included by those headers only.
//
// exp: Cody-Waite reduction x = n ln2 + r, |r| ≤ ln2/2, degree-7 Taylor
//      polynomial, 2^n through the exponent field. ≤ 2 ulp on normal results;
//      results below FLT_MIN flush to 0, above FLT_MAX give +Inf, NaN stays NaN.
// erf: |x| < 0.875:      erf(x) = x·P(x²)                (P degree 6)
//      0.875 ≤ |x| < 4:  erf(|x|) = 1 − e^{−x²}·Q(|x|)   (Q ≈ erfcx, degree 12
//                        in |x| − 2.4375; x² split exactly with an FMA)
//      |x| ≥ 4:          ±1;  NaN → NaN.
//      Coefficients: weighted least squares on Chebyshev nodes against double
//      erf (scripts in the commit message of this file). tests/test_erf.c
//      checks every ISA against double erf on a dense sweep.
#ifndef CLEF_TMPL_MATH_H
#define CLEF_TMPL_MATH_H

#define CLEF_CAT3_(a, b, c) a##b##c
#define CLEF_CAT3(a, b, c) CLEF_CAT3_(a, b, c)
// CLEF_KNAME(gelu_fwd) -> clef_f32_gelu_fwd__avx512 (or __avx2)
#define CLEF_KNAME(op) CLEF_CAT3(clef_f32_, op, CLEF_CAT3(__, CLEF_ISA_SUFFIX, ))

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

static inline vf vf_erf(vf x)
{
    vf ax = vf_abs(x);
    vf sign = vf_xor(x, ax); // the sign bit alone

    // small: x · P(x²)
    vf x2 = vf_mul(x, x);
    vf p = vf_set1(8.714060095e-05f);
    p = vf_fma(p, x2, vf_set1(-8.220518357e-04f));
    p = vf_fma(p, x2, vf_set1(5.207621492e-03f));
    p = vf_fma(p, x2, vf_set1(-2.686196938e-02f));
    p = vf_fma(p, x2, vf_set1(1.128374115e-01f));
    p = vf_fma(p, x2, vf_set1(-3.761263788e-01f));
    p = vf_fma(p, x2, vf_set1(1.128379226e+00f));
    vf small = vf_mul(x, p);

    // large: 1 − exp(−a²) Q(a), a = min(|x|, 4); −a² = −(hi + lo) exactly
    vf a = vf_min(ax, vf_set1(4.0f));
    vf a2 = vf_mul(a, a);
    vf a2lo = vf_fms(a, a, a2);
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
    vf e = vf_exp(vf_sub(vf_zero(), a2));
    e = vf_fnma(e, a2lo, e); // e^{−a²−lo} ≈ e^{−a²}(1 − lo)
    vf large = vf_or(vf_fnma(e, q, vf_set1(1.0f)), sign);

    vf y = vf_select(vf_lt(ax, vf_set1(0.875f)), small, large);
    return vf_select(vf_isnan(x), x, y);
}

#endif

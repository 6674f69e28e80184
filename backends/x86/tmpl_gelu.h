// Exact-erf GELU, written once against the vf layer (vec.h of each ISA).
//   gelu_fwd:  y (n) = x Φ(x)
//   gelu_bwd:  dx (n) += dy (Φ(x) + x φ(x))
//   erf:       y (n) = erf(x)  (exposed for tests/test_erf.c)
// Memory-bound: one pass, 2 vectors per iteration, masked tail.

// x clamped to ±FLT_MAX for the products, so gelu(−Inf) = −0·… = 0 and
// gelu'(±Inf) = Φ(±Inf) (the limits), not Inf·0 = NaN; NaN stays NaN.
static inline vf gelu_finite(vf x)
{
    return vf_min(vf_set1(3.40282347e+38f),
                  vf_max(vf_set1(-3.40282347e+38f), x));
}

// y = x Φ(x); for x < 0 formed as (x · ½ erfcx) · e^{−x²/2} so that Φ, which
// is subnormal before y is (x ≈ −13), never rounds away y's precision. The
// x < 0 side uses x clamped to −20 (gelu(−Inf) = −0, not −Inf·0); the x ≥ 0
// side uses x itself (gelu(+Inf) = +Inf); NaN stays NaN.
static inline vf gelu_fwd_v_exp(vf x)
{
    vf xc, e2, q;
    vf_norm_parts(x, &xc, &e2, &q);
    vf hq = vf_mul(vf_set1(0.5f), q);
    vf neg = vf_mul(vf_mul(xc, hq), e2);
    vf pos = vf_mul(x, vf_fnma(hq, e2, vf_set1(1.0f)));
    return vf_select(vf_lt(x, vf_zero()), neg, pos);
}

// gelu_fwd_v / gelu_grad_v are always_inline: each kernel calls them in its
// loop and its masked tail, and gcc may then keep them out of line; a call
// per vector (no constant kept in a register, results through the stack) cost
// the AVX-512 gelu_bwd a third of its bandwidth.
#ifdef CLEF_GELU_LUT
// AVX-512: Φ(−|x|) and φ from the 32-piece tables (backends/avx512/gelu_lut.h).
// y = x Φ(x) with x clamped to ±FLT_MAX in the products (gelu(−Inf) = −0,
// gelu'(±Inf) = Φ(±Inf)); +Inf·1 = +Inf; NaN stays NaN.
__attribute__((always_inline)) static inline vf gelu_fwd_v(vf x)
{
    vf tail;
    gelu_tail_pdf_lut(x, &tail, NULL);
    vf cdf = vf_select(vf_lt(x, vf_zero()), tail, vf_sub(vf_set1(1.0f), tail));
    vf y = vf_mul(vf_max(vf_set1(-3.40282347e+38f), x), cdf);
    // x < −12.5: Φ is about to go subnormal while y is not; the exp form
    // orders the product so y keeps its precision (rare lanes)
    vm deep = vf_lt(x, vf_set1(-12.5f));
    if (__builtin_expect(vm_any(deep), 0))
        y = vf_select(deep, gelu_fwd_v_exp(x), y);
    return y;
}

__attribute__((always_inline)) static inline vf gelu_grad_v(vf x)
{
    vf tail, pdf;
    gelu_tail_pdf_lut(x, &tail, &pdf);
    vf cdf = vf_select(vf_lt(x, vf_zero()), tail, vf_sub(vf_set1(1.0f), tail));
    return vf_fma(gelu_finite(x), pdf, cdf);
}
#else
static inline vf gelu_fwd_v(vf x)
{
    return gelu_fwd_v_exp(x);
}

__attribute__((always_inline)) static inline vf gelu_grad_v(vf x)
{
    vf e2;
    vf cdf = vf_norm_cdf(x, &e2);
    vf pdf =
        vf_mul(e2, vf_set1(0.39894228040143267794f)); // φ = e^{−x²/2}/√(2π)
    return vf_fma(gelu_finite(x), pdf, cdf);
}
#endif

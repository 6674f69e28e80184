// NEON vector helpers for the kernels in backends/neon/*.c: 4-lane float32
// vectors (float32x4_t), tails through a small stack buffer (NEON has no
// masked loads), fixed-order horizontal sums, and vector exp, erf and Φ.
//
// exp: Cody-Waite reduction x = n ln2 + r, |r| ≤ ln2/2, degree-7 Taylor
//      polynomial, 2^n applied as two normal powers 2^(n/2)·2^(n−n/2), so
//      results down to the subnormal range stay accurate; x < −104 → 0 (−Inf
//      included), x > 88.7228 → +Inf, NaN → NaN. ≤ 2 ulp on normal results.
// erf / Φ: |u| < 0.875: erf(u) = u·P(u²) (P degree 6); beyond, erfc(|u|) =
//      e^{−u²}·erfcx(|u|) with erfcx a degree-12 polynomial in |u| − 2.4375
//      below 4 and degree 6 in 1/|u| up to 10.1; u² split exactly with an FMA
//      so e^{−u²} keeps full relative accuracy. Φ(x) = erfc(−x/√2)/2 is
//      relative-accurate in the lower tail (no 1 + erf cancellation).
//      Coefficients: weighted least-squares fits against double erf/erfc
//      (the same fits as backends/x86/tmpl_math.h, so every ISA rounds the
//      same polynomials).
#ifndef CLEF_NEON_VEC_H
#define CLEF_NEON_VEC_H
// One-line wrappers of the ISA's intrinsics, kept one per line.
// clang-format off

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>

typedef float32x4_t vf;

static inline vf v_set1(float a) { return vdupq_n_f32(a); }
static inline vf v_zero(void) { return vdupq_n_f32(0.0f); }

// first n (0 < n < 4) floats of p, the other lanes `fill`; never reads p[n..]
static inline vf v_loadn_fill(const float *p, int n, float fill)
{
    float t[4] = {fill, fill, fill, fill};
    for (int i = 0; i < n; i++)
        t[i] = p[i];
    return vld1q_f32(t);
}
static inline vf v_loadn(const float *p, int n) { return v_loadn_fill(p, n, 0.0f); }
// stores the first n (0 < n < 4) lanes of v; never writes p[n..]
static inline void v_storen(float *p, vf v, int n)
{
    float t[4];
    vst1q_f32(t, v);
    for (int i = 0; i < n; i++)
        p[i] = t[i];
}

// Horizontal sum in a fixed order (pairwise: (l0+l1)+(l2+l3)).
static inline float v_hsum(vf v) { return vaddvq_f32(v); }
static inline float v_hmax(vf v) { return vmaxvq_f32(v); }

// Σ a[i]·b[i] over n floats: 4 vector accumulators, combined in a fixed
// order, then the tail. Deterministic for given n.
static inline float v_dot(int n, const float *a, const float *b)
{
    vf s0 = v_zero(), s1 = v_zero(), s2 = v_zero(), s3 = v_zero();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    if (i < n)
        s1 = vfmaq_f32(s1, v_loadn(a + i, n - i), v_loadn(b + i, n - i));
    return v_hsum(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

// Σ a[i] over n floats, same structure as v_dot.
static inline float v_sum(int n, const float *a)
{
    vf s0 = v_zero(), s1 = v_zero(), s2 = v_zero(), s3 = v_zero();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vaddq_f32(s0, vld1q_f32(a + i));
        s1 = vaddq_f32(s1, vld1q_f32(a + i + 4));
        s2 = vaddq_f32(s2, vld1q_f32(a + i + 8));
        s3 = vaddq_f32(s3, vld1q_f32(a + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vaddq_f32(s0, vld1q_f32(a + i));
    if (i < n)
        s1 = vaddq_f32(s1, v_loadn(a + i, n - i));
    return v_hsum(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

// m ? a : b
static inline vf v_select(uint32x4_t m, vf a, vf b) { return vbslq_f32(m, a, b); }
static inline uint32x4_t v_isnan(vf x) { return vmvnq_u32(vceqq_f32(x, x)); }

// 2^n for integral n in [−150, 128] (two normal factors; n/2 rounds down)
static inline vf v_pow2i_mul(vf p, vf n)
{
    int32x4_t ni = vcvtq_s32_f32(n); // NaN converts to 0
    int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
    int32x4_t bias = vdupq_n_s32(127);
    vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    vf s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

static inline vf v_exp(vf x)
{
    vf xc = vminq_f32(vmaxq_f32(x, v_set1(-104.0f)), v_set1(88.8f)); // NaN stays
    vf n = vrndnq_f32(vmulq_f32(xc, v_set1(1.44269504088896341f)));
    vf r = vfmsq_f32(xc, n, v_set1(0.693359375f));   // xc − n·ln2_hi (exact)
    r = vfmsq_f32(r, n, v_set1(-2.12194440e-4f));    // − n·ln2_lo
    vf p = v_set1(1.9841269841e-4f);                 // 1/7!
    p = vfmaq_f32(v_set1(1.3888888889e-3f), p, r);
    p = vfmaq_f32(v_set1(8.3333333333e-3f), p, r);
    p = vfmaq_f32(v_set1(4.1666666667e-2f), p, r);
    p = vfmaq_f32(v_set1(1.6666666667e-1f), p, r);
    p = vfmaq_f32(v_set1(0.5f), p, r);
    p = vfmaq_f32(v_set1(1.0f), p, r);
    p = vfmaq_f32(v_set1(1.0f), p, r);
    vf y = v_pow2i_mul(p, n);
    y = v_select(vcltq_f32(x, v_set1(-104.0f)), v_zero(), y);
    y = v_select(vcgtq_f32(x, v_set1(88.72283905206835f)),
                 v_set1(__builtin_inff()), y);
    return v_select(v_isnan(x), x, y);
}

// erfcx(a) = e^{a²} erfc(a) for a in [0.875, 10.1] (see the top comment)
static inline vf v_erfcx(vf a)
{
    vf t = vsubq_f32(a, v_set1(2.4375f));
    vf q = v_set1(1.212920466e-07f);
    q = vfmaq_f32(v_set1(-5.355154258e-07f), q, t);
    q = vfmaq_f32(v_set1(1.199950589e-06f), q, t);
    q = vfmaq_f32(v_set1(-4.280663688e-06f), q, t);
    q = vfmaq_f32(v_set1(1.858803989e-05f), q, t);
    q = vfmaq_f32(v_set1(-6.847934856e-05f), q, t);
    q = vfmaq_f32(v_set1(2.386721026e-04f), q, t);
    q = vfmaq_f32(v_set1(-8.170705987e-04f), q, t);
    q = vfmaq_f32(v_set1(2.709090477e-03f), q, t);
    q = vfmaq_f32(v_set1(-8.648257703e-03f), q, t);
    q = vfmaq_f32(v_set1(2.649797499e-02f), q, t);
    q = vfmaq_f32(v_set1(-7.756081223e-02f), q, t);
    q = vfmaq_f32(v_set1(2.155524790e-01f), q, t);
    vf r = vdivq_f32(v_set1(1.0f), a);
    vf w = v_set1(-4.015366137e-01f);
    w = vfmaq_f32(v_set1(4.556439817e-01f), w, r);
    w = vfmaq_f32(v_set1(1.393201575e-02f), w, r);
    w = vfmaq_f32(v_set1(-2.864433229e-01f), w, r);
    w = vfmaq_f32(v_set1(5.393334432e-04f), w, r);
    w = vfmaq_f32(v_set1(5.641571879e-01f), w, r);
    w = vfmaq_f32(v_set1(7.771523087e-07f), w, r);
    return v_select(vcltq_f32(a, v_set1(4.0f)), q, w);
}

// P(u²) with erf(u) = u·P(u²) for |u| < 0.875
static inline vf v_erf_p(vf u2)
{
    vf p = v_set1(8.714060095e-05f);
    p = vfmaq_f32(v_set1(-8.220518357e-04f), p, u2);
    p = vfmaq_f32(v_set1(5.207621492e-03f), p, u2);
    p = vfmaq_f32(v_set1(-2.686196938e-02f), p, u2);
    p = vfmaq_f32(v_set1(1.128374115e-01f), p, u2);
    p = vfmaq_f32(v_set1(-3.761263788e-01f), p, u2);
    p = vfmaq_f32(v_set1(1.128379226e+00f), p, u2);
    return p;
}

// e^{−s·x²} with x² = hi + lo exactly: e^{−s·hi}·(1 − s·lo)
static inline vf v_exp_neg_sq(vf x, float s)
{
    vf hi = vmulq_f32(x, x);
    vf lo = vfmaq_f32(vnegq_f32(hi), x, x); // x·x − hi, exact with FMA
    vf e = v_exp(vmulq_f32(v_set1(-s), hi));
    return vfmsq_f32(e, e, vmulq_f32(v_set1(s), lo));
}

static inline vf v_erf(vf x)
{
    vf ax = vabsq_f32(x);
    vf small = vmulq_f32(x, v_erf_p(vmulq_f32(x, x)));
    vf a = vmaxq_f32(v_set1(0.875f), vminq_f32(ax, v_set1(10.1f)));
    vf erfc = vmulq_f32(v_exp_neg_sq(a, 1.0f), v_erfcx(a));
    vf large = vsubq_f32(v_set1(1.0f), erfc);
    large = vreinterpretq_f32_u32(
        vorrq_u32(vreinterpretq_u32_f32(large),
                  vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))));
    vf y = v_select(vcltq_f32(ax, v_set1(0.875f)), small, large);
    return v_select(v_isnan(x), x, y);
}

// Φ(x) = erfc(−x/√2)/2; *e2 = e^{−x²/2} (for φ(x) = e2/√(2π)).
static inline vf v_norm_cdf(vf x, vf *e2)
{
    const vf rsqrt2 = v_set1(0.70710678118654752f);
    const vf half = v_set1(0.5f);
    vf u = vmulq_f32(vabsq_f32(x), rsqrt2); // |x|/√2
    // |x|/√2 < 0.875: Φ = ½ + ½ erf(x/√2)
    vf xs = vmulq_f32(x, rsqrt2);
    vf inner = vfmaq_f32(half, half, vmulq_f32(xs, v_erf_p(vmulq_f32(xs, xs))));
    // tail: erfc(u) = e^{−x²/2} erfcx(u)
    *e2 = v_exp_neg_sq(x, 0.5f);
    vf uc = vmaxq_f32(v_set1(0.875f), vminq_f32(u, v_set1(10.1f)));
    vf halferfc = vmulq_f32(vmulq_f32(half, *e2), v_erfcx(uc));
    vf tail = v_select(vcltq_f32(x, v_zero()), halferfc,
                       vsubq_f32(v_set1(1.0f), halferfc));
    vf y = v_select(vcltq_f32(u, v_set1(0.875f)), inner, tail);
    return v_select(v_isnan(x), x, y);
}

// clang-format on
#endif

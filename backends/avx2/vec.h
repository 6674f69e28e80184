// AVX2 + FMA vector layer for the op templates in backends/x86/tmpl_*.h.
//
// The op families other than GEMM are written once, against this small
// vocabulary (vf = one vector of VW floats, vm = a lane mask), and compiled
// twice: here with 8-lane ymm and in backends/avx512/vec.h with 16-lane zmm.
// Only files built with -mavx2 -mfma include this header.
#ifndef CLEF_AVX2_VEC_H
#define CLEF_AVX2_VEC_H
// One-line wrappers of the ISA's intrinsics, kept one per line.
// clang-format off

#include <immintrin.h>
#include <stddef.h>

#include "backends/x86/ymm.h"

#define VW 8

typedef __m256 vf;
typedef __m256 vm; // all-ones / all-zeros lanes

static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm256_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
// Partial vectors (n < VW lanes) from 128/64/32-bit pieces (v4_loadn,
// v4_storen in backends/x86/ymm.h): AMD executes VMASKMOVPS stores slowly.
// Never touches p[n..].
// first n (< VW) lanes from p, the rest zero
static inline vf vf_loadn(const float *p, int n)
{
    if (n >= 4)
        return _mm256_set_m128(v4_loadn(p + 4, n - 4), _mm_loadu_ps(p));
    return _mm256_set_m128(_mm_setzero_ps(), v4_loadn(p, n));
}
static inline vf vf_loadn_fill(const float *p, int n, float fill)
{
    __m256i m = v8_first_i(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), vf_loadn(p, n),
                            _mm256_castsi256_ps(m));
}
static inline void vf_storen(float *p, vf v, int n)
{
    __m128 lo = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, lo);
        v4_storen(p + 4, _mm256_extractf128_ps(v, 1), n - 4);
    } else {
        v4_storen(p, lo, n);
    }
}

// lanes ≥ n (n < VW) set to zero
static inline vf vf_keepn(vf v, int n)
{
    return _mm256_and_ps(v, _mm256_castsi256_ps(v8_first_i(n)));
}

static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vf_fms(vf a, vf b, vf c) { return _mm256_fmsub_ps(a, b, c); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_abs(vf a)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a);
}
static inline vf vf_and(vf a, vf b) { return _mm256_and_ps(a, b); }
static inline vf vf_or(vf a, vf b) { return _mm256_or_ps(a, b); }
static inline vf vf_xor(vf a, vf b) { return _mm256_xor_ps(a, b); }
static inline vf vf_round(vf a)
{
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static inline vm vf_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vm vf_le(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vm vf_isnan(vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
static inline int vm_any(vm m) { return _mm256_movemask_ps(m) != 0; }
static inline int vm_all(vm m) { return _mm256_movemask_ps(m) == 0xff; }
static inline vf vf_select(vm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }

static inline vf vf_pow2i(vf n)
{
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

static inline float vf_hsum(vf v)
{
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
static inline float vf_hmax(vf v)
{
    __m128 q = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_max_ps(q, _mm_movehl_ps(q, q));
    q = _mm_max_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

// ---- what the templates need beyond the vf vocabulary ----

// 8-float pieces (attention's key blocks, GEMM packing) with n < 8 lanes:
// here one vf is 8 floats, so they are vf_loadn / vf_storen.
X86_INLINE v8f v8_loadn(const float *p, int n) { return vf_loadn(p, n); }
X86_INLINE void v8_storen(float *p, v8f v, int n) { vf_storen(p, v, n); }
// the first n (< 8) lanes of v to p, m = v8_first_i(n) (computed once by the
// caller, for a loop of such stores): VMASKMOVPS
static inline void v8_storen_mask(float *p, v8i m, int n, v8f v)
{
    (void)n;
    _mm256_maskstore_ps(p, m, v);
}

// The four lane sums of a0..a3, in a fixed order.
static inline v4f vf_hsum4(vf a0, vf a1, vf a2, vf a3) { return v8_hsum4(a0, a1, a2, a3); }

// Key blocks of the small attention path: VW keys × 8 columns, in registers.
// T (8 rows ld ldt, VW floats each) = Xᵀ for X (VW rows ld ldx, 8 floats each)
static inline void vf_tile_in(const float *X, size_t ldx, float *T, size_t ldt)
{
    __m256 r[8] = {
        _mm256_loadu_ps(X),           _mm256_loadu_ps(X + ldx),
        _mm256_loadu_ps(X + 2 * ldx), _mm256_loadu_ps(X + 3 * ldx),
        _mm256_loadu_ps(X + 4 * ldx), _mm256_loadu_ps(X + 5 * ldx),
        _mm256_loadu_ps(X + 6 * ldx), _mm256_loadu_ps(X + 7 * ldx)};
    transpose8(r);
    _mm256_storeu_ps(T, r[0]), _mm256_storeu_ps(T + ldt, r[1]);
    _mm256_storeu_ps(T + 2 * ldt, r[2]), _mm256_storeu_ps(T + 3 * ldt, r[3]);
    _mm256_storeu_ps(T + 4 * ldt, r[4]), _mm256_storeu_ps(T + 5 * ldt, r[5]);
    _mm256_storeu_ps(T + 6 * ldt, r[6]), _mm256_storeu_ps(T + 7 * ldt, r[7]);
}
// E (VW, 8) = Tᵀ for T (8 rows ld ldt, VW floats each)
static inline void vf_tile_out(const float *T, size_t ldt, float *E) { vf_tile_in(T, ldt, E, 8); }
// P (VW rows ld ldp, 8 columns) += Tᵀ for T (8 rows ld ldt, VW floats each)
static inline void vf_tile_add(const float *T, size_t ldt, float *P, size_t ldp)
{
    __m256 r[8] = {
        _mm256_loadu_ps(T),           _mm256_loadu_ps(T + ldt),
        _mm256_loadu_ps(T + 2 * ldt), _mm256_loadu_ps(T + 3 * ldt),
        _mm256_loadu_ps(T + 4 * ldt), _mm256_loadu_ps(T + 5 * ldt),
        _mm256_loadu_ps(T + 6 * ldt), _mm256_loadu_ps(T + 7 * ldt)};
    transpose8(r);
#define VF_ADDROW(k)                                                           \
    _mm256_storeu_ps(P + (k) * ldp, _mm256_add_ps(_mm256_loadu_ps(P + (k) * ldp), r[k]))
    VF_ADDROW(0), VF_ADDROW(1), VF_ADDROW(2), VF_ADDROW(3);
    VF_ADDROW(4), VF_ADDROW(5), VF_ADDROW(6), VF_ADDROW(7);
#undef VF_ADDROW
}

// exp(x) for x ≤ 0 (attention's max-subtracted scores): the templates clamp
// x at VF_EXP_LE0_MIN, run vf_exp's reduction and polynomial p, and finish
// with vf_exp_le0_scale(p, n, x) = p · 2^n, 0 where x (unclamped) is below
// the clamp. Here 2^n goes through the exponent field, n ≥ −126.
#define VF_EXP_LE0_MIN -87.3365447505531f
X86_INLINE vf vf_exp_le0_scale(vf p, vf n, vf x)
{
    return vf_select(vf_lt(x, vf_set1(VF_EXP_LE0_MIN)), vf_zero(), vf_mul(p, vf_pow2i(n)));
}

#include "backends/x86/tmpl_math.h"

// clang-format on
#endif

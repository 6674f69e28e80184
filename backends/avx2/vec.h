// AVX2 + FMA vector layer for the op templates in backends/x86/tmpl_*.h.
//
// The op families other than GEMM are written once, against this small
// vocabulary (vf = one vector of VW floats, vm = a lane mask), and compiled
// twice: here with 8-lane ymm and in backends/avx512/vec.h with 16-lane zmm.
// Only files built with -mavx2 -mfma include this header.
#ifndef CLEF_AVX2_VEC_H
#define CLEF_AVX2_VEC_H

#include <immintrin.h>
#include <stddef.h>

#include "backends/x86/lo64.h"

#define CLEF_ISA_SUFFIX avx2
#define VW 8

typedef __m256 vf;
typedef __m256 vm; // all-ones / all-zeros lanes

static inline __m256i vm_first_i(int n) // n < 8
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm256_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
// Partial vectors (n < VW lanes) from 128/64/32-bit pieces: AMD executes
// VMASKMOVPS stores slowly, and the tails of the tiny head's rows are hot.
// Never touches p[n..].
static inline __m128 v4_loadn(const float *p, int n) // n ≤ 4
{
    switch (n) {
    case 4:
        return _mm_loadu_ps(p);
    case 3:
        return _mm_movelh_ps(clef_load2f(p), _mm_load_ss(p + 2));
    case 2:
        return clef_load2f(p);
    case 1:
        return _mm_load_ss(p);
    default:
        return _mm_setzero_ps();
    }
}
static inline void v4_storen(float *p, __m128 x, int n) // n ≤ 4
{
    switch (n) {
    case 4:
        _mm_storeu_ps(p, x);
        break;
    case 3:
        clef_store2f(p, x);
        _mm_store_ss(p + 2, _mm_movehl_ps(x, x));
        break;
    case 2:
        clef_store2f(p, x);
        break;
    case 1:
        _mm_store_ss(p, x);
        break;
    default:
        break;
    }
}
// first n (< VW) lanes from p, the rest zero
static inline vf vf_loadn(const float *p, int n)
{
    if (n >= 4)
        return _mm256_set_m128(v4_loadn(p + 4, n - 4), _mm_loadu_ps(p));
    return _mm256_set_m128(_mm_setzero_ps(), v4_loadn(p, n));
}
static inline vf vf_loadn_fill(const float *p, int n, float fill)
{
    __m256i m = vm_first_i(n);
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
    return _mm256_and_ps(v, _mm256_castsi256_ps(vm_first_i(n)));
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

#include "backends/x86/tmpl_math.h"

#endif

// AVX-512 vector layer for the op templates in backends/x86/tmpl_*.h.
//
// The op families other than GEMM are written once, against this small
// vocabulary (vf = one vector of VW floats, vm = a lane mask), and compiled
// twice: here with 16-lane zmm and in backends/avx2/vec.h with 8-lane ymm.
// Only files built with -mavx512f/bw/dq/vl include this header.
#ifndef CLEF_AVX512_VEC_H
#define CLEF_AVX512_VEC_H

#include <immintrin.h>
#include <stddef.h>

#define CLEF_ISA_SUFFIX avx512
#define VW 16

// Rows of 8 floats or fewer (the tiny head's width) run faster in ymm: the
// AVX-512 kernels hand them to the AVX2 kernel of the same op (every AVX-512
// CPU has AVX2 and FMA; see CLEF_NARROW in tmpl_math.h).
#define CLEF_ISA_NARROW 1
#include "../avx2/avx2.h"

typedef __m512 vf;
typedef __mmask16 vm;

static inline vm vm_first(int n) { return (vm)((1u << n) - 1u); } // n < 16
static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm512_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
// Partial vectors (n < VW lanes). Tails of 8 or fewer lanes use 256-bit
// operations: a 512-bit masked store whose 64-byte footprint overlaps the next
// row's load defeats store forwarding (10x slower rows of 8 on Zen 4).
static inline __mmask8 vm8_first(int n) { return (__mmask8)((1u << n) - 1u); } // n ≤ 8
// first n lanes from p, the rest zero; never touches p[n..]
static inline vf vf_loadn(const float *p, int n)
{
    if (n == 8)
        return _mm512_zextps256_ps512(_mm256_loadu_ps(p));
    if (n < 8)
        return _mm512_zextps256_ps512(_mm256_maskz_loadu_ps(vm8_first(n), p));
    return _mm512_maskz_loadu_ps(vm_first(n), p);
}
// first n lanes from p, the rest `fill`
static inline vf vf_loadn_fill(const float *p, int n, float fill)
{
    return _mm512_mask_blend_ps(vm_first(n), _mm512_set1_ps(fill), vf_loadn(p, n));
}
static inline void vf_storen(float *p, vf v, int n)
{
    if (n == 8)
        _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
    else if (n < 8)
        _mm256_mask_storeu_ps(p, vm8_first(n), _mm512_castps512_ps256(v));
    else
        _mm512_mask_storeu_ps(p, vm_first(n), v);
}

// lanes ≥ n (n < VW) set to zero
static inline vf vf_keepn(vf v, int n) { return _mm512_maskz_mov_ps(vm_first(n), v); }

static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_sqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }   // a·b + c
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); } // c − a·b
static inline vf vf_fms(vf a, vf b, vf c) { return _mm512_fmsub_ps(a, b, c); }   // a·b − c
// min/max return b when either is NaN (x86 rule)
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_abs(vf a) { return _mm512_abs_ps(a); }
static inline vf vf_and(vf a, vf b) { return _mm512_and_ps(a, b); }
static inline vf vf_or(vf a, vf b) { return _mm512_or_ps(a, b); }
static inline vf vf_xor(vf a, vf b) { return _mm512_xor_ps(a, b); }
static inline vf vf_round(vf a)
{
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static inline vm vf_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vm vf_le(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vm vf_isnan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
static inline int vm_any(vm m) { return m != 0; }
// m ? a : b
static inline vf vf_select(vm m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }

// 2^n for integral n in [-126, 127] held as floats
static inline vf vf_pow2i(vf n)
{
    __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}

// Horizontal sums in a fixed order (tree over lanes): deterministic.
static inline float vf_hsum(vf v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
static inline float vf_hmax(vf v) { return _mm512_reduce_max_ps(v); }

// Per-lane lookup in a 16-entry table (one vpermps): lets tmpl_math.h use
// piecewise polynomials and a table-driven exp on the GELU hot path.
#define CLEF_ISA_LOOKUP16 1

#include "backends/x86/tmpl_math.h"

#endif

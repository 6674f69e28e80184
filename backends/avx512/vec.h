// AVX-512 vector layer for the op templates in backends/x86/tmpl_*.h.
//
// The op families other than GEMM are written once, against this small
// vocabulary (vf = one vector of VW floats, vm = a lane mask), and compiled
// twice: here with 16-lane zmm and in backends/avx2/vec.h with 8-lane ymm.
// Only files built with -mavx512f/bw/dq/vl include this header.
#ifndef CLEF_AVX512_VEC_H
#define CLEF_AVX512_VEC_H
// One-line wrappers of the ISA's intrinsics, kept one per line.
// clang-format off

#include <immintrin.h>
#include <stddef.h>

#include "backends/x86/ymm.h"

#define VW 16

// Rows of 8 floats or fewer (the tiny head's width) run faster in ymm: the
// AVX-512 kernels hand them to the AVX2 kernel of the same op (every AVX-512
// CPU has AVX2 and FMA). CLEF_NARROW(cond, call), at the top of a kernel:
// when cond holds, run `call` (the AVX2 kernel) and return.
#include "backends/avx2/avx2.h"
#define CLEF_NARROW(cond, call)                                                \
    do {                                                                       \
        if (cond) {                                                            \
            call;                                                              \
            return;                                                            \
        }                                                                      \
    } while (0)

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
static inline int vm_all(vm m) { return m == 0xffff; }
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
// piecewise polynomials and a table-driven exp on the GELU hot path, on
// these 32-bit integer lanes (vi):
#define CLEF_ISA_LOOKUP16 1
typedef __m512i vi;
X86_INLINE vi vi_set1(int a) { return _mm512_set1_epi32(a); }
X86_INLINE vi vi_min(vi a, vi b) { return _mm512_min_epi32(a, b); }
X86_INLINE vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
X86_INLINE vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
X86_INLINE vi vi_slli(vi a, unsigned s) { return _mm512_slli_epi32(a, s); }
X86_INLINE vi vi_srai(vi a, unsigned s) { return _mm512_srai_epi32(a, s); }
X86_INLINE vi vf_cvt_i(vf a) { return _mm512_cvtps_epi32(a); }   // rounded (MXCSR: to nearest)
X86_INLINE vi vf_cvtt_i(vf a) { return _mm512_cvttps_epi32(a); } // truncated
X86_INLINE vf vi_cvt_f(vi a) { return _mm512_cvtepi32_ps(a); }
X86_INLINE vi vf_bits(vf a) { return _mm512_castps_si512(a); }
X86_INLINE vf vi_bits(vi a) { return _mm512_castsi512_ps(a); }
// t[j] per lane (j in 0..15)
X86_INLINE vf vf_lookup16(const float *t, vi j) { return _mm512_permutexvar_ps(j, _mm512_loadu_ps(t)); }

// ---- what the templates need beyond the vf vocabulary ----

// 8-float pieces (attention's key blocks, GEMM packing) with n < 8 lanes:
// k-masked ymm loads and stores.
X86_INLINE v8f v8_loadn(const float *p, int n)
{
    return _mm256_maskz_loadu_ps((__mmask8)((1u << n) - 1u), p);
}
X86_INLINE void v8_storen(float *p, v8f v, int n)
{
    _mm256_mask_storeu_ps(p, (__mmask8)((1u << n) - 1u), v);
}
// the first n (< 8) lanes of v to p (m = v8_first_i(n) is for AVX2): a
// k-masked store; AVX2's vmaskmovps store is microcoded on AMD cores and took
// most of the GEMM packing's time for the 14-row A panels (6 of 14 rows
// masked).
static inline void v8_storen_mask(float *p, v8i m, int n, v8f v)
{
    (void)m;
    _mm256_mask_storeu_ps(p, (__mmask8)((1u << n) - 1), v);
}

// The four lane sums of a0..a3, in a fixed order: each folded to 8 lanes,
// then as on AVX2.
X86_INLINE __m256 vf_fold8(vf a)
{
    return _mm256_add_ps(_mm512_castps512_ps256(a),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}
static inline v4f vf_hsum4(vf a0, vf a1, vf a2, vf a3)
{
    __m256 b0 = vf_fold8(a0), b1 = vf_fold8(a1), b2 = vf_fold8(a2), b3 = vf_fold8(a3);
    return v8_hsum4(b0, b1, b2, b3);
}

// Key blocks of the small attention path: VW = 16 keys × 8 columns, as two
// 8x8 transposes side by side: z[k] holds row k of two 8x8 blocks (one per
// 256-bit half); afterwards z[c] holds their columns c. Same network as
// transpose8, with one two-source permute for the 128-bit lane step.
static inline void vf_transpose8x2(__m512 z[8])
{
    __m512 t0 = _mm512_unpacklo_ps(z[0], z[1]), t1 = _mm512_unpackhi_ps(z[0], z[1]);
    __m512 t2 = _mm512_unpacklo_ps(z[2], z[3]), t3 = _mm512_unpackhi_ps(z[2], z[3]);
    __m512 t4 = _mm512_unpacklo_ps(z[4], z[5]), t5 = _mm512_unpackhi_ps(z[4], z[5]);
    __m512 t6 = _mm512_unpacklo_ps(z[6], z[7]), t7 = _mm512_unpackhi_ps(z[6], z[7]);
    __m512 s0 = _mm512_shuffle_ps(t0, t2, 0x44), s1 = _mm512_shuffle_ps(t0, t2, 0xEE);
    __m512 s2 = _mm512_shuffle_ps(t1, t3, 0x44), s3 = _mm512_shuffle_ps(t1, t3, 0xEE);
    __m512 s4 = _mm512_shuffle_ps(t4, t6, 0x44), s5 = _mm512_shuffle_ps(t4, t6, 0xEE);
    __m512 s6 = _mm512_shuffle_ps(t5, t7, 0x44), s7 = _mm512_shuffle_ps(t5, t7, 0xEE);
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    const __m512i hi = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    z[0] = _mm512_permutex2var_ps(s0, lo, s4), z[4] = _mm512_permutex2var_ps(s0, hi, s4);
    z[1] = _mm512_permutex2var_ps(s1, lo, s5), z[5] = _mm512_permutex2var_ps(s1, hi, s5);
    z[2] = _mm512_permutex2var_ps(s2, lo, s6), z[6] = _mm512_permutex2var_ps(s2, hi, s6);
    z[3] = _mm512_permutex2var_ps(s3, lo, s7), z[7] = _mm512_permutex2var_ps(s3, hi, s7);
}

// T (8 rows ld ldt, 16 floats each) = Xᵀ for X (16 rows ld ldx, 8 floats each)
static inline void vf_tile_in(const float *X, size_t ldx, float *T, size_t ldt)
{
    __m512 z[8];
#define VF_LD2(k)                                                              \
    z[k] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(X + (k) * ldx)), \
                              _mm256_loadu_ps(X + (k + 8) * ldx), 1)
    VF_LD2(0), VF_LD2(1), VF_LD2(2), VF_LD2(3);
    VF_LD2(4), VF_LD2(5), VF_LD2(6), VF_LD2(7);
#undef VF_LD2
    vf_transpose8x2(z);
    _mm512_storeu_ps(T, z[0]), _mm512_storeu_ps(T + ldt, z[1]);
    _mm512_storeu_ps(T + 2 * ldt, z[2]), _mm512_storeu_ps(T + 3 * ldt, z[3]);
    _mm512_storeu_ps(T + 4 * ldt, z[4]), _mm512_storeu_ps(T + 5 * ldt, z[5]);
    _mm512_storeu_ps(T + 6 * ldt, z[6]), _mm512_storeu_ps(T + 7 * ldt, z[7]);
}

// E (16, 8) = Tᵀ for T (8 rows ld ldt, 16 floats each)
static inline void vf_tile_out(const float *T, size_t ldt, float *E)
{
    __m512 z[8] = {
        _mm512_loadu_ps(T),           _mm512_loadu_ps(T + ldt),
        _mm512_loadu_ps(T + 2 * ldt), _mm512_loadu_ps(T + 3 * ldt),
        _mm512_loadu_ps(T + 4 * ldt), _mm512_loadu_ps(T + 5 * ldt),
        _mm512_loadu_ps(T + 6 * ldt), _mm512_loadu_ps(T + 7 * ldt)};
    vf_transpose8x2(z);
#define VF_ST2(k)                                                              \
    _mm256_storeu_ps(E + 8 * (k), _mm512_castps512_ps256(z[k])),               \
        _mm256_storeu_ps(E + 8 * ((k) + 8), _mm512_extractf32x8_ps(z[k], 1))
    VF_ST2(0), VF_ST2(1), VF_ST2(2), VF_ST2(3);
    VF_ST2(4), VF_ST2(5), VF_ST2(6), VF_ST2(7);
#undef VF_ST2
}

// P (16 rows ld ldp, 8 columns) += Tᵀ for T (8 rows ld ldt, 16 floats each)
static inline void vf_tile_add(const float *T, size_t ldt, float *P, size_t ldp)
{
    __m512 z[8] = {
        _mm512_loadu_ps(T),           _mm512_loadu_ps(T + ldt),
        _mm512_loadu_ps(T + 2 * ldt), _mm512_loadu_ps(T + 3 * ldt),
        _mm512_loadu_ps(T + 4 * ldt), _mm512_loadu_ps(T + 5 * ldt),
        _mm512_loadu_ps(T + 6 * ldt), _mm512_loadu_ps(T + 7 * ldt)};
    vf_transpose8x2(z);
#define VF_ADD2(k)                                                             \
    _mm256_storeu_ps(P + (k) * ldp, _mm256_add_ps(_mm256_loadu_ps(P + (k) * ldp),     \
                                                  _mm512_castps512_ps256(z[k])));      \
    _mm256_storeu_ps(P + (k + 8) * ldp,                                                \
                     _mm256_add_ps(_mm256_loadu_ps(P + (k + 8) * ldp),                 \
                                   _mm512_extractf32x8_ps(z[k], 1)))
    VF_ADD2(0), VF_ADD2(1), VF_ADD2(2), VF_ADD2(3);
    VF_ADD2(4), VF_ADD2(5), VF_ADD2(6), VF_ADD2(7);
#undef VF_ADD2
}

// exp(x) for x ≤ 0 (attention's max-subtracted scores): the templates clamp
// x at VF_EXP_LE0_MIN, run vf_exp's reduction and polynomial p, and finish
// with vf_exp_le0_scale(p, n, x) = p · 2^n. Here VSCALEFPS applies 2^n and
// flushes to 0 below −104 (where the float result is 0 anyway): −inf → 0,
// NaN propagates, x itself is not needed.
#define VF_EXP_LE0_MIN -104.0f
X86_INLINE vf vf_exp_le0_scale(vf p, vf n, vf x)
{
    (void)x;
    return _mm512_scalef_ps(p, n);
}

#include "backends/x86/tmpl_math.h"

// clang-format on
#endif

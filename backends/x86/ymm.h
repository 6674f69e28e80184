// The 4- and 8-float vectors (xmm, ymm) both x86 ISAs share: every AVX-512
// CPU clef runs on has AVX2 and FMA, so these compile to the same
// instructions in backends/avx2 and backends/avx512. The op templates
// (backends/x86/tmpl_*.h) use them for their fixed 4- and 8-wide pieces (8x8
// transposes, 4-lane sums, the small GEMM paths); the ISA's own width is the
// vf layer of its vec.h, which includes this header.
#ifndef CLEF_X86_YMM_H
#define CLEF_X86_YMM_H
// One-line wrappers of the ISA's intrinsics, kept one per line.
// clang-format off

#include <immintrin.h>

#include "backends/x86/lo64.h"

// The wrappers of single intrinsics are always_inline, as the intrinsics
// themselves are: inlined at the same point of the compilation, they leave
// the generated code exactly that of the intrinsics written out.
#define X86_INLINE static inline __attribute__((always_inline))

typedef __m128 v4f;
typedef __m256 v8f;
typedef __m256i v8i;

// ---- 4 floats (xmm) ----
X86_INLINE v4f v4_zero(void) { return _mm_setzero_ps(); }
X86_INLINE v4f v4_set1(float a) { return _mm_set1_ps(a); }
X86_INLINE v4f v4_load(const float *p) { return _mm_loadu_ps(p); }
X86_INLINE void v4_store(float *p, v4f v) { _mm_storeu_ps(p, v); }
// {p[0], 0, 0, 0} and lane 0 to p[0]
X86_INLINE v4f v4_load1(const float *p) { return _mm_load_ss(p); }
X86_INLINE void v4_store1(float *p, v4f v) { _mm_store_ss(p, v); }
// {p[0], p[1], 0, 0} and lanes 0, 1 to p (lo64.h: 8 bytes, float-aligned)
X86_INLINE v4f v4_load2(const float *p) { return clef_load2f(p); }
X86_INLINE void v4_store2(float *p, v4f v) { clef_store2f(p, v); }
// {a0, a1, b0, b1} and {b2, b3, a2, a3}
X86_INLINE v4f v4_movelh(v4f a, v4f b) { return _mm_movelh_ps(a, b); }
X86_INLINE v4f v4_movehl(v4f a, v4f b) { return _mm_movehl_ps(a, b); }
X86_INLINE v4f v4_add(v4f a, v4f b) { return _mm_add_ps(a, b); }
X86_INLINE v4f v4_mul(v4f a, v4f b) { return _mm_mul_ps(a, b); }
X86_INLINE v4f v4_fma(v4f a, v4f b, v4f c) { return _mm_fmadd_ps(a, b, c); }
// 4x4 transpose of rows r0..r3 in place
#define V4_TRANSPOSE(r0, r1, r2, r3) _MM_TRANSPOSE4_PS(r0, r1, r2, r3)

// Partial vectors (n < 4 lanes) from 64/32-bit pieces: AMD executes
// VMASKMOVPS stores slowly, and the tails of the tiny head's rows are hot.
// Never touches p[n..].
static inline v4f v4_loadn(const float *p, int n) // n ≤ 4
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
static inline void v4_storen(float *p, v4f x, int n) // n ≤ 4
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

// ---- 8 floats (ymm) ----
X86_INLINE v8f v8_zero(void) { return _mm256_setzero_ps(); }
X86_INLINE v8f v8_set1(float a) { return _mm256_set1_ps(a); }
X86_INLINE v8f v8_load(const float *p) { return _mm256_loadu_ps(p); }
X86_INLINE void v8_store(float *p, v8f v) { _mm256_storeu_ps(p, v); }
// p 32-byte aligned
X86_INLINE v8f v8_load_a(const float *p) { return _mm256_load_ps(p); }
X86_INLINE void v8_store_a(float *p, v8f v) { _mm256_store_ps(p, v); }
// {lo, hi}: hi first, as _mm256_set_m128
X86_INLINE v8f v8_hilo(v4f hi, v4f lo) { return _mm256_set_m128(hi, lo); }
X86_INLINE v8f v8_add(v8f a, v8f b) { return _mm256_add_ps(a, b); }
X86_INLINE v8f v8_sub(v8f a, v8f b) { return _mm256_sub_ps(a, b); }
X86_INLINE v8f v8_mul(v8f a, v8f b) { return _mm256_mul_ps(a, b); }
X86_INLINE v8f v8_div(v8f a, v8f b) { return _mm256_div_ps(a, b); }
X86_INLINE v8f v8_sqrt(v8f a) { return _mm256_sqrt_ps(a); }
X86_INLINE v8f v8_fma(v8f a, v8f b, v8f c) { return _mm256_fmadd_ps(a, b, c); }   // a·b + c
X86_INLINE v8f v8_fnma(v8f a, v8f b, v8f c) { return _mm256_fnmadd_ps(a, b, c); } // c − a·b
// lanes < n (n < 8) all ones, the rest zero
static inline v8i v8_first_i(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The four lane sums of b0..b3, in a fixed order.
X86_INLINE v4f v8_hsum4(v8f b0, v8f b1, v8f b2, v8f b3)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// 8x8 transpose of rows r[0..7] (ymm) in place.
static inline void transpose8(v8f r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Prefetch the line at p into all cache levels.
X86_INLINE void v_prefetch(const void *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }

// clang-format on
#endif

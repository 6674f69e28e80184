// Two floats as one 8-byte load or store (the low half of an xmm), for
// pointers that are only float-aligned. _mm_load_sd((const double *)p) and
// _mm_storel_pi((__m64 *)p, x) on such a p access a double / __m64 object
// at an address it may not be aligned for: undefined behaviour (UBSan
// "load of misaligned address"). memcpy through a double says the same
// thing without the alignment claim; GCC and Clang emit the same single
// movsd / movq / movlps for it. Included by backends/avx2/vec.h and
// backends/x86/tmpl_gemm.h (so the AVX-512 GEMM too); baseline SSE2 only.
#ifndef CLEF_X86_LO64_H
#define CLEF_X86_LO64_H

#include <immintrin.h>
#include <string.h>

// {p[0], p[1], 0, 0}
static inline __m128 clef_load2f(const float *p)
{
    double d;
    memcpy(&d, p, sizeof d);
    return _mm_castpd_ps(_mm_set_sd(d));
}

// p[0], p[1] = lanes 0, 1 of x
static inline void clef_store2f(float *p, __m128 x)
{
    const double d = _mm_cvtsd_f64(_mm_castps_pd(x));
    memcpy(p, &d, sizeof d);
}

#endif

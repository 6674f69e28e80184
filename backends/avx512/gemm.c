// AVX-512 GEMM: 14x32 zmm microkernel (28 accumulators, 2 B vectors, one
// broadcast = 31 of 32 registers), packing and blocking in
// backends/x86/tmpl_gemm.h, small-shape path without packing; rows or dot
// products of 8 floats or fewer go to the AVX2 kernel (ymm is faster there),
// except a tn exactly 8 wide, which runs 16 of its rows per zmm.
//   clef_f32_gemm_nt_14x32__avx512  C (M,N) [+]= A (M,K) · B (N,K)ᵀ
//   clef_f32_gemm_nn_14x32__avx512  C (M,N) [+]= A (M,K) · B (K,N)
//   clef_f32_gemm_tn_14x32__avx512  C (M,N) [+]= A (K,M)ᵀ · B (K,N)
#include "vec.h"

#define GEMM_MR 14
#define GEMM_NR 32
#define GEMM_DOT_R 6        // small nt: 6x4 dot products, 24 zmm accumulators
#define GEMM_ROWS_2V_MAX 12 // small nn/tn: 2·12 accumulators + 3 of 32 zmm

// Register-tile building blocks: row i of the tile lives in c<i>0, c<i>1.
#define DECL(i)                                                                \
    __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define ROW(i)                                                                 \
    {                                                                          \
        __m512 ai = _mm512_set1_ps(a[i]);                                      \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                            \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                            \
    }
#define STORE(i)                                                               \
    {                                                                          \
        float *ci = c + (size_t)(i)*ldc;                                       \
        if (accum) {                                                           \
            c##i##0 = _mm512_add_ps(_mm512_loadu_ps(ci), c##i##0);             \
            c##i##1 = _mm512_add_ps(_mm512_loadu_ps(ci + 16), c##i##1);        \
        }                                                                      \
        _mm512_storeu_ps(ci, c##i##0);                                         \
        _mm512_storeu_ps(ci + 16, c##i##1);                                    \
    }
// A microkernel over the first rows of a packed 14-row A panel:
//   C (R,32) [+]= Σ_k a[k][0:R] ⊗ b[k] (32)
#define DEFINE_UKR(name, ROWS)                                                 \
    static void name(int kc, const float *restrict a, const float *restrict b, \
                     float *restrict c, int ldc, int accum)                    \
    {                                                                          \
        ROWS(DECL)                                                             \
        ROWS(PREFETCH_C)                                                       \
        for (int k = 0; k < kc; k++) {                                         \
            __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);        \
            ROWS(ROW)                                                          \
            a += GEMM_MR;                                                      \
            b += GEMM_NR;                                                      \
        }                                                                      \
        ROWS(STORE)                                                            \
    }
#define PREFETCH_C(i)                                                          \
    _mm_prefetch((const char *)(c + (size_t)(i)*ldc), _MM_HINT_T0);            \
    _mm_prefetch((const char *)(c + (size_t)(i)*ldc + 16), _MM_HINT_T0);
#define ROWS1(X) X(0)
#define ROWS2(X) ROWS1(X) X(1)
#define ROWS3(X) ROWS2(X) X(2)
#define ROWS4(X) ROWS3(X) X(3)
#define ROWS5(X) ROWS4(X) X(4)
#define ROWS6(X) ROWS5(X) X(5)
#define ROWS7(X) ROWS6(X) X(6)
#define ROWS8(X) ROWS7(X) X(7)
#define ROWS9(X) ROWS8(X) X(8)
#define ROWS10(X) ROWS9(X) X(9)
#define ROWS11(X) ROWS10(X) X(10)
#define ROWS12(X) ROWS11(X) X(11)
#define ROWS13(X) ROWS12(X) X(12)
#define ROWS14(X) ROWS13(X) X(13)

// 14x32: 28 accumulators, 2 B vectors, one broadcast = 31 of 32 registers
DEFINE_UKR(gemm_ukr, ROWS14)
DEFINE_UKR(gemm_ukr_1, ROWS1)
DEFINE_UKR(gemm_ukr_2, ROWS2)
DEFINE_UKR(gemm_ukr_3, ROWS3)
DEFINE_UKR(gemm_ukr_4, ROWS4)
DEFINE_UKR(gemm_ukr_5, ROWS5)
DEFINE_UKR(gemm_ukr_6, ROWS6)
DEFINE_UKR(gemm_ukr_7, ROWS7)
DEFINE_UKR(gemm_ukr_8, ROWS8)
DEFINE_UKR(gemm_ukr_9, ROWS9)
DEFINE_UKR(gemm_ukr_10, ROWS10)
DEFINE_UKR(gemm_ukr_11, ROWS11)
DEFINE_UKR(gemm_ukr_12, ROWS12)
DEFINE_UKR(gemm_ukr_13, ROWS13)

// Row-remainder tiles (mr < 14) compute and write exactly their mr rows, so
// a full-width one goes straight to C (the 48-row products end in a 6-row
// tile, a record's 192 query rows in a 10-row one).
#define GEMM_UKR_ROWS_EXACT 1
typedef void (*gemm_ukr_fn)(int kc, const float *a, const float *b, float *c,
                            int ldc, int accum);
static const gemm_ukr_fn gemm_ukr_by_rows[GEMM_MR + 1] = {
    NULL,        gemm_ukr_1,  gemm_ukr_2,  gemm_ukr_3,  gemm_ukr_4,
    gemm_ukr_5,  gemm_ukr_6,  gemm_ukr_7,  gemm_ukr_8,  gemm_ukr_9,
    gemm_ukr_10, gemm_ukr_11, gemm_ukr_12, gemm_ukr_13, gemm_ukr};

static void gemm_ukr_rows(int kc, const float *a, const float *b, float *c,
                          int ldc, int accum, int mr)
{
    gemm_ukr_by_rows[mr](kc, a, b, c, ldc, accum);
}

#include "backends/x86/tmpl_gemm.h"

// clef_f32_gemm_nt_14x32__avx512's routing on a Bᵀ transposed beforehand
// (the prepack table's gemm_nt_bt): narrow products AVX2's, else its small
// and skinny paths, else -1.
static int gemm_nt_bt_entry(int M, int N, int K, const float *A, int lda,
                            const float *Bt, int ldbt, float *C, int ldc,
                            int accumulate)
{
    if (N <= 8)
        return clef_gemm_prepack_6x16__avx2.gemm_nt_bt(
            M, N, K, A, lda, Bt, ldbt, C, ldc, accumulate);
    if (!gemm_is_small(M, N, K) && !gemm_is_skinny(M))
        return -1;
    return gemm_nt_bt_small(M, N, K, A, lda, Bt, ldbt, C, ldc, accumulate);
}

GEMM_PREPACK_DEFINE(14x32__avx512)

// Each entry hands narrow products to AVX2 and the rest to its wide body,
// kept out of line: inlined, the body's register saves and stack frame
// came before the narrow test, on every call of the tiny heads' ~200
// narrow products per update.
#define GEMM_ARGS                                                              \
    int M, int N, int K, const float *A, int lda, const float *B, int ldb,     \
        float *C, int ldc, int accumulate

static __attribute__((noinline)) void gemm_nt_wide(GEMM_ARGS)
{
    gemm_layout L = {0, 1};
    if (gemm_is_small(M, N, K) || gemm_is_skinny(M) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        if (gemm_nt_small_t(M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
            gemm_nt_small(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

static __attribute__((noinline)) void gemm_nn_wide(GEMM_ARGS)
{
    gemm_layout L = {0, 0};
    if (gemm_is_small(M, N, K) || gemm_is_skinny(M) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_rows_small_nn(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

static __attribute__((noinline)) void gemm_tn_wide(GEMM_ARGS)
{
    gemm_layout L = {1, 0};
    if (gemm_is_small(M, N, K) ||
        gemm_packed(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate) != 0)
        gemm_rows_small_tn(M, N, K, A, (size_t)lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_nt_14x32__avx512(GEMM_ARGS)
{
    // narrow rows of C (N ≤ 8: the small path transposes B and runs row
    // kernels N wide) run faster in ymm
    CLEF_NARROW(N <= 8, clef_f32_gemm_nt_6x16__avx2(M, N, K, A, lda, B, ldb, C,
                                                    ldc, accumulate));
    gemm_nt_wide(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_nn_14x32__avx512(GEMM_ARGS)
{
    // narrow rows of C (the tiny head's N = 8) run faster in ymm
    CLEF_NARROW(N <= 8, clef_f32_gemm_nn_6x16__avx2(M, N, K, A, lda, B, ldb, C,
                                                    ldc, accumulate));
    gemm_nn_wide(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

// tn with C exactly 8 wide and one thread's worth of work (a tiny head's
// memory gradient dmem (T, w) += Aᵀ dY, K = a record's query rows), 16 rows
// of C at a time: s[j] holds column j of those rows, so each k is one load
// of A's row, 8 broadcasts of B's and 8 zmm FMAs (AVX2's rows_1v: 16
// broadcasts and 16 ymm FMAs), then one register transpose adds s into C.
// Each element is rows_1v's chain (k ascending from zero, a·b, then the add
// into C): the bits of the AVX2 kernel, which takes the rows left over.
// Returns the rows done.
static int gemm_tn_n8_rows16(int M, int K, const float *A, int lda,
                             const float *B, int ldb, float *C, int ldc,
                             int accum)
{
    const int m16 = M / 16 * 16;
    for (int i = 0; i < m16; i += 16) {
        __m512 s[8];
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) s[j] =
            _mm512_setzero_ps();
        for (int k = 0; k < K; k++) {
            const __m512 a = _mm512_loadu_ps(A + (size_t)k * lda + i);
            const float *b = B + (size_t)k * ldb;
            _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) s[j] =
                _mm512_fmadd_ps(a, _mm512_set1_ps(b[j]), s[j]);
        }
        vf_transpose8x2(s); // s[r]: rows i + r (low half), i + 8 + r (high)
        _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++)
        {
            float *c0 = C + (size_t)(i + r) * ldc, *c1 = c0 + (size_t)8 * ldc;
            __m256 lo = _mm512_castps512_ps256(s[r]);
            __m256 hi = _mm512_extractf32x8_ps(s[r], 1);
            if (accum) {
                lo = _mm256_add_ps(_mm256_loadu_ps(c0), lo);
                hi = _mm256_add_ps(_mm256_loadu_ps(c1), hi);
            }
            _mm256_storeu_ps(c0, lo);
            _mm256_storeu_ps(c1, hi);
        }
    }
    return m16;
}

void clef_f32_gemm_tn_14x32__avx512(GEMM_ARGS)
{
    if (N == 8 && M >= 16 && gemm_threads(M, N, K) == 1) {
        const int i =
            gemm_tn_n8_rows16(M, K, A, lda, B, ldb, C, ldc, accumulate);
        if (i < M)
            clef_f32_gemm_tn_6x16__avx2(M - i, N, K, A + i, lda, B, ldb,
                                        C + (size_t)i * ldc, ldc, accumulate);
        return;
    }
    CLEF_NARROW(N <= 8, clef_f32_gemm_tn_6x16__avx2(M, N, K, A, lda, B, ldb, C,
                                                    ldc, accumulate));
    gemm_tn_wide(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

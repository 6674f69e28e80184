// NEON GEMM: 8x12 register-tiled microkernel (24 accumulators + 2 A and 3 B
// vectors = 29 of the 32 vector registers), Goto/BLIS blocking with packed
// panels on the stack (no allocation: 192 KiB of B panels in the calling
// thread, 64 KiB of A panels per thread), every remainder through
// zero-padded panels and a stack tile.
//   clef_f32_gemm_nt_8x12__neon  C (M,N) [+]= A (M,K) · B (N,K)ᵀ
//   clef_f32_gemm_nn_8x12__neon  C (M,N) [+]= A (M,K) · B (K,N)
//   clef_f32_gemm_tn_8x12__neon  C (M,N) [+]= A (K,M)ᵀ · B (K,N)
//
// Structure: for each NC block of columns, for each KC block of the
// reduction, pack op(B) (KC,NC) into NR-wide panels; for each MC block of rows
// pack op(A) (MC,KC) into MR-wide panels and run the microkernel over its
// tiles. Determinism: every C element sums its K range in the same order (KC
// blocks in order, k ascending within a block) whatever the thread count;
// threads split MC blocks of rows (independent outputs), never K.
#include <omp.h>
#include <string.h>

#include "neon.h"
#include "vec.h"

#define GEMM_MR 8
#define GEMM_NR 12
// Blocking. CLEF_NEON_GEMM_SMALL_BLOCKS (a test build of scripts/cross-test)
// shrinks the blocks and threads every call, so the head's small test shapes
// cross every KC, MC and NC boundary and the OpenMP split.
#ifdef CLEF_NEON_GEMM_SMALL_BLOCKS
#define GEMM_KC 32
#define GEMM_MC 16
#define GEMM_NC 24
#define GEMM_PAR_FLOPS 0.0
#else
#define GEMM_KC 256
#define GEMM_MC 64         // multiple of MR: A block (MC,KC) 64 KiB per thread
#define GEMM_NC 192        // multiple of NR: B block (KC,NC) 192 KiB, shared
#define GEMM_PAR_FLOPS 4e6 // threads only above this much work
#endif
_Static_assert(GEMM_MC % GEMM_MR == 0 && GEMM_NC % GEMM_NR == 0,
               "blocks hold whole register tiles");

// C tile (8,12) [+]= Σ_k a[k] (8) ⊗ b[k] (12); a, b packed panels.
// (the microkernel as laid out by hand)
// clang-format off
static void gemm_ukr(int kc, const float *restrict a, const float *restrict b,
                     float *restrict c, int ldc, int accum)
{
#define DECL(i) float32x4_t c##i##0 = v_zero(), c##i##1 = v_zero(), c##i##2 = v_zero();
    DECL(0) DECL(1) DECL(2) DECL(3) DECL(4) DECL(5) DECL(6) DECL(7)
#undef DECL
    for (int k = 0; k < kc; k++) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
#define ROW(i, av, lane)                                                       \
    c##i##0 = vfmaq_laneq_f32(c##i##0, b0, av, lane);                          \
    c##i##1 = vfmaq_laneq_f32(c##i##1, b1, av, lane);                          \
    c##i##2 = vfmaq_laneq_f32(c##i##2, b2, av, lane);
        ROW(0, a0, 0) ROW(1, a0, 1) ROW(2, a0, 2) ROW(3, a0, 3)
        ROW(4, a1, 0) ROW(5, a1, 1) ROW(6, a1, 2) ROW(7, a1, 3)
#undef ROW
        a += GEMM_MR;
        b += GEMM_NR;
    }
#define STORE(i)                                                               \
    {                                                                          \
        float *ci = c + (size_t)(i) * ldc;                                     \
        if (accum) {                                                           \
            c##i##0 = vaddq_f32(vld1q_f32(ci), c##i##0);                       \
            c##i##1 = vaddq_f32(vld1q_f32(ci + 4), c##i##1);                   \
            c##i##2 = vaddq_f32(vld1q_f32(ci + 8), c##i##2);                   \
        }                                                                      \
        vst1q_f32(ci, c##i##0);                                                \
        vst1q_f32(ci + 4, c##i##1);                                            \
        vst1q_f32(ci + 8, c##i##2);                                            \
    }
    STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5) STORE(6) STORE(7)
#undef STORE
}
// clang-format on

// One tile of C, full (mr = MR, nr = NR) or partial through a stack tile.
static void gemm_tile(int kc, const float *Ap, const float *Bp, float *C,
                      int ldc, int mr, int nr, int accum)
{
    if (mr == GEMM_MR && nr == GEMM_NR) {
        gemm_ukr(kc, Ap, Bp, C, ldc, accum);
        return;
    }
    float t[GEMM_MR * GEMM_NR]; // (MR, NR)
    gemm_ukr(kc, Ap, Bp, t, GEMM_NR, 0);
    for (int i = 0; i < mr; i++) {
        float *c = C + (size_t)i * ldc;
        const float *ti = t + i * GEMM_NR;
        for (int j = 0; j < nr; j++)
            c[j] = accum ? c[j] + ti[j] : ti[j];
    }
}

// 4x4 transpose: rows r0..r3 in, columns out.
static inline void transpose4(float32x4_t *r0, float32x4_t *r1, float32x4_t *r2,
                              float32x4_t *r3)
{
    float32x4_t t0 = vtrn1q_f32(*r0, *r1), t1 = vtrn2q_f32(*r0, *r1);
    float32x4_t t2 = vtrn1q_f32(*r2, *r3), t3 = vtrn2q_f32(*r2, *r3);
    *r0 = vreinterpretq_f32_f64(
        vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    *r1 = vreinterpretq_f32_f64(
        vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    *r2 = vreinterpretq_f32_f64(
        vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    *r3 = vreinterpretq_f32_f64(
        vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

// Panel of width W (a multiple of 4) whose index runs along source ROWS:
//   dst (kc, W)[k][i] = src[i·ld + k] for i < w, 0 for w ≤ i < W.
static void pack_rows(int W, int w, int kc, const float *src, int ld,
                      float *dst)
{
    for (int i0 = 0; i0 < W; i0 += 4) {
        int ni = w - i0; // valid source rows in this group of 4
        int k = 0;
        if (ni >= 4) {
            const float *s0 = src + (size_t)i0 * ld, *s1 = s0 + ld,
                        *s2 = s1 + ld, *s3 = s2 + ld;
            for (; k + 4 <= kc; k += 4) {
                float32x4_t r0 = vld1q_f32(s0 + k), r1 = vld1q_f32(s1 + k);
                float32x4_t r2 = vld1q_f32(s2 + k), r3 = vld1q_f32(s3 + k);
                transpose4(&r0, &r1, &r2, &r3);
                vst1q_f32(dst + (size_t)(k + 0) * W + i0, r0);
                vst1q_f32(dst + (size_t)(k + 1) * W + i0, r1);
                vst1q_f32(dst + (size_t)(k + 2) * W + i0, r2);
                vst1q_f32(dst + (size_t)(k + 3) * W + i0, r3);
            }
        }
        for (; k < kc; k++)
            for (int i = 0; i < 4; i++)
                dst[(size_t)k * W + i0 + i] =
                    i < ni ? src[(size_t)(i0 + i) * ld + k] : 0.0f;
    }
}

// Panel of width W whose index runs along source COLUMNS:
//   dst (kc, W)[k][i] = src[k·ld + i] for i < w, 0 beyond.
static void pack_cols(int W, int w, int kc, const float *src, int ld,
                      float *dst)
{
    for (int k = 0; k < kc; k++) {
        const float *s = src + (size_t)k * ld;
        float *d = dst + (size_t)k * W;
        int i = 0;
        for (; i + 4 <= w; i += 4)
            vst1q_f32(d + i, vld1q_f32(s + i));
        for (; i < W; i++)
            d[i] = i < w ? s[i] : 0.0f;
    }
}

// How to reach op(A) rows and op(B) columns.
typedef struct gemm_layout {
    int a_trans; // 0: A (M,K) (nt, nn); 1: A (K,M) (tn)
    int b_trans; // 0: B (K,N) (nn, tn); 1: B (N,K) (nt)
} gemm_layout;

// Rows [i0, i0+m) of C against the packed B block Bp (kc, n) at column j0.
static void gemm_block(gemm_layout L, int i0, int m, int j0, int n, int p0,
                       int kc, const float *A, int lda, const float *Bp,
                       float *C, int ldc, int accum)
{
    float Ap[GEMM_MC * GEMM_KC]; // (MC/MR panels of (kc, MR))
    for (int ir = 0; ir < m; ir += GEMM_MR) {
        int mr = m - ir < GEMM_MR ? m - ir : GEMM_MR;
        float *d = Ap + (size_t)ir * kc;
        if (L.a_trans)
            pack_cols(GEMM_MR, mr, kc, A + (size_t)p0 * lda + i0 + ir, lda, d);
        else
            pack_rows(GEMM_MR, mr, kc, A + (size_t)(i0 + ir) * lda + p0, lda,
                      d);
    }
    for (int jr = 0; jr < n; jr += GEMM_NR) {
        int nr = n - jr < GEMM_NR ? n - jr : GEMM_NR;
        const float *bp = Bp + (size_t)jr * kc;
        for (int ir = 0; ir < m; ir += GEMM_MR) {
            int mr = m - ir < GEMM_MR ? m - ir : GEMM_MR;
            gemm_tile(kc, Ap + (size_t)ir * kc, bp,
                      C + (size_t)(i0 + ir) * ldc + j0 + jr, ldc, mr, nr,
                      accum);
        }
    }
}

static void gemm_driver(gemm_layout L, int M, int N, int K, const float *A,
                        int lda, const float *B, int ldb, float *C, int ldc,
                        int accumulate)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) { // the empty sum
        clef_gemm_empty_sum(M, N, C, ldc, accumulate);
        return;
    }
    float Bp[GEMM_KC * GEMM_NC]; // (NC/NR panels of (kc, NR))
    int nblk = (M + GEMM_MC - 1) / GEMM_MC;
    // threads only when there is enough work per MC block to pay for them
    // (and never a team of one: libgomp allocates every region's team)
    int par = nblk > 1 && 2.0 * M * N * K >= GEMM_PAR_FLOPS &&
              omp_get_max_threads() > 1;
    for (int j0 = 0; j0 < N; j0 += GEMM_NC) {
        int n = N - j0 < GEMM_NC ? N - j0 : GEMM_NC;
        for (int p0 = 0; p0 < K; p0 += GEMM_KC) {
            int kc = K - p0 < GEMM_KC ? K - p0 : GEMM_KC;
            int acc = accumulate || p0 > 0;
            for (int jr = 0; jr < n; jr += GEMM_NR) {
                int nr = n - jr < GEMM_NR ? n - jr : GEMM_NR;
                float *d = Bp + (size_t)jr * kc;
                if (L.b_trans)
                    pack_rows(GEMM_NR, nr, kc, B + (size_t)(j0 + jr) * ldb + p0,
                              ldb, d);
                else
                    pack_cols(GEMM_NR, nr, kc, B + (size_t)p0 * ldb + j0 + jr,
                              ldb, d);
            }
            if (!par)
                for (int ib = 0; ib < nblk; ib++) {
                    int i0 = ib * GEMM_MC;
                    int m = M - i0 < GEMM_MC ? M - i0 : GEMM_MC;
                    gemm_block(L, i0, m, j0, n, p0, kc, A, lda, Bp, C, ldc,
                               acc);
                }
            else
#pragma omp parallel for schedule(static)
                for (int ib = 0; ib < nblk; ib++) {
                    int i0 = ib * GEMM_MC;
                    int m = M - i0 < GEMM_MC ? M - i0 : GEMM_MC;
                    gemm_block(L, i0, m, j0, n, p0, kc, A, lda, Bp, C, ldc,
                               acc);
                }
        }
    }
}

void clef_f32_gemm_nt_8x12__neon(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    gemm_driver((gemm_layout){0, 1}, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate);
}

void clef_f32_gemm_nn_8x12__neon(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    gemm_driver((gemm_layout){0, 0}, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate);
}

void clef_f32_gemm_tn_8x12__neon(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    gemm_driver((gemm_layout){1, 0}, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate);
}

// GEMM driver shared by backends/avx2/gemm.c (6x16 ymm microkernel) and
// backends/avx512/gemm.c (14x32 zmm microkernel).
//
// The including file defines:
//   GEMM_MR, GEMM_NR          register tile (rows of C, columns of C)
//   gemm_ukr(kc, a, b, c, ldc, accum)
//                             C tile (MR,NR) [+]= Ap (kc,MR)ᵀ-panel · Bp (kc,NR)
//   gemm_ukr_rows(kc, a, b, c, ldc, accum, mr)
//                             the same for at least the first mr rows (the
//                             rows beyond mr may be written too: c is a
//                             scratch tile then, unless GEMM_UKR_ROWS_EXACT
//                             says it writes exactly mr rows)
//   GEMM_DOT_R                rows of A per dot-product tile of the small nt
//                             path (GEMM_DOT_R × 4 vector accumulators)
//   GEMM_ROWS_2V_MAX          rows side by side in a two-vector row kernel:
//                             2·R accumulators + 2 B vectors + a broadcast
//                             must fit the register file
// and includes vec.h first.
//
// Structure (Goto/BLIS): for each KC block of the reduction, pack all of
// op(A) (M,KC) into MR-wide panels once; for each NC block of columns pack
// op(B) (KC,NC) into NR-wide panels; for each MC block of rows (an L2-sized
// slice of packed A) run the microkernel over the tiles, NR panels split
// statically over OpenMP threads (each packs all of A and the B panels it
// uses, so the threads never wait on each other); a product of one KC block
// splits MR panels (rows of C) instead (gemm_packed_rows). Edge tiles go
// through a stack tile, or straight to C when the microkernel writes exactly
// their rows (GEMM_UKR_ROWS_EXACT). Operands packed beforehand
// (clef_gemm_prepack) are read in place. KC, MC, NC come from the L1d and L2
// sizes (scheduler/cpu.h).
//
// Memory: the interface has no scratch argument, so the packed path keeps a
// packing buffer per calling thread, grown on demand (an A block of KC·M
// floats per thread and the threads' B panels, about KC·(NC + threads·NR)
// floats; a failed allocation falls back to the small path, which is always
// correct).
// Calls small enough to skip packing allocate nothing.
//
// Determinism: every C element sums its K range in the same order (KC blocks
// in order, k ascending within a block) whatever the thread count: threads
// split packing and output tiles only, never K.
//
// Small shapes (the width-8 heads, vectors): no packing, no allocation; row
// kernels vectorised over N with 4-8 rows side by side (nn, tn; nt through a
// stack transpose of B when K ≤ 32), else dot products (nt).
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "cpu/cpu.h"
#include "backends/x86/ymm.h"

typedef struct gemm_blocking {
    int kc, mc, nc;
} gemm_blocking;

// NC for a packed B block (KC,NC) of about `bytes`: whole NR panels, at
// least one.
static int gemm_nc(size_t bytes, int kc)
{
    const int nc =
        (int)(bytes / ((size_t)kc * sizeof(float))) / GEMM_NR * GEMM_NR;
    return nc < GEMM_NR ? GEMM_NR : nc;
}

static gemm_blocking gemm_blocking_get(void)
{
    size_t l1 = clef_cpu_l1d(), l2 = clef_cpu_l2();
    gemm_blocking b;
    // KC: long enough that the C tile update (load + add + store of MR×NR)
    // is rare; the B micro-panel (KC,NR) then streams from L2, which is
    // cheap (2 NR-vectors per 2·MR FMAs). Measured best on Zen 4: 512.
    b.kc = l2 >= (512u << 10) ? 512 : (int)(l1 / (GEMM_NR * sizeof(float)));
    if (b.kc < 128)
        b.kc = 128;
    // MC: the packed A block (MC,KC), reused by every NR panel, takes a
    // quarter of L2.
    b.mc = (int)(l2 / 4 / ((size_t)b.kc * sizeof(float)));
    b.mc = b.mc / GEMM_MR * GEMM_MR;
    if (b.mc < GEMM_MR)
        b.mc = GEMM_MR;
    // NC: the packed B block (KC,NC) is streamed panel by panel; every NC
    // block reads all of packed A again, so a large NC reads it fewer
    // times. Bounded by 2× L2 (L3 is not trusted); gemm_blocking_for
    // halves it where packed A stays in L2.
    b.nc = gemm_nc(2 * l2, b.kc);
    return b;
}

// The blocking of a product of M rows of C. When they fit one MC block,
// packed A stays in L2 across NC blocks, so the B block (KC,NC) takes half
// of L2 instead of 2× L2 and the tiles read it from L2, not from L3: the
// options' nn, 128 × 5120 × 1024 with B cold, read 87.9-91.5 % of oneDNN
// on Zen 5 at 2× L2 and 90.8-92.9 % at half of it (five alternated
// isa-bench runs).
// Beyond one MC block every NC block streams all of packed A again, and
// the released update ran 2-4 % slower with the smaller NC.
static gemm_blocking gemm_blocking_for(int M)
{
    gemm_blocking b = gemm_blocking_get();
    if (M <= b.mc)
        b.nc = gemm_nc(clef_cpu_l2() / 2, b.kc);
    return b;
}

// pack_rows reads 8 rows side by side, 32 bytes of each per step, the rows
// ld apart (a page or more at the head's weights): it prefetches each row
// PACK_ROWS_PF floats (4 lines) ahead, once per line. Measured on Zen 5
// (isa-bench, 1 thread), nt at 128 × 1024 × 5120, whose B pack transposes
// the weight: 88-92 % of oneDNN without, 99 % with; 512 × 1024 × 5120:
// 95-97 % → 98-100 %. 256 bytes ahead was level with 512, 1 KiB worse.
#define PACK_ROWS_PF 64

// Panel of width W from a source whose panel index runs along ROWS:
//   dst (kc, W)[k][i] = src[i·ld + k] for i < w, 0 for w ≤ i < W.
static void pack_rows(int W, int w, int kc, const float *src, int ld, float *dst)
{
    int i0 = 0;
    for (; i0 < w; i0 += 8) {
        int ni = w - i0 < 8 ? w - i0 : 8;    // valid source rows
        int ns = W - i0 < 8 ? W - i0 : 8;    // lanes stored
        v8i ms = v8_first_i(ns); // for the partial stores (vec.h)
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            v8f r[8];
            if (k % 16 == 0 && k + PACK_ROWS_PF < kc)
                for (int i = 0; i < ni; i++)
                    v_prefetch(src + (size_t)(i0 + i) * ld + k + PACK_ROWS_PF);
            for (int i = 0; i < 8; i++)
                r[i] = i < ni ? v8_load(src + (size_t)(i0 + i) * ld + k)
                              : v8_zero();
            transpose8(r);
            for (int j = 0; j < 8; j++) {
                float *d = dst + (size_t)(k + j) * W + i0;
                if (ns == 8)
                    v8_store(d, r[j]);
                else
                    v8_storen_mask(d, ms, ns, r[j]);
            }
        }
        for (; k < kc; k++)
            for (int i = 0; i < ns; i++)
                dst[(size_t)k * W + i0 + i] =
                    i < ni ? src[(size_t)(i0 + i) * ld + k] : 0.0f;
    }
    for (; i0 < W; i0++) // whole zero lanes beyond w (w a multiple of 8)
        for (int k = 0; k < kc; k++)
            dst[(size_t)k * W + i0] = 0.0f;
}

// Panel of width W from a source whose panel index runs along COLUMNS:
//   dst (kc, W)[k][i] = src[k·ld + i] for i < w, 0 beyond.
static void pack_cols(int W, int w, int kc, const float *src, int ld, float *dst)
{
    for (int k = 0; k < kc; k++) {
        const float *s = src + (size_t)k * ld;
        float *d = dst + (size_t)k * W;
        int i = 0;
        for (; i + VW <= w; i += VW)
            vf_store(d + i, vf_load(s + i));
        for (; i < W; i += VW) {
            int n = w - i;
            vf v = n > 0 ? (n < VW ? vf_loadn(s + i, n) : vf_load(s + i)) : vf_zero();
            int st = W - i < VW ? W - i : VW;
            if (st == VW)
                vf_store(d + i, v);
            else
                vf_storen(d + i, v, st);
        }
    }
}

// The layout of one GEMM call: how to reach op(A) rows and op(B) columns.
typedef struct gemm_layout {
    int a_trans; // 0: A (M,K) rows are C rows (nt, nn); 1: A (K,M) (tn)
    int b_trans; // 0: B (K,N) (nn, tn);                 1: B (N,K) (nt)
} gemm_layout;

// Packs NR-panel jp (columns j0 + jp·NR ..) of op(B)[p0:p0+kc, j0:j0+n].
static void pack_b_panel(gemm_layout L, int n, int kc, const float *B, int ldb,
                         int j0, int p0, int jp, float *Bp)
{
    int jr = jp * GEMM_NR;
    int nr = n - jr < GEMM_NR ? n - jr : GEMM_NR;
    float *d = Bp + (size_t)jr * kc;
    if (L.b_trans)
        pack_rows(GEMM_NR, nr, kc, B + (size_t)(j0 + jr) * ldb + p0, ldb, d);
    else
        pack_cols(GEMM_NR, nr, kc, B + (size_t)p0 * ldb + j0 + jr, ldb, d);
}

// One MR×NR tile (possibly partial) of C.
static inline void gemm_tile(int kc, const float *Ap, const float *Bp, float *C,
                             int ldc, int mr, int nr, int accum)
{
    if (mr == GEMM_MR && nr == GEMM_NR) {
        gemm_ukr(kc, Ap, Bp, C, ldc, accum);
        return;
    }
#ifdef GEMM_UKR_ROWS_EXACT
    if (nr == GEMM_NR) { // writes exactly mr rows: straight to C
        gemm_ukr_rows(kc, Ap, Bp, C, ldc, accum, mr);
        return;
    }
#endif
    float t[GEMM_MR * GEMM_NR] __attribute__((aligned(64)));
    gemm_ukr_rows(kc, Ap, Bp, t, GEMM_NR, 0, mr);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            C[(size_t)i * ldc + j] =
                accum ? C[(size_t)i * ldc + j] + t[i * GEMM_NR + j] : t[i * GEMM_NR + j];
}

// Threads for one product: 1 below 4 MFLOP, and 1 inside an enclosing
// region (the records' attentions run one per thread; a nested region would
// be a team of one, which libgomp allocates).
static int gemm_threads(int M, int N, int K)
{
    double flops = 2.0 * M * N * K;
    if (flops < 4e6 || omp_in_parallel())
        return 1;
    return omp_get_max_threads();
}

// Packing buffers: one per calling thread, grown on demand and kept, so the
// training loop allocates nothing after its first update (a fresh multi-MB
// buffer per call also costs page faults and kernel page clearing on every
// call). The cache is the only state this file keeps; it holds workspace,
// never results. A thread's buffer is freed when the thread exits (a
// pthread key's destructor: OpenMP threads of nested or resized teams come
// and go, and a _Thread_local pointer alone would leak their buffers); the
// main thread's stays reachable through its TLS until the process ends.
static _Thread_local float *gemm_pack_buf;
static _Thread_local size_t gemm_pack_len; // floats
static pthread_key_t gemm_pack_key;
static pthread_once_t gemm_pack_once = PTHREAD_ONCE_INIT;
static int gemm_pack_key_ok;

static void gemm_pack_key_make(void)
{
    gemm_pack_key_ok = pthread_key_create(&gemm_pack_key, free) == 0;
}

static float *gemm_pack_buffer(size_t n)
{
    if (n <= gemm_pack_len)
        return gemm_pack_buf;
    pthread_once(&gemm_pack_once, gemm_pack_key_make);
    if (gemm_pack_key_ok)
        pthread_setspecific(gemm_pack_key, NULL);
    free(gemm_pack_buf);
    gemm_pack_len = 0;
    gemm_pack_buf = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (gemm_pack_buf) {
        gemm_pack_len = n;
        if (gemm_pack_key_ok)
            pthread_setspecific(gemm_pack_key, gemm_pack_buf);
    }
    return gemm_pack_buf;
}

// [lo, hi): thread t's contiguous share of n iterations among nt (static).
static inline void gemm_share(int n, int t, int nt, int *lo, int *hi)
{
    *lo = (int)((long)n * t / nt);
    *hi = (int)((long)n * (t + 1) / nt);
}

// The packing buffers of one packed call: per thread t, an op(A) block at
// Ap + t·astride and the NR panels of its share of an NC block at
// Bp + t·bstride.
// preA / preB: the whole op(A) / op(B) packed beforehand (gemm_pack_all),
// read in place by every thread; NULL: packed here.
typedef struct gemm_bufs {
    float *Ap, *Bp;
    size_t astride, bstride;
    const float *preA, *preB;
} gemm_bufs;

// Thread t of nt runs its share of the packed path's loops; nt > 1 only
// inside gemm_packed's own region. (No orphaned `omp for`: called serially
// from inside a record-parallel region, it would bind to that outer team and
// wait for it at a barrier.)
// Loop order: for each KC block, pack all of op(A)[:, p0:p0+kc] once (so A is
// packed once per call, not once per NC block), then for each NC block pack
// B, and for each MC block (an L2-sized slice of packed A) run the tiles.
// Threads share nothing: each packs all of A for itself and the B panels of
// its own output columns, so the loops have no barrier. Packing A twice
// costs less than waiting: with A packed half by each thread, the tiles read
// the other half from the other core and the threads met at barriers
// (docs/PERF-NOTES.md, "GEMM paths").
static void gemm_packed_loops(gemm_layout L, gemm_blocking bl, int M, int N,
                              int K, const float *A, int lda, const float *B,
                              int ldb, float *C, int ldc, int accumulate,
                              gemm_bufs bf, int t, int nt)
{
    const int mpan = (M + GEMM_MR - 1) / GEMM_MR;
    const int npan_all = (N + GEMM_NR - 1) / GEMM_NR;
    float *Bp = bf.Bp + (size_t)t * bf.bstride;
    for (int p0 = 0; p0 < K; p0 += bl.kc) {
        int kc = K - p0 < bl.kc ? K - p0 : bl.kc;
        int acc = accumulate || p0 > 0;
        const float *Ap = bf.preA ? bf.preA + (size_t)p0 * mpan * GEMM_MR
                                  : bf.Ap + (size_t)t * bf.astride;
        const float *Bk = bf.preB ? bf.preB + (size_t)p0 * npan_all * GEMM_NR
                                  : NULL;
        // Ap: panel ip holds rows [ip·MR, ip·MR + MR) of op(A), (kc, MR)
        for (int ip = 0; !bf.preA && ip < mpan; ip++) {
            int ir = ip * GEMM_MR;
            int mr = M - ir < GEMM_MR ? M - ir : GEMM_MR;
            float *d = (float *)Ap + (size_t)ir * kc;
            if (L.a_trans)
                pack_cols(GEMM_MR, mr, kc, A + (size_t)p0 * lda + ir, lda, d);
            else
                pack_rows(GEMM_MR, mr, kc, A + (size_t)ir * lda + p0, lda, d);
        }
        for (int j0 = 0; j0 < N; j0 += bl.nc) {
            int n = N - j0 < bl.nc ? N - j0 : bl.nc;
            int npan = (n + GEMM_NR - 1) / GEMM_NR, lo, hi;
            gemm_share(npan, t, nt, &lo, &hi);
            // this thread's panels lo..hi-1, at Bp + (jp - lo)·NR·kc
            for (int jp = lo; !Bk && jp < hi; jp++)
                pack_b_panel(L, n, kc, B, ldb, j0, p0, jp,
                             Bp - (size_t)lo * GEMM_NR * kc);
            // output tiles: this thread's NR panels, every MC block
            for (int i0 = 0; i0 < M; i0 += bl.mc) {
                int m = M - i0 < bl.mc ? M - i0 : bl.mc;
                for (int jp = lo; jp < hi; jp++) {
                    int jr = jp * GEMM_NR;
                    int nr = n - jr < GEMM_NR ? n - jr : GEMM_NR;
                    const float *bp =
                        Bk ? Bk + (size_t)(j0 + jr) * kc
                           : Bp + (size_t)(jp - lo) * GEMM_NR * kc;
                    for (int ir = 0; ir < m; ir += GEMM_MR) {
                        int mr = m - ir < GEMM_MR ? m - ir : GEMM_MR;
                        gemm_tile(kc, Ap + (size_t)(i0 + ir) * kc, bp,
                                  C + (size_t)(i0 + ir) * ldc + j0 + jr, ldc,
                                  mr, nr, acc);
                    }
                }
            }
        }
    }
}

// Thread t of nt's share of a one-KC-block product (K ≤ KC: the short-K
// weight gradients dW = dYᵀ X over the batch's rows) split by rows of C:
// it packs its own MR panels of op(A) and every NR panel of op(B), which is
// small (K rows), and writes whole rows of C, contiguous per thread.
static void gemm_packed_rows(gemm_layout L, gemm_blocking bl, int M, int N,
                             int K, const float *A, int lda, const float *B,
                             int ldb, float *C, int ldc, int accumulate,
                             float *Ap, float *Bp, int t, int nt)
{
    const int mpan = (M + GEMM_MR - 1) / GEMM_MR;
    int lo, hi;
    gemm_share(mpan, t, nt, &lo, &hi);
    for (int ip = lo; ip < hi; ip++) {
        int ir = ip * GEMM_MR, mr = M - ir < GEMM_MR ? M - ir : GEMM_MR;
        float *d = Ap + (size_t)(ip - lo) * GEMM_MR * K;
        if (L.a_trans)
            pack_cols(GEMM_MR, mr, K, A + ir, lda, d);
        else
            pack_rows(GEMM_MR, mr, K, A + (size_t)ir * lda, lda, d);
    }
    for (int j0 = 0; j0 < N; j0 += bl.nc) {
        int n = N - j0 < bl.nc ? N - j0 : bl.nc;
        int npan = (n + GEMM_NR - 1) / GEMM_NR;
        for (int jp = 0; jp < npan; jp++)
            pack_b_panel(L, n, K, B, ldb, j0, 0, jp, Bp);
        for (int ip = lo; ip < hi; ip++) {
            int ir = ip * GEMM_MR, mr = M - ir < GEMM_MR ? M - ir : GEMM_MR;
            const float *ap = Ap + (size_t)(ip - lo) * GEMM_MR * K;
            for (int jp = 0; jp < npan; jp++) {
                int jr = jp * GEMM_NR, nr = n - jr < GEMM_NR ? n - jr : GEMM_NR;
                gemm_tile(K, ap, Bp + (size_t)jr * K,
                          C + (size_t)ir * ldc + j0 + jr, ldc, mr, nr,
                          accumulate);
            }
        }
    }
}

// One-KC products on several threads split rows of C (gemm_packed_rows).
// Alternated in one process, 2 threads: released batch 4 1.89 -> 2.03
// updates/s, mid batch 4 12.2 -> 13.4, released batch 1 unchanged. With
// columns split, both threads wrote every row of the gradient, a few
// hundred bytes each, and one waited for the other (11 thread-ms per
// released update).
static int gemm_rows_split(int K, gemm_blocking bl, const float *preA,
                           const float *preB, int nth)
{
    return nth > 1 && K <= bl.kc && !preA && !preB;
}

static int gemm_packed_rows_call(gemm_layout L, gemm_blocking bl, int M, int N,
                                 int K, const float *A, int lda, const float *B,
                                 int ldb, float *C, int ldc, int accumulate,
                                 int nth)
{
    // per thread, one NC block of B's NR panels (64-byte aligned: the
    // microkernels load them aligned); then the threads' shares of A's MR
    // panels, for any team of nt ≤ nth (nt·⌈mpan/nt⌉ < mpan + nt)
    const int mpan = (M + GEMM_MR - 1) / GEMM_MR;
    const int ncmax = N < bl.nc ? N : bl.nc;
    const int npan = (ncmax + GEMM_NR - 1) / GEMM_NR;
    const size_t bn = ((size_t)K * GEMM_NR * npan + 15) & ~(size_t)15;
    const size_t an = (size_t)K * GEMM_MR * (mpan + nth);
    float *buf = gemm_pack_buffer(bn * nth + an);
    if (!buf)
        return -1;
#pragma omp parallel num_threads(nth)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const size_t ashare = (size_t)K * GEMM_MR * ((mpan + nt - 1) / nt);
        gemm_packed_rows(L, bl, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                         buf + bn * nth + t * ashare, buf + t * bn, t, nt);
    }
    return 0;
}

// The packed path. Returns -1 when the packing buffers cannot be allocated.
// A team of one is never started: libgomp allocates the team of every
// region with one thread (an if clause that is false included).
// preA / preB: operands packed beforehand (NULL: packed here, per call).
static int gemm_packed_pre(gemm_layout L, int M, int N, int K, const float *A,
                           int lda, const float *B, int ldb, float *C, int ldc,
                           int accumulate, const float *preA, const float *preB)
{
    gemm_blocking bl = gemm_blocking_for(M);
    const int nth = gemm_threads(M, N, K);
    if (gemm_rows_split(K, bl, preA, preB, nth))
        return gemm_packed_rows_call(L, bl, M, N, K, A, lda, B, ldb, C, ldc,
                                     accumulate, nth);
    const int kcmax = K < bl.kc ? K : bl.kc;
    const int ncmax = N < bl.nc ? N : bl.nc;
    const int npan = (ncmax + GEMM_NR - 1) / GEMM_NR;
    const int mp = (M + GEMM_MR - 1) / GEMM_MR * GEMM_MR;
    // B: nt regions of ⌈npan/nt⌉ panels for any team of nt ≤ nth threads
    // (nt·⌈npan/nt⌉ < npan + nt); A: nth blocks (kcmax, mp)
    const size_t bn =
        preB ? 0 : ((size_t)kcmax * GEMM_NR * (npan + nth) + 15) / 16 * 16;
    const size_t an =
        preA ? 0 : ((size_t)kcmax * mp + 15) / 16 * 16; // 64-byte aligned
    float *buf = gemm_pack_buffer(bn + an * nth > 0 ? bn + an * nth : 16);
    if (!buf)
        return -1;
    gemm_bufs bf = {.Bp = buf, .Ap = buf + bn, .astride = an,
                    .preA = preA, .preB = preB};
    if (nth <= 1) {
        gemm_packed_loops(L, bl, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                          bf, 0, 1);
        return 0;
    }
#pragma omp parallel num_threads(nth)
    {
        const int nt = omp_get_num_threads();
        gemm_bufs mine = bf; // fewer threads than asked: larger shares
        mine.bstride =
            preB ? 0 : (size_t)kcmax * GEMM_NR * ((npan + nt - 1) / nt);
        gemm_packed_loops(L, bl, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                          mine, omp_get_thread_num(), nt);
    }
    return 0;
}

static int gemm_packed(gemm_layout L, int M, int N, int K, const float *A,
                       int lda, const float *B, int ldb, float *C, int ldc,
                       int accumulate)
{
    return gemm_packed_pre(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate,
                           NULL, NULL);
}

// ---- pre-packed operands (kernels.h, clef_gemm_prepack) ----
// The whole op(A) (M, K) or op(B) (K, N) in the packed path's own layout:
// KC block p0 at p0·Mp (A) or p0·Np (B), Mp / Np = M / N rounded up to MR /
// NR; within a block, panel ip at ip·MR·kc (A) or jp·NR·kc (B), exactly
// where gemm_packed_loops packs them per call. Panels are independent
// outputs: they split across threads when the copy is worth a region.
static size_t gemm_pack_a_floats(int M, int K)
{
    return (size_t)K * ((M + GEMM_MR - 1) / GEMM_MR * GEMM_MR);
}

static size_t gemm_pack_b_floats(int N, int K)
{
    return (size_t)K * ((N + GEMM_NR - 1) / GEMM_NR * GEMM_NR);
}

static int gemm_pack_threads(size_t floats)
{
    return floats < ((size_t)1 << 18) || omp_in_parallel()
               ? 1
               : omp_get_max_threads();
}

// Panel i of the whole op(A): KC block i / mpan, MR panel i % mpan.
static void gemm_pack_a_panel(gemm_layout L, int M, int K, const float *A,
                              int lda, float *Ap, int kc, int i)
{
    const int mpan = (M + GEMM_MR - 1) / GEMM_MR;
    const int p0 = i / mpan * kc, ir = i % mpan * GEMM_MR;
    const int kb = K - p0 < kc ? K - p0 : kc;
    const int mr = M - ir < GEMM_MR ? M - ir : GEMM_MR;
    float *d = Ap + (size_t)p0 * mpan * GEMM_MR + (size_t)ir * kb;
    if (L.a_trans)
        pack_cols(GEMM_MR, mr, kb, A + (size_t)p0 * lda + ir, lda, d);
    else
        pack_rows(GEMM_MR, mr, kb, A + (size_t)ir * lda + p0, lda, d);
}

// Panel i of the whole op(B): KC block i / npan, NR panel i % npan.
static void gemm_pack_b_panel(gemm_layout L, int N, int K, const float *B,
                              int ldb, float *Bp, int kc, int i)
{
    const int npan = (N + GEMM_NR - 1) / GEMM_NR;
    const int p0 = i / npan * kc, kb = K - p0 < kc ? K - p0 : kc;
    pack_b_panel(L, N, kb, B, ldb, 0, p0, i % npan,
                 Bp + (size_t)p0 * npan * GEMM_NR);
}

// The whole op(A) (dim = M, W = MR) or op(B) (dim = N, W = NR), panel by
// panel (gemm_pack_a_panel, gemm_pack_b_panel), across the team when the
// copy is large. (No region for one thread: libgomp allocates a team even
// for an if clause that is false, and the update loop allocates nothing.)
typedef void (*gemm_panel_fn)(gemm_layout L, int dim, int K, const float *src,
                              int ld, float *dst, int kc, int i);
static void gemm_pack_all(gemm_panel_fn panel, int W, gemm_layout L, int dim,
                          int K, const float *src, int ld, float *dst)
{
    const int kc = gemm_blocking_get().kc;
    const int n = (K + kc - 1) / kc * ((dim + W - 1) / W);
    const int nth = gemm_pack_threads((size_t)K * ((dim + W - 1) / W * W));
    if (nth <= 1) {
        for (int i = 0; i < n; i++)
            panel(L, dim, K, src, ld, dst, kc, i);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(nth)
    for (int i = 0; i < n; i++)
        panel(L, dim, K, src, ld, dst, kc, i);
}

// An empty reduction: C = 0, or unchanged when accumulating.
static void gemm_empty_k(int M, int N, float *C, int ldc, int accumulate)
{
    for (int i = 0; !accumulate && i < M; i++)
        memset(C + (size_t)i * ldc, 0, sizeof(float) * (size_t)N);
}

// The public pre-packed entry points of one ISA, named after its tile
// (clef_f32_gemm_pack_b_14x32__avx512, ...), and their table. The including
// file defines gemm_nt_bt_entry (its gemm_nt's routing to gemm_nt_bt_small)
// before expanding it.
#define GEMM_PREPACK_DEFINE(SFX)                                               \
    static size_t clef_f32_gemm_pack_a_size_##SFX(int M, int K)                \
    {                                                                          \
        return gemm_pack_a_floats(M, K);                                       \
    }                                                                          \
    static size_t clef_f32_gemm_pack_b_size_##SFX(int N, int K)                \
    {                                                                          \
        return gemm_pack_b_floats(N, K);                                       \
    }                                                                          \
    static void clef_f32_gemm_pack_a_##SFX(int a_trans, int M, int K,          \
                                           const float *A, int lda, float *Ap) \
    {                                                                          \
        gemm_pack_all(gemm_pack_a_panel, GEMM_MR, (gemm_layout){a_trans, 0},   \
                      M, K, A, lda, Ap);                                       \
    }                                                                          \
    static void clef_f32_gemm_pack_b_##SFX(int b_trans, int N, int K,          \
                                           const float *B, int ldb, float *Bp) \
    {                                                                          \
        gemm_pack_all(gemm_pack_b_panel, GEMM_NR, (gemm_layout){0, b_trans},   \
                      N, K, B, ldb, Bp);                                       \
    }                                                                          \
    static int clef_f32_gemm_pa_##SFX(int b_trans, int M, int N, int K,        \
                                      const float *Ap, const float *B,         \
                                      int ldb, float *C, int ldc, int acc)     \
    {                                                                          \
        if (K == 0) {                                                          \
            gemm_empty_k(M, N, C, ldc, acc);                                   \
            return 0;                                                          \
        }                                                                      \
        return gemm_packed_pre((gemm_layout){0, b_trans}, M, N, K, NULL, 0, B, \
                               ldb, C, ldc, acc, Ap, NULL);                    \
    }                                                                          \
    static int clef_f32_gemm_pb_##SFX(int a_trans, int M, int N, int K,        \
                                      const float *A, int lda,                 \
                                      const float *Bp, float *C, int ldc,      \
                                      int acc)                                 \
    {                                                                          \
        if (K == 0) {                                                          \
            gemm_empty_k(M, N, C, ldc, acc);                                   \
            return 0;                                                          \
        }                                                                      \
        return gemm_packed_pre((gemm_layout){a_trans, 0}, M, N, K, A, lda,     \
                               NULL, 0, C, ldc, acc, NULL, Bp);                \
    }                                                                          \
    void clef_f32_gemm_nt_##SFX(int M, int N, int K, const float *A, int lda, \
                                const float *B, int ldb, float *C, int ldc,    \
                                int accumulate);                               \
    const clef_gemm_prepack clef_gemm_prepack_##SFX = {                        \
        .name = "clef_f32_gemm_prepack_" #SFX,                                 \
        .a_size = clef_f32_gemm_pack_a_size_##SFX,                             \
        .pack_a = clef_f32_gemm_pack_a_##SFX,                                  \
        .gemm_pa = clef_f32_gemm_pa_##SFX,                                     \
        .b_size = clef_f32_gemm_pack_b_size_##SFX,                             \
        .pack_b = clef_f32_gemm_pack_b_##SFX,                                  \
        .gemm_pb = clef_f32_gemm_pb_##SFX,                                     \
        .pack_bt = gemm_transpose_b,                                           \
        .gemm_nt_bt = gemm_nt_bt_entry,                                        \
        .gemm_nt = clef_f32_gemm_nt_##SFX,                                     \
    };


// ---- small shapes: no packing ----

// C (M,N) [+]= A (M,K) · B (N,K)ᵀ as dot products: tiles of R rows × NB
// columns hold R·NB vector accumulators, so each group of NB rows of B is
// read from memory once for every GEMM_DOT_R rows of A (the batch's few
// option or question rows against a large weight: bandwidth-bound). Every
// element sums K in VW-wide chunks, then the masked tail, then one
// horizontal sum, whatever R, NB or the thread count.
#define GEMM_DOT(R, NB)                                                        \
    static void dot_##R##x##NB(int K, const float *A, int lda, const float *B, \
                               int ldb, float *C, int ldc, int accum)          \
    {                                                                          \
        vf s[R][NB];                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                    \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) s[r][c] =     \
                vf_zero();                                                     \
        int kv = K / VW * VW, kt = K - kv;                                     \
        for (int k = 0; k < kv; k += VW) {                                     \
            vf b[NB];                                                          \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) b[c] =        \
                vf_load(B + (size_t)c * ldb + k);                              \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {              \
                vf a = vf_load(A + (size_t)r * lda + k);                       \
                _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) s[r][c] = \
                    vf_fma(a, b[c], s[r][c]);                                  \
            }                                                                  \
        }                                                                      \
        if (kt) {                                                              \
            vf b[NB];                                                          \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) b[c] =        \
                vf_loadn(B + (size_t)c * ldb + kv, kt);                        \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {              \
                vf a = vf_loadn(A + (size_t)r * lda + kv, kt);                 \
                _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) s[r][c] = \
                    vf_fma(a, b[c], s[r][c]);                                  \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                    \
            _Pragma("GCC unroll 4") for (int c = 0; c < NB; c++) {             \
                float v = vf_hsum(s[r][c]);                                    \
                float *cp = C + (size_t)r * ldc + c;                           \
                *cp = accum ? *cp + v : v;                                     \
            }                                                                  \
    }
GEMM_DOT(1, 4) GEMM_DOT(2, 4) GEMM_DOT(3, 4) GEMM_DOT(4, 4) GEMM_DOT(5, 4)
GEMM_DOT(6, 4) GEMM_DOT(1, 1) GEMM_DOT(2, 1) GEMM_DOT(3, 1) GEMM_DOT(4, 1)
GEMM_DOT(5, 1) GEMM_DOT(6, 1)
typedef void (*gemm_dot_fn)(int K, const float *A, int lda, const float *B,
                            int ldb, float *C, int ldc, int accum);
static const gemm_dot_fn dot_x4[7] = {NULL,    dot_1x4, dot_2x4, dot_3x4,
                                      dot_4x4, dot_5x4, dot_6x4};
static const gemm_dot_fn dot_x1[7] = {NULL,    dot_1x1, dot_2x1, dot_3x1,
                                      dot_4x1, dot_5x1, dot_6x1};

// One group of up to 4 columns of C, every row.
static void gemm_nt_group(int M, int K, const float *A, int lda,
                          const float *B, int ldb, float *C, int ldc,
                          int accum, int j, int nb)
{
    for (int i = 0; i < M; i += GEMM_DOT_R) {
        int R = M - i < GEMM_DOT_R ? M - i : GEMM_DOT_R;
        const float *a = A + (size_t)i * lda;
        float *c = C + (size_t)i * ldc + j;
        if (nb == 4) {
            dot_x4[R](K, a, lda, B + (size_t)j * ldb, ldb, c, ldc, accum);
            continue;
        }
        for (int jj = 0; jj < nb; jj++)
            dot_x1[R](K, a, lda, B + (size_t)(j + jj) * ldb, ldb, c + jj, ldc,
                      accum);
    }
}

// Column groups are independent outputs: they split across threads once the
// product is worth an OpenMP region.
static void gemm_nt_small(int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float *C, int ldc, int accum)
{
    const int ngrp = (N + 3) / 4;
    const int nth = gemm_threads(M, N, K);
    if (nth > 1 && ngrp > 1) {
#pragma omp parallel for schedule(static) num_threads(nth)
        for (int g = 0; g < ngrp; g++)
            gemm_nt_group(M, K, A, lda, B, ldb, C, ldc, accum, 4 * g,
                          N - 4 * g < 4 ? N - 4 * g : 4);
        return;
    }
    for (int g = 0; g < ngrp; g++)
        gemm_nt_group(M, K, A, lda, B, ldb, C, ldc, accum, 4 * g,
                      N - 4 * g < 4 ? N - 4 * g : 4);
}

// Small-shape row kernels: C rows [i, i + R) (R ≤ 8), columns [j, j + w)
// (w ≤ 2·VW) [+]= Σ_k a(i,k) B[k][j..], a(i,k) = A[i·sai + k·sak]. R rows run
// side by side so the FMA chains are independent (one row alone would wait
// on the FMA latency every k).
static inline vf rs_ld(const float *p, int w) { return w >= VW ? vf_load(p) : vf_loadn(p, w); }
static inline void rs_st(float *p, vf v, int w, int accum)
{
    if (accum)
        v = vf_add(rs_ld(p, w), v);
    if (w >= VW)
        vf_store(p, v);
    else
        vf_storen(p, v, w);
}

// the first n (clamped to 0..4) floats of p in an xmm, the rest zero
static inline v4f v8_lo4(const float *p, int n)
{
    switch (n < 0 ? 0 : n > 4 ? 4 : n) {
    case 4:
        return v4_load(p);
    case 3:
        return v4_movelh(v4_load2(p), v4_load1(p + 2));
    case 2:
        return v4_load2(p);
    case 1:
        return v4_load1(p);
    default:
        return v4_zero();
    }
}

// the first n (≤ 4) lanes of x to p
static inline void gemm_st4n(float *p, v4f x, int n)
{
    switch (n) {
    case 4:
        v4_store(p, x);
        break;
    case 3:
        v4_store2(p, x);
        v4_store1(p + 2, v4_movehl(x, x));
        break;
    case 2:
        v4_store2(p, x);
        break;
    default:
        v4_store1(p, x);
        break;
    }
}

// R rows × one xmm (w ≤ 4: the heads of width 4-8 split in dh = 4): 4-wide
// FMAs, and for w = 4 plain 16-byte loads and stores with no tail logic.
#define GEMM_ROWS_X4(R)                                                        \
    static void rows_x4_##R(int K, const float *A, size_t sai, size_t sak,     \
                            const float *B, int ldb, float *C, int ldc, int w, \
                            int accum)                                         \
    {                                                                          \
        v4f s[R];                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] =             \
            v4_zero();                                                  \
        if (w == 4) {                                                          \
            for (int k = 0; k < K; k++) {                                      \
                v4f b = v4_load(B + (size_t)k * ldb);                  \
                const float *a = A + k * sak;                                  \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] =     \
                    v4_fma(v4_set1(a[r * sai]), b, s[r]);            \
            }                                                                  \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {              \
                float *c = C + (size_t)r * ldc;                                \
                v4_store(c, accum ? v4_add(v4_load(c), s[r]) : s[r]); \
            }                                                                  \
            return;                                                            \
        }                                                                      \
        for (int k = 0; k < K; k++) {                                          \
            v4f b = v8_lo4(B + (size_t)k * ldb, w);                         \
            const float *a = A + k * sak;                                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] =         \
                v4_fma(v4_set1(a[r * sai]), b, s[r]);                \
        }                                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                  \
            float *c = C + (size_t)r * ldc;                                    \
            gemm_st4n(c, accum ? v4_add(v8_lo4(c, w), s[r]) : s[r], w);    \
        }                                                                      \
    }

// R rows × one vector (w ≤ VW), R a compile-time constant per instance so the
// accumulators stay in registers.
#define GEMM_ROWS_1V(R)                                                        \
    static void rows_1v_##R(int K, const float *A, size_t sai, size_t sak,     \
                            const float *B, int ldb, float *C, int ldc, int w, \
                            int accum)                                         \
    {                                                                          \
        vf s[R];                                                               \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] = vf_zero();  \
        for (int k = 0; k < K; k++) {                                          \
            vf b = rs_ld(B + (size_t)k * ldb, w);                              \
            const float *a = A + k * sak;                                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                \
                s[r] = vf_fma(vf_set1(a[r * sai]), b, s[r]);                   \
        }                                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                    \
            rs_st(C + (size_t)r * ldc, s[r], w, accum);                        \
    }
// R (≤ GEMM_ROWS_2V_MAX) rows × two vectors (VW < w ≤ 2·VW). Row k also
// prefetches the two vectors at pf + k·ldb: the strip the caller runs next
// (few-row products stream B strip by strip, and a strip walks B down its
// rows a page apart, which the hardware prefetchers do not follow).
#define GEMM_ROWS_2V(R)                                                        \
    static void rows_2v_##R(int K, const float *A, size_t sai, size_t sak,     \
                            const float *B, int ldb, float *C, int ldc, int w, \
                            int accum, const float *pf)                        \
    {                                                                          \
        vf s0[R], s1[R];                                                       \
        _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) s0[r] = s1[r] =    \
            vf_zero();                                                         \
        for (int k = 0; k < K; k++) {                                          \
            const float *bk = B + (size_t)k * ldb, *pk = pf + (size_t)k * ldb; \
            v_prefetch(pk);                                                        \
            v_prefetch(pk + VW);                                                   \
            vf b0 = vf_load(bk), b1 = rs_ld(bk + VW, w - VW);                  \
            const float *a = A + k * sak;                                      \
            _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {              \
                vf ar = vf_set1(a[r * sai]);                                   \
                s0[r] = vf_fma(ar, b0, s0[r]);                                 \
                s1[r] = vf_fma(ar, b1, s1[r]);                                 \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                  \
            rs_st(C + (size_t)r * ldc, s0[r], VW, accum);                      \
            rs_st(C + (size_t)r * ldc + VW, s1[r], w - VW, accum);             \
        }                                                                      \
    }
GEMM_ROWS_1V(1) GEMM_ROWS_1V(2) GEMM_ROWS_1V(3) GEMM_ROWS_1V(4)
GEMM_ROWS_1V(5) GEMM_ROWS_1V(6) GEMM_ROWS_1V(7) GEMM_ROWS_1V(8)
GEMM_ROWS_2V(1) GEMM_ROWS_2V(2) GEMM_ROWS_2V(3) GEMM_ROWS_2V(4)
GEMM_ROWS_2V(5) GEMM_ROWS_2V(6) GEMM_ROWS_2V(7) GEMM_ROWS_2V(8)
GEMM_ROWS_2V(9) GEMM_ROWS_2V(10) GEMM_ROWS_2V(11) GEMM_ROWS_2V(12)
GEMM_ROWS_X4(1) GEMM_ROWS_X4(2) GEMM_ROWS_X4(3) GEMM_ROWS_X4(4)
GEMM_ROWS_X4(5) GEMM_ROWS_X4(6) GEMM_ROWS_X4(7) GEMM_ROWS_X4(8)

typedef void (*gemm_rows_fn)(int K, const float *A, size_t sai, size_t sak,
                             const float *B, int ldb, float *C, int ldc, int w,
                             int accum);
static const gemm_rows_fn rows_1v[9] = {NULL,    rows_1v_1, rows_1v_2,
                                        rows_1v_3, rows_1v_4, rows_1v_5,
                                        rows_1v_6, rows_1v_7, rows_1v_8};
static const gemm_rows_fn rows_x4[9] = {NULL,    rows_x4_1, rows_x4_2,
                                        rows_x4_3, rows_x4_4, rows_x4_5,
                                        rows_x4_6, rows_x4_7, rows_x4_8};
typedef void (*gemm_rows_pf_fn)(int K, const float *A, size_t sai, size_t sak,
                                const float *B, int ldb, float *C, int ldc,
                                int w, int accum, const float *pf);
static const gemm_rows_pf_fn rows_2v[13] = {
    NULL,      rows_2v_1, rows_2v_2, rows_2v_3,  rows_2v_4,  rows_2v_5, rows_2v_6,
    rows_2v_7, rows_2v_8, rows_2v_9, rows_2v_10, rows_2v_11, rows_2v_12};

// R rows (≤ GEMM_ROWS_2V_MAX) × one strip of w (≤ 2·VW) columns, through the
// row kernel of the strip's width; the one-vector kernels hold at most 8 rows.
// pf: the next strip's B (rows_2v prefetches it; B + 2·VW when the caller's
// next strip is the adjacent one).
static void gemm_rows_call(int R, int K, const float *A, size_t sai,
                           size_t sak, const float *B, int ldb, float *C,
                           int ldc, int w, int accum, const float *pf)
{
    if (w > VW) {
        rows_2v[R](K, A, sai, sak, B, ldb, C, ldc, w, accum, pf);
        return;
    }
    for (int i = 0; i < R; i += 8) {
        int r = R - i < 8 ? R - i : 8;
        (w <= 4 ? rows_x4 : rows_1v)[r](K, A + i * sai, sai, sak, B, ldb,
                                        C + (size_t)i * ldc, ldc, w, accum);
    }
}

// Rows of C per gemm_rows_call on a strip w wide: 8 one-vector chains side
// by side (the latency of long chains, a record's T rows, is the limit),
// else as many as the two-vector kernel holds.
static inline int gemm_rows_per_call(int w)
{
    return w <= VW ? 8 : GEMM_ROWS_2V_MAX;
}

// C (M,N) [+]= Σ_k a(i,k) B[k] over all rows, gemm_rows_per_call(w) rows
// at a time. One block of up to 2·VW columns of C, every row.
static void gemm_rows_block(int M, int K, const float *A, size_t sai,
                            size_t sak, const float *B, int ldb, float *C,
                            int ldc, int accum, int j, int w)
{
    const int rb = gemm_rows_per_call(w);
    for (int i = 0; i < M; i += rb) {
        int R = M - i < rb ? M - i : rb;
        const float *a = A + i * sai;
        float *c = C + (size_t)i * ldc + j;
        gemm_rows_call(R, K, a, sai, sak, B + j, ldb, c, ldc, w, accum,
                       B + j + 2 * VW);
    }
}

static void gemm_rows_small(int M, int N, int K, const float *A, size_t sai,
                            size_t sak, const float *B, int ldb, float *C,
                            int ldc, int accum)
{
    // Few rows but possibly many columns (the batch's question rows against
    // a w×f weight): column blocks are independent outputs, so they split
    // across threads once the product is worth it, as in the packed path.
    // Small products never enter an OpenMP region (its cost is ~1 µs).
    const int nblk = (N + 2 * VW - 1) / (2 * VW);
    const int nth = gemm_threads(M, N, K);
    if (nth > 1 && nblk > 1) {
#pragma omp parallel for schedule(static) num_threads(nth)
        for (int jb = 0; jb < nblk; jb++) {
            int j = jb * 2 * VW, w = N - j < 2 * VW ? N - j : 2 * VW;
            gemm_rows_block(M, K, A, sai, sak, B, ldb, C, ldc, accum, j, w);
        }
        return;
    }
    for (int j = 0; j < N; j += 2 * VW)
        gemm_rows_block(M, K, A, sai, sak, B, ldb, C, ldc, accum, j,
                        N - j < 2 * VW ? N - j : 2 * VW);
}

// nn with few rows (the batch's rows against a large weight: dX = dY W):
// B (K,N) is the large operand and is streamed row-major, gemm_nn_kb(M) rows at
// a time (a few sequential streams the prefetchers follow, where one column
// strip over all K would jump a row of B, a new page, at every step); the
// small C (M,N) stays in cache and takes each block's partial sums. Threads
// own contiguous column ranges; every element adds its K blocks in order.
// K rows of B per block: 16 when C's rows are few (the product is a stream of
// B: a few rows at a time keep the prefetchers on it), 256 beyond 4 rows
// (FMA-bound: C tiles stay in registers longer). Measured on Zen 4 at the
// released head's weights (1024x5120, 1024x4096): M = 4 runs 2x faster at
// 16 than at 512; M = 12 1.5x faster at 256 than at 16, on 2 threads.
static int gemm_nn_kb(int M) { return M <= 4 ? 16 : 256; }

// B the few-row nn prefetches runs GEMM_NN_PF_BYTES ahead of the kernel:
// with 16-row K blocks the next strip alone (2 KiB) left B waiting on
// memory (Zen 5, M = 4, B cold: 79-94 % of oneDNN's GFLOP/s); 8 KiB (4
// strips) read it at 93-117 %, 16 KiB at 81-95 % (B misaligned by 16
// bytes). Long K blocks reach it with the next strip.
#define GEMM_NN_PF_BYTES 8192
static int nn_pf_strips(int KB)
{
    const int d = GEMM_NN_PF_BYTES / (KB * 2 * VW * (int)sizeof(float));
    return d < 1 ? 1 : d;
}
// B of the strip gemm_rows_nn_strips runs d strips after strip st of K
// block k0 in chunk [c0, c1): a later strip of the block, else one of the
// chunk's strips in the next K block, else of the next chunk (or st itself
// at the end).
static const float *nn_strip_ahead(int N, int K, const float *B, int ldb,
                                   int KB, int k0, int st, int c0, int c1,
                                   int d)
{
    int t = st + d;
    if (t < c1)
        return B + (size_t)k0 * ldb + (size_t)t * 2 * VW;
    t -= c1 - c0;
    if (k0 + KB < K)
        return B + (size_t)(k0 + KB) * ldb + (size_t)(t < c1 ? t : c0) * 2 * VW;
    t = c1 + t - c0;
    return t * 2 * VW < N ? B + (size_t)t * 2 * VW : B + (size_t)st * 2 * VW;
}

// A few-row nn whose C is one vector wide (R ≤ 4 rows, 4 < w ≤ VW) over
// K blocks of KB, two blocks side by side: each block's sums are FMA chains
// that start from zero (only their adds into C are ordered), so the pair
// gives the FMA latency twice the independent chains, then adds into C in
// block order. Each element's arithmetic is rows_1v's block by block. Ends
// after the last whole pair; returns the K it reached.
#define GEMM_NN_1V_PAIRS(R)                                                    \
    static int nn_1v_pairs_##R(int K, int KB, const float *A, int lda,         \
                               const float *B, int ldb, float *C, int ldc,     \
                               int w, int accum)                               \
    {                                                                          \
        int k0 = 0;                                                            \
        for (; k0 + 2 * KB <= K; k0 += 2 * KB) {                               \
            vf s[R], t[R];                                                     \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) s[r] = t[r] =  \
                vf_zero();                                                     \
            const float *b0 = B + (size_t)k0 * ldb,                            \
                        *b1 = b0 + (size_t)KB * ldb;                           \
            for (int k = 0; k < KB; k++) {                                     \
                vf u = rs_ld(b0 + (size_t)k * ldb, w);                         \
                vf v = rs_ld(b1 + (size_t)k * ldb, w);                         \
                const float *a = A + k0 + k;                                   \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)            \
                {                                                              \
                    s[r] = vf_fma(vf_set1(a[(size_t)r * lda]), u, s[r]);       \
                    t[r] = vf_fma(vf_set1(a[(size_t)r * lda + KB]), v, t[r]);  \
                }                                                              \
            }                                                                  \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                \
            {                                                                  \
                rs_st(C + (size_t)r * ldc, s[r], w, accum || k0 > 0);          \
                rs_st(C + (size_t)r * ldc, t[r], w, 1);                        \
            }                                                                  \
        }                                                                      \
        return k0;                                                             \
    }
GEMM_NN_1V_PAIRS(1) GEMM_NN_1V_PAIRS(2) GEMM_NN_1V_PAIRS(3) GEMM_NN_1V_PAIRS(4)
typedef int (*gemm_nn_pairs_fn)(int K, int KB, const float *A, int lda,
                                const float *B, int ldb, float *C, int ldc,
                                int w, int accum);
static const gemm_nn_pairs_fn nn_1v_pairs[5] = {
    NULL, nn_1v_pairs_1, nn_1v_pairs_2, nn_1v_pairs_3, nn_1v_pairs_4};

// Column strips [s0, s1) of a few-row nn: B block by block, C chunks in L1.
static void gemm_rows_nn_strips(int M, int N, int K, const float *A, int lda,
                                const float *B, int ldb, float *C, int ldc,
                                int accum, int s0, int s1)
{
    const int KB = gemm_nn_kb(M), pfd = nn_pf_strips(KB);
    int kp = 0; // K done by block pairs (one vector of C, at least two blocks)
    if (s0 == 0 && s1 == 1 && N > 4 && N <= VW && M >= 1 && M <= 4 &&
        K >= 2 * KB) {
        kp = nn_1v_pairs[M](K, KB, A, lda, B, ldb, C, ldc, N, accum);
        A += kp, B += (size_t)kp * ldb, K -= kp, accum = 1;
    }
    // column chunks whose C rows (M, chunk) stay in half of L2 across K
    // blocks (a single strip is one chunk whatever its size: the tiny
    // products skip the 64-bit division, an eighth of their call). Long
    // chunks make each of a K block's rows of B a long sequential read: on
    // Zen 5 with B cold, against chunks sized to half of L1, M = 4 went
    // from 87-100 % of oneDNN to 93-98 % (one chunk), M = 32 × 4096 × 1024
    // from 90-92 % to 93 %, M = 64 and 96 from 88-98 % to 88-101 %. The bits
    // are the same: every element adds its K blocks in order either way.
    int cs = s1 - s0;
    if (s1 - s0 > 1) {
        cs = (int)(clef_cpu_l2() / 2 / (sizeof(float) * 2 * VW * M));
        cs = cs < 1 ? 1 : cs;
    }
    for (int c0 = s0; c0 < s1; c0 += cs) {
        const int c1 = s1 - c0 < cs ? s1 : c0 + cs;
        for (int k0 = 0; k0 < K; k0 += KB) {
            const int kb = K - k0 < KB ? K - k0 : KB;
            const int acc = accum || k0 > 0;
            for (int st = c0; st < c1; st++) {
                int j = st * 2 * VW, w = N - j < 2 * VW ? N - j : 2 * VW;
                const float *pf =
                    nn_strip_ahead(N, K, B, ldb, KB, k0, st, c0, c1, pfd);
                // ng row groups of nearly equal size, q rows then q + 1
                // (32 rows: 10 + 11 + 11, not 12 + 12 + 8), the last
                // group's kernel as full as the others (Zen 5, B cold, six
                // alternated runs: M = 32 went from 85.9-93.1 % of oneDNN
                // to 91.3-96.2 %)
                const int rb = gemm_rows_per_call(w), ng = (M + rb - 1) / rb;
                const int q = M / ng, big = ng - M % ng;
                for (int g = 0, i = 0, R; i < M; i += R, g++) {
                    R = g < big ? q : q + 1;
                    gemm_rows_call(R, kb, A + (size_t)i * lda + k0,
                                   (size_t)lda, 1, B + (size_t)k0 * ldb + j,
                                   ldb, C + (size_t)i * ldc + j, ldc, w, acc,
                                   pf);
                }
            }
        }
    }
}

// Threads own contiguous strip ranges; small products never enter an OpenMP
// region (its cost is ~1 µs).
static void gemm_rows_small_nn(int M, int N, int K, const float *A, int lda,
                               const float *B, int ldb, float *C, int ldc,
                               int accum)
{
    const int nstrip = (N + 2 * VW - 1) / (2 * VW);
    if (nstrip == 1 && K <= gemm_nn_kb(M)) {
        // one strip, one K block (the tiny heads' dX = dY W): the strips
        // loop's only iteration, without its setup
        const int rb = gemm_rows_per_call(N);
        for (int i = 0; i < M; i += rb)
            gemm_rows_call(M - i < rb ? M - i : rb, K, A + (size_t)i * lda,
                           (size_t)lda, 1, B, ldb, C + (size_t)i * ldc, ldc, N,
                           accum, B + 2 * VW);
        return;
    }
    const int nth = gemm_threads(M, N, K);
    if (nth <= 1 || nstrip <= 1) {
        gemm_rows_nn_strips(M, N, K, A, lda, B, ldb, C, ldc, accum, 0, nstrip);
        return;
    }
#pragma omp parallel num_threads(nth)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        gemm_rows_nn_strips(M, N, K, A, lda, B, ldb, C, ldc, accum,
                            (int)((long)nstrip * t / nt),
                            (int)((long)nstrip * (t + 1) / nt));
    }
}

// tn with a short reduction (the batch's rows: dW (M,N) += dYᵀ X): the
// large operand is C itself, so it is walked row-major, a block of rows at a
// time over every column (a column-strip walk would jump a whole row of C,
// a new page, at every step). Row blocks are independent outputs and split
// across threads; each element sums K in order in registers, then adds to C.
// Rows of a short-K tn side by side: 8 when C is one vector wide (rows_1v),
// else as many as the two-vector kernel holds in registers.
static int gemm_tn_rows(int N)
{
    return N <= VW || GEMM_ROWS_2V_MAX > 8 ? 8 : GEMM_ROWS_2V_MAX;
}

// Row block ib (gemm_tn_rows(N) rows) of a short-K tn, every column.
static void gemm_rows_tn_block(int M, int N, int K, const float *A, size_t sak,
                               const float *B, int ldb, float *C, int ldc,
                               int accum, int ib)
{
    const int rb = gemm_tn_rows(N), i = ib * rb, R = M - i < rb ? M - i : rb;
    for (int j = 0; j < N; j += 2 * VW) {
        int w = N - j < 2 * VW ? N - j : 2 * VW;
        gemm_rows_call(R, K, A + i, 1, sak, B + j, ldb,
                       C + (size_t)i * ldc + j, ldc, w, accum, B + j + 2 * VW);
    }
}

// Full 8-row blocks [0, nb) of a short-K tn whose C is one vector wide
// (4 < N ≤ VW) in one loop: rows_1v_8's arithmetic block by block, without
// its call per block, which cost about as much as the block at K ≤ 8 (the
// tiny heads' memory gradients, T rows).
static void gemm_tn_1v_blocks(int nb, int N, int K, const float *A, size_t sak,
                              const float *B, int ldb, float *C, int ldc,
                              int accum)
{
    for (int ib = 0; ib < nb; ib++) {
        const float *a0 = A + (size_t)ib * 8;
        float *c = C + (size_t)ib * 8 * ldc;
        vf s[8];
        _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) s[r] = vf_zero();
        for (int k = 0; k < K; k++) {
            vf b = rs_ld(B + (size_t)k * ldb, N);
            const float *a = a0 + k * sak;
            _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) s[r] =
                vf_fma(vf_set1(a[r]), b, s[r]);
        }
        _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++)
            rs_st(c + (size_t)r * ldc, s[r], N, accum);
    }
}

static void gemm_rows_small_tn(int M, int N, int K, const float *A, size_t sak,
                               const float *B, int ldb, float *C, int ldc,
                               int accum)
{
    const int nblk = (M + gemm_tn_rows(N) - 1) / gemm_tn_rows(N);
    const int nth = gemm_threads(M, N, K);
    if (nth <= 1 || nblk <= 1) {
        int ib = 0;
        if (N > 4 && N <= VW && gemm_tn_rows(N) == 8) {
            ib = M / 8;
            gemm_tn_1v_blocks(ib, N, K, A, sak, B, ldb, C, ldc, accum);
        }
        for (; ib < nblk; ib++)
            gemm_rows_tn_block(M, N, K, A, sak, B, ldb, C, ldc, accum, ib);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(nth)
    for (int ib = 0; ib < nblk; ib++)
        gemm_rows_tn_block(M, N, K, A, sak, B, ldb, C, ldc, accum, ib);
}

// nt with a short reduction (K ≤ 32) and few columns: Bᵀ (K,N) goes to a
// small stack buffer (a plain transpose, not panel packing) and the row
// kernels run on it; dot products with horizontal sums would cost more.
#define GEMM_NT_T_MAX 4096
// Rows [0, kn) (kn ≤ 8) of Bᵀ for 8 rows of B (ld ldb, the first kn floats
// read): an 8x8 register transpose, stored to bt (ld N).
static inline void nt_t8(const float *B, int ldb, int kn, float *bt, int N)
{
    v8f r[8];
    for (int i = 0; i < 8; i++) {
        const float *row = B + (size_t)i * ldb;
        r[i] = kn == 8 ? v8_load(row)
                       : v8_hilo(v8_lo4(row + 4, kn - 4), v8_lo4(row, kn));
    }
    transpose8(r);
    for (int k = 0; k < kn; k++)
        v8_store(bt + (size_t)k * N, r[k]);
}

#if VW == 8
// nt with 8 columns and K ≤ 8 on 8-lane vectors (the tiny heads' w × w
// weights): Bᵀ stays in the registers of its transpose, and each row of C
// is rows_1v's FMA chain over them (k ascending from zero, then the add
// into C), without the stack copy, its reload and the row kernels' calls.
static void gemm_nt_n8_regs(int M, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accum)
{
    v8f r[8];
    for (int i = 0; i < 8; i++) {
        const float *row = B + (size_t)i * ldb;
        r[i] = K == 8 ? v8_load(row)
                      : v8_hilo(v8_lo4(row + 4, K - 4), v8_lo4(row, K));
    }
    transpose8(r); // r[k] = row k of Bᵀ
    for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * lda;
        vf s = vf_zero();
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) if (k < K) s =
            vf_fma(vf_set1(a[k]), r[k], s);
        rs_st(C + (size_t)i * ldc, s, 8, accum);
    }
}
#endif

// bt (K, N) = Bᵀ for B (N, K), any K: register transposes of 4, 8 or VW
// rows of B at a time, element copies for the last columns. (The small nt
// calls it for K ≤ 32, its stack buffer's bound; pack_bt for any K.)
static void gemm_transpose_b(int N, int K, const float *B, int ldb, float *bt)
{
    int j = 0;
    if (K <= 4) // 4 rows of B at a time through a 4x4 register transpose
        for (; j + 4 <= N; j += 4) {
            const float *b0 = B + (size_t)j * ldb;
            v4f r0 = v8_lo4(b0, K), r1 = v8_lo4(b0 + ldb, K);
            v4f r2 = v8_lo4(b0 + 2 * (size_t)ldb, K), r3 = v8_lo4(b0 + 3 * (size_t)ldb, K);
            V4_TRANSPOSE(r0, r1, r2, r3);
            float *d = bt + j;
            switch (K) { // rows k ≥ K of the transpose are zero: not stored
            case 4:
                v4_store(d + 3 * (size_t)N, r3);
                /* fall through */
            case 3:
                v4_store(d + 2 * (size_t)N, r2);
                /* fall through */
            case 2:
                v4_store(d + (size_t)N, r1);
                /* fall through */
            default:
                v4_store(d, r0);
            }
        }
    else {
        // K a multiple of 8: VW rows of B per register tile, so that each
        // row of Bᵀ is written as whole vectors, the ones the row kernels
        // load next (two 8-float stores under one 16-float load cannot be
        // forwarded: on AVX-512 the load waited for both to reach L1)
        if (K % 8 == 0)
            for (; j + VW <= N; j += VW)
                for (int k0 = 0; k0 < K; k0 += 8)
                    vf_tile_in(B + (size_t)j * ldb + k0, (size_t)ldb,
                               bt + (size_t)k0 * N + j, (size_t)N);
        // 8 rows of B at a time through an 8x8 register transpose, per
        // block of 8 columns of B (the last one partial)
        for (; j + 8 <= N; j += 8)
            for (int k0 = 0; k0 < K; k0 += 8)
                nt_t8(B + (size_t)j * ldb + k0, ldb, K - k0 < 8 ? K - k0 : 8,
                      bt + (size_t)k0 * N + j, N);
    }
    for (; j < N; j++)
        for (int k = 0; k < K; k++)
            bt[(size_t)k * N + j] = B[(size_t)j * ldb + k];
}

// The small nt's condition on its stack transpose: K ≤ 32, Bᵀ within it.
static int gemm_nt_t_fits(int N, int K)
{
    return K <= 32 && (size_t)N * K <= GEMM_NT_T_MAX;
}

static int gemm_nt_small_t(int M, int N, int K, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc, int accum)
{
    if (!gemm_nt_t_fits(N, K))
        return -1;
#if VW == 8
    if (N == 8 && K <= 8) {
        gemm_nt_n8_regs(M, K, A, lda, B, ldb, C, ldc, accum);
        return 0;
    }
#endif
    _Alignas(64) float bt[GEMM_NT_T_MAX]; // Bᵀ (K, N)
    gemm_transpose_b(N, K, B, ldb, bt);
    gemm_rows_small(M, N, K, A, (size_t)lda, 1, bt, N, C, ldc, accum);
    return 0;
}

// gemm_nt_small_t's product on a Bᵀ transposed beforehand (ld ldbt): the
// same row kernels on the same values (gemm_nt_n8_regs' chains are theirs
// too), so the same bits. -1 where gemm_nt_small_t would not run.
static int gemm_nt_bt_small(int M, int N, int K, const float *A, int lda,
                            const float *Bt, int ldbt, float *C, int ldc,
                            int accum)
{
    if (!gemm_nt_t_fits(N, K))
        return -1;
    gemm_rows_small(M, N, K, A, (size_t)lda, 1, Bt, ldbt, C, ldc, accum);
    return 0;
}

// Small-shape rule, shared by the three layouts: the packed path pays off
// once there is at least a few tiles' worth of work in every dimension.
// nt and nn with at most this many rows skip packing: packing the large B
// (a weight) costs as much as the product itself when C has a few dozen rows
// (the batch's questions and options), and the skinny kernels read B in
// memory order; on 2 threads each thread of a one-KC packed product would
// also pack the whole weight. The bound of 96 rows and what it gained:
// docs/PERF-NOTES.md, "GEMM paths".
#define GEMM_SKINNY_M 96
static inline int gemm_is_skinny(int M) { return M <= GEMM_SKINNY_M; }

static int gemm_is_small(int M, int N, int K)
{
    return M < GEMM_MR || N < 16 || K < 16 || (double)M * N * K < 32.0 * 32 * 32;
}

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
//
// Files, included here in this order (none is a header of its own):
//   tmpl_gemm_pack.h     panel packing of op(A) and op(B)
//   (this file)          blocking, threads, the packing buffer, the loops
//   tmpl_gemm_prepack.h  operands packed once for many products
//   tmpl_gemm_dot.h      small nt: dot products
//   tmpl_gemm_rows.h     small and skinny nn and tn: row kernels
//   tmpl_gemm_nt_t.h     small nt on a transposed Bᵀ, through the row kernels
//   (this file)          the rule that picks the small path
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

#include "backends/x86/tmpl_gemm_pack.h"

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
                accum ? C[(size_t)i * ldc + j] + t[i * GEMM_NR + j]
                      : t[i * GEMM_NR + j];
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
        const float *Bk =
            bf.preB ? bf.preB + (size_t)p0 * npan_all * GEMM_NR : NULL;
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
    gemm_bufs bf = {
        .Bp = buf, .Ap = buf + bn, .astride = an, .preA = preA, .preB = preB};
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
    return gemm_packed_pre(L, M, N, K, A, lda, B, ldb, C, ldc, accumulate, NULL,
                           NULL);
}

// ---- pre-packed operands (kernels.h, clef_gemm_prepack) ----
#include "backends/x86/tmpl_gemm_prepack.h"

// ---- small shapes: no packing ----
#include "backends/x86/tmpl_gemm_dot.h"
#include "backends/x86/tmpl_gemm_rows.h"
#include "backends/x86/tmpl_gemm_nt_t.h"

// Small-shape rule, shared by the three layouts: the packed path pays off
// once there is at least a few tiles' worth of work in every dimension.
// nt and nn with at most this many rows skip packing: packing the large B
// (a weight) costs as much as the product itself when C has a few dozen rows
// (the batch's questions and options), and the skinny kernels read B in
// memory order; on 2 threads each thread of a one-KC packed product would
// also pack the whole weight. The bound of 96 rows and what it gained:
// docs/PERF-NOTES.md, "GEMM paths".
#define GEMM_SKINNY_M 96
static inline int gemm_is_skinny(int M)
{
    return M <= GEMM_SKINNY_M;
}

static int gemm_is_small(int M, int N, int K)
{
    return M < GEMM_MR || N < 16 || K < 16 ||
           (double)M * N * K < 32.0 * 32 * 32;
}

// The small and skinny nn and tn paths: row kernels vectorised over N, no
// packing (backends/x86/tmpl_gemm.h, which includes this file; not a header
// of its own).

// Small-shape row kernels: C rows [i, i + R) (R ≤ 8), columns [j, j + w)
// (w ≤ 2·VW) [+]= Σ_k a(i,k) B[k][j..], a(i,k) = A[i·sai + k·sak]. R rows run
// side by side so the FMA chains are independent (one row alone would wait
// on the FMA latency every k).
static inline vf rs_ld(const float *p, int w)
{
    return w >= VW ? vf_load(p) : vf_loadn(p, w);
}
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
        v4f s[R];                                                              \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] = v4_zero();  \
        if (w == 4) {                                                          \
            for (int k = 0; k < K; k++) {                                      \
                v4f b = v4_load(B + (size_t)k * ldb);                          \
                const float *a = A + k * sak;                                  \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] =     \
                    v4_fma(v4_set1(a[r * sai]), b, s[r]);                      \
            }                                                                  \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                \
            {                                                                  \
                float *c = C + (size_t)r * ldc;                                \
                v4_store(c, accum ? v4_add(v4_load(c), s[r]) : s[r]);          \
            }                                                                  \
            return;                                                            \
        }                                                                      \
        for (int k = 0; k < K; k++) {                                          \
            v4f b = v8_lo4(B + (size_t)k * ldb, w);                            \
            const float *a = A + k * sak;                                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] =         \
                v4_fma(v4_set1(a[r * sai]), b, s[r]);                          \
        }                                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                    \
        {                                                                      \
            float *c = C + (size_t)r * ldc;                                    \
            gemm_st4n(c, accum ? v4_add(v8_lo4(c, w), s[r]) : s[r], w);        \
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
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s[r] =         \
                vf_fma(vf_set1(a[r * sai]), b, s[r]);                          \
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
        _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) s0[r] = s1[r] =   \
            vf_zero();                                                         \
        for (int k = 0; k < K; k++) {                                          \
            const float *bk = B + (size_t)k * ldb, *pk = pf + (size_t)k * ldb; \
            v_prefetch(pk);                                                    \
            v_prefetch(pk + VW);                                               \
            vf b0 = vf_load(bk), b1 = rs_ld(bk + VW, w - VW);                  \
            const float *a = A + k * sak;                                      \
            _Pragma("GCC unroll 12") for (int r = 0; r < R; r++)               \
            {                                                                  \
                vf ar = vf_set1(a[r * sai]);                                   \
                s0[r] = vf_fma(ar, b0, s0[r]);                                 \
                s1[r] = vf_fma(ar, b1, s1[r]);                                 \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 12") for (int r = 0; r < R; r++)                   \
        {                                                                      \
            rs_st(C + (size_t)r * ldc, s0[r], VW, accum);                      \
            rs_st(C + (size_t)r * ldc + VW, s1[r], w - VW, accum);             \
        }                                                                      \
    }
// (instances without semicolons, then the declaration after them)
// clang-format off
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
// clang-format on
static const gemm_rows_fn rows_1v[9] = {NULL,      rows_1v_1, rows_1v_2,
                                        rows_1v_3, rows_1v_4, rows_1v_5,
                                        rows_1v_6, rows_1v_7, rows_1v_8};
static const gemm_rows_fn rows_x4[9] = {NULL,      rows_x4_1, rows_x4_2,
                                        rows_x4_3, rows_x4_4, rows_x4_5,
                                        rows_x4_6, rows_x4_7, rows_x4_8};
typedef void (*gemm_rows_pf_fn)(int K, const float *A, size_t sai, size_t sak,
                                const float *B, int ldb, float *C, int ldc,
                                int w, int accum, const float *pf);
static const gemm_rows_pf_fn rows_2v[13] = {
    NULL,       rows_2v_1,  rows_2v_2, rows_2v_3, rows_2v_4,
    rows_2v_5,  rows_2v_6,  rows_2v_7, rows_2v_8, rows_2v_9,
    rows_2v_10, rows_2v_11, rows_2v_12};

// R rows (≤ GEMM_ROWS_2V_MAX) × one strip of w (≤ 2·VW) columns, through the
// row kernel of the strip's width; the one-vector kernels hold at most 8 rows.
// pf: the next strip's B (rows_2v prefetches it; B + 2·VW when the caller's
// next strip is the adjacent one).
static void gemm_rows_call(int R, int K, const float *A, size_t sai, size_t sak,
                           const float *B, int ldb, float *C, int ldc, int w,
                           int accum, const float *pf)
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
static int gemm_nn_kb(int M)
{
    return M <= 4 ? 16 : 256;
}

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
// (instances without semicolons, then the declaration after them)
// clang-format off
GEMM_NN_1V_PAIRS(1) GEMM_NN_1V_PAIRS(2) GEMM_NN_1V_PAIRS(3) GEMM_NN_1V_PAIRS(4)
typedef int (*gemm_nn_pairs_fn)(int K, int KB, const float *A, int lda,
                                const float *B, int ldb, float *C, int ldc,
                                int w, int accum);
// clang-format on
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
                    gemm_rows_call(R, kb, A + (size_t)i * lda + k0, (size_t)lda,
                                   1, B + (size_t)k0 * ldb + j, ldb,
                                   C + (size_t)i * ldc + j, ldc, w, acc, pf);
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
    if (K <= 0) { // the strips' K loop would leave C as it was
        clef_gemm_empty_sum(M, N, C, ldc, accum);
        return;
    }
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
        gemm_rows_call(R, K, A + i, 1, sak, B + j, ldb, C + (size_t)i * ldc + j,
                       ldc, w, accum, B + j + 2 * VW);
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

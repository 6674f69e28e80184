// Operands packed once for many products (kernels.h, clef_gemm_prepack),
// in the packed path's own layout (backends/x86/tmpl_gemm.h, which includes
// this file; not a header of its own).

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
    static int clef_f32_gemm_pb_##SFX(                                         \
        int a_trans, int M, int N, int K, const float *A, int lda,             \
        const float *Bp, float *C, int ldc, int acc)                           \
    {                                                                          \
        if (K == 0) {                                                          \
            gemm_empty_k(M, N, C, ldc, acc);                                   \
            return 0;                                                          \
        }                                                                      \
        return gemm_packed_pre((gemm_layout){a_trans, 0}, M, N, K, A, lda,     \
                               NULL, 0, C, ldc, acc, NULL, Bp);                \
    }                                                                          \
    void clef_f32_gemm_nt_##SFX(int M, int N, int K, const float *A, int lda,  \
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

// GEMM on oneDNN's matmul primitive, one primitive per (layout, M, N, K,
// leading dimensions, accumulate), cached.
//
// Layouts as strided memory descriptors (row-major, ld in floats):
//   gemm_nt  src A (M,K) strides {lda,1}   weights Bᵀ: (K,N) strides {1,ldb}
//   gemm_nn  src A (M,K) strides {lda,1}   weights B:  (K,N) strides {ldb,1}
//   gemm_tn  src Aᵀ: (M,K) strides {1,lda} weights B:  (K,N) strides {ldb,1}
//   dst C (M,N) strides {ldc,1}
// accumulate = 1 appends a sum post-op (C = A·B + 1·C).
// The bf16 GEMMs (kernels.h gemm_bf16_*) are the same primitives with bf16
// src and weights (ld in bf16 values) and an f32 dst: oneDNN picks its AMX
// or AVX512-BF16 brgemm kernels where the CPU has them.
//
// Threads: each primitive runs on one thread (onednn_int.h). A GEMM of at
// least SERIAL_FLOPS is cut into blocks of C, along the longer of M and N,
// whose sizes follow from the shape alone (gemm_blocks); clef's team runs
// them, each on one thread. So every output element is summed by the same
// primitive in the same order for any thread count, inside a parallel region
// or not.
#include "onednn_int.h"
#include "par.h"

#include <string.h>

// Below 2^18 flops a team of threads costs more than it saves: one block.
#define SERIAL_FLOPS 262144.0
// About one block per BLOCK_FLOPS (large against a call's own cost), at
// most MAX_BLOCKS (each block packs its share of the other operand again),
// each a multiple of 64 rows or columns (oneDNN's N block on AVX-512: other
// widths leave a tail in every block), or of 16 for dimensions under 128.
// The measurements behind these: docs/PERF-NOTES.md, "Library backends".
#define BLOCK_FLOPS 8388608.0 // 2^23
#define MAX_BLOCKS 8
#define BLOCK_ALIGN 64
#define BLOCK_ALIGN_SMALL 16

enum { MD_SRC, MD_WEI, MD_DST };

// The f32 layout of a kind (ONEDNN_GEMM_NT/NN/TN) and whether it is bf16.
static int is_bf16(int kind)
{
    return kind >= ONEDNN_GEMM_BF16_NT && kind <= ONEDNN_GEMM_BF16_TN;
}

static int layout_of(int kind)
{
    return is_bf16(kind) ? ONEDNN_GEMM_NT + (kind - ONEDNN_GEMM_BF16_NT) : kind;
}

static int build_matmul(clef_onednn_prim *p)
{
    const clef_onednn_key *k = &p->key;
    int64_t M = k->d[0], N = k->d[1], K = k->d[2];
    int64_t lda = k->d[3], ldb = k->d[4], ldc = k->d[5];
    dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
    dnnl_dims_t ss = {lda, 1}, ws = {ldb, 1}, ds = {ldc, 1};
    const int layout = layout_of(k->kind);
    const dnnl_data_type_t in = is_bf16(k->kind) ? dnnl_bf16 : dnnl_f32;
    if (layout == ONEDNN_GEMM_NT)
        ws[0] = 1, ws[1] = ldb;
    if (layout == ONEDNN_GEMM_TN)
        ss[0] = 1, ss[1] = lda;
    if (dnnl_memory_desc_init_by_strides(&p->md[MD_SRC], 2, sd, in, ss) ||
        dnnl_memory_desc_init_by_strides(&p->md[MD_WEI], 2, wd, in, ws) ||
        dnnl_memory_desc_init_by_strides(&p->md[MD_DST], 2, dd, dnnl_f32, ds))
        return -1;

    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &p->md[MD_SRC], &p->md[MD_WEI], NULL,
                              &p->md[MD_DST]) != dnnl_success)
        return -1;

    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    int rc = -1;
    if (k->accumulate) {
        if (dnnl_primitive_attr_create(&attr) != dnnl_success ||
            dnnl_post_ops_create(&po) != dnnl_success ||
            dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success ||
            dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
            goto cleanup;
    }
    rc = clef_onednn_create(p, &desc, attr, NULL);
cleanup:
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return rc;
}

// The blocks of a GEMM (a function of the shape only): *len rows (split_n
// 0) or columns (split_n 1) each, the last one shorter; returns the count.
static int gemm_blocks(int M, int N, int K, int *split_n, int *len)
{
    const double flops = 2.0 * M * N * K;
    const int dim = N >= M ? N : M;
    const int align = dim >= 2 * BLOCK_ALIGN ? BLOCK_ALIGN : BLOCK_ALIGN_SMALL;
    *split_n = N >= M;
    *len = dim;
    if (flops < SERIAL_FLOPS || dim < 2 * align)
        return 1;
    double want = flops / BLOCK_FLOPS;
    int nb = want < MAX_BLOCKS ? (int)want : MAX_BLOCKS;
    if (nb < 2)
        nb = 2; // over the serial threshold: worth two threads
    int b = (dim + nb - 1) / nb;
    b = (b + align - 1) / align * align;
    *len = b;
    return (dim + b - 1) / b;
}

// One GEMM call cut into blocks: the operands, the split, and the held
// primitives of a whole block and of the last one (the same when it is
// whole; NULL when oneDNN refused the shape).
typedef struct gemm_job {
    int kind, M, N, K, lda, ldb, ldc, accumulate;
    int layout; // ONEDNN_GEMM_NT/NN/TN
    size_t esz; // bytes of an element of A and B (4, or 2 for bf16)
    const char *A, *B;
    float *C;
    int nb, split_n, len;
    clef_onednn_prim *whole, *last;
} gemm_job;

static clef_onednn_prim *acquire(const gemm_job *j, int M, int N)
{
    clef_onednn_key key;
    memset(&key, 0, sizeof key);
    key.kind = j->kind;
    key.accumulate = j->accumulate != 0;
    key.d[0] = M, key.d[1] = N, key.d[2] = j->K;
    key.d[3] = j->lda, key.d[4] = j->ldb, key.d[5] = j->ldc;
    return clef_onednn_acquire(&key, build_matmul);
}

// C (M,N) = [C +] op(A)·op(B) with p on this thread alone, else (oneDNN
// refused the shape) with the best hand-written kernel.
static void gemm_run(const gemm_job *j, const clef_onednn_prim *p, int M, int N,
                     const char *A, const char *B, float *C)
{
    int rc = -1;
    if (p) {
        clef_onednn_arg args[] = {
            {DNNL_ARG_SRC, MD_SRC, (void *)A},
            {DNNL_ARG_WEIGHTS, MD_WEI, (void *)B},
            {DNNL_ARG_DST, MD_DST, C},
        };
        int saved = clef_onednn_threads_begin();
        rc = clef_onednn_run(p, 3, args);
        clef_onednn_threads_end(saved);
    }
    if (rc == 0)
        return;
    const clef_kernels *f = clef_onednn_fallback();
    if (is_bf16(j->kind)) {
        clef_gemm_bf16_fn fn = j->layout == ONEDNN_GEMM_NT   ? f->gemm_bf16_nt
                               : j->layout == ONEDNN_GEMM_NN ? f->gemm_bf16_nn
                                                             : f->gemm_bf16_tn;
        fn(M, N, j->K, (const uint16_t *)A, j->lda, (const uint16_t *)B, j->ldb,
           C, j->ldc, j->accumulate);
        return;
    }
    clef_gemm_fn fn = j->layout == ONEDNN_GEMM_NT   ? f->gemm_nt
                      : j->layout == ONEDNN_GEMM_NN ? f->gemm_nn
                                                    : f->gemm_tn;
    fn(M, N, j->K, (const float *)A, j->lda, (const float *)B, j->ldb, C,
       j->ldc, j->accumulate);
}

// Block i: its rows or columns of C, and of A or B.
static void gemm_block(const gemm_job *j, int i)
{
    const clef_onednn_prim *p = i == j->nb - 1 ? j->last : j->whole;
    const size_t o = (size_t)i * j->len;
    if (j->split_n) { // C (M, n) = op(A) · op(B)[:, o:o+n]
        const int n = i == j->nb - 1 ? j->N - (int)o : j->len;
        const char *B =
            j->B + (j->layout == ONEDNN_GEMM_NT ? o * j->ldb : o) * j->esz;
        gemm_run(j, p, j->M, n, j->A, B, j->C + o);
    } else { // C (m, N) = op(A)[o:o+m, :] · op(B)
        const int m = i == j->nb - 1 ? j->M - (int)o : j->len;
        const char *A =
            j->A + (j->layout == ONEDNN_GEMM_TN ? o : o * j->lda) * j->esz;
        gemm_run(j, p, m, j->N, A, j->B, j->C + o * j->ldc);
    }
}

// C (M,N) = [C +] op(A)·op(B) for the layout `kind`; see the table above.
static void gemm_onednn(int kind, int M, int N, int K, const void *A, int lda,
                        const void *B, int ldb, float *C, int ldc,
                        int accumulate)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) { // the empty sum
        clef_gemm_empty_sum(M, N, C, ldc, accumulate);
        return;
    }
    gemm_job j = {.kind = kind,
                  .M = M,
                  .N = N,
                  .K = K,
                  .lda = lda,
                  .ldb = ldb,
                  .ldc = ldc,
                  .accumulate = accumulate,
                  .layout = layout_of(kind),
                  .esz = is_bf16(kind) ? sizeof(uint16_t) : sizeof(float),
                  .A = A,
                  .B = B,
                  .C = C};
    j.nb = gemm_blocks(M, N, K, &j.split_n, &j.len);
    const int dim = j.split_n ? N : M, rest = dim - (j.nb - 1) * j.len;
    j.whole = acquire(&j, j.split_n ? M : j.len, j.split_n ? j.len : N);
    j.last = rest == j.len
                 ? j.whole
                 : acquire(&j, j.split_n ? M : rest, j.split_n ? rest : N);
    // each block writes its own part of C; no region of one thread, none
    // nested (backends/par.h)
    CLEF_PAR_FOR(j.nb > 1, int, i, j.nb, gemm_block(&j, i););
    if (j.last != j.whole)
        clef_onednn_release(j.last);
    clef_onednn_release(j.whole);
}

void clef_f32_gemm_nt__onednn(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate)
{
    gemm_onednn(ONEDNN_GEMM_NT, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_nn__onednn(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate)
{
    gemm_onednn(ONEDNN_GEMM_NN, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_f32_gemm_tn__onednn(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate)
{
    gemm_onednn(ONEDNN_GEMM_TN, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void clef_bf16_gemm_nt__onednn(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    gemm_onednn(ONEDNN_GEMM_BF16_NT, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate);
}

void clef_bf16_gemm_nn__onednn(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    gemm_onednn(ONEDNN_GEMM_BF16_NN, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate);
}

void clef_bf16_gemm_tn__onednn(int M, int N, int K, const uint16_t *A, int lda,
                               const uint16_t *B, int ldb, float *C, int ldc,
                               int accumulate)
{
    gemm_onednn(ONEDNN_GEMM_BF16_TN, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate);
}

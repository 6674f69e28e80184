// GEMM on oneDNN's matmul primitive, one primitive per (layout, M, N, K,
// leading dimensions, accumulate), cached.
//
// Layouts as strided memory descriptors (row-major, ld in floats):
//   gemm_nt  src A (M,K) strides {lda,1}   weights Bᵀ: (K,N) strides {1,ldb}
//   gemm_nn  src A (M,K) strides {lda,1}   weights B:  (K,N) strides {ldb,1}
//   gemm_tn  src Aᵀ: (M,K) strides {1,lda} weights B:  (K,N) strides {ldb,1}
//   dst C (M,N) strides {ldc,1}
// accumulate = 1 appends a sum post-op (C = A·B + 1·C).
#include "onednn_int.h"

#include <string.h>

enum { MD_SRC, MD_WEI, MD_DST };

static int build_matmul(clef_onednn_prim *p)
{
    const clef_onednn_key *k = &p->key;
    int64_t M = k->d[0], N = k->d[1], K = k->d[2];
    int64_t lda = k->d[3], ldb = k->d[4], ldc = k->d[5];
    dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
    dnnl_dims_t ss = {lda, 1}, ws = {ldb, 1}, ds = {ldc, 1};
    if (k->kind == ONEDNN_GEMM_NT)
        ws[0] = 1, ws[1] = ldb;
    if (k->kind == ONEDNN_GEMM_TN)
        ss[0] = 1, ss[1] = lda;
    if (dnnl_memory_desc_init_by_strides(&p->md[MD_SRC], 2, sd, dnnl_f32, ss) ||
        dnnl_memory_desc_init_by_strides(&p->md[MD_WEI], 2, wd, dnnl_f32, ws) ||
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
    rc = clef_onednn_create(&p->prim, &desc, attr, NULL);
cleanup:
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return rc;
}

// C (M,N) = [C +] op(A)·op(B) for the layout `kind`; see the table above.
static void gemm_onednn(int kind, int M, int N, int K, const float *A,
                        int lda, const float *B, int ldb, float *C, int ldc,
                        int accumulate)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) { // empty sum: C = 0 or C unchanged
        if (!accumulate)
            for (int i = 0; i < M; i++)
                memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    clef_onednn_key key;
    memset(&key, 0, sizeof key);
    key.kind = kind;
    key.accumulate = accumulate != 0;
    key.d[0] = M, key.d[1] = N, key.d[2] = K;
    key.d[3] = lda, key.d[4] = ldb, key.d[5] = ldc;

    int saved =
        clef_onednn_threads_begin(2.0 * M * N * K < ONEDNN_SERIAL_FLOPS);
    clef_onednn_prim *p = clef_onednn_acquire(&key, build_matmul);
    int rc = -1;
    if (p) {
        clef_onednn_arg args[] = {
            {DNNL_ARG_SRC, &p->md[MD_SRC], A},
            {DNNL_ARG_WEIGHTS, &p->md[MD_WEI], B},
            {DNNL_ARG_DST, &p->md[MD_DST], C},
        };
        rc = clef_onednn_run(p, 3, args);
        clef_onednn_release(p);
    }
    clef_onednn_threads_end(saved);
    if (rc == 0)
        return;
    // oneDNN refused this shape: the best hand-written kernel does it.
    const clef_kernels *f = clef_onednn_fallback();
    clef_gemm_fn fn = kind == ONEDNN_GEMM_NT   ? f->gemm_nt
                      : kind == ONEDNN_GEMM_NN ? f->gemm_nn
                                               : f->gemm_tn;
    fn(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
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

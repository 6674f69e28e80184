// GEMM: the memory projection, the head's largest linear layer.
//   gemm_nt  M = X W_mᵀ      M=T, N=w, K=d   (forward)
//   gemm_nn  dX = dM W_m     M=T, N=d, K=w   (backward, input gradient)
//   gemm_tn  dW_m = dMᵀ X    M=w, N=d, K=T   (backward, weight gradient)
// Each case calls the kernel twice: C = op(A)op(B) (accumulate 0, C
// prefilled with NaN: a kernel that reads C fails) and Cacc += op(A)op(B).
// Integer fills make every partial sum exact: GEMM compares exactly.
#include "case.h"

#include <stdio.h>

typedef struct bench_gemm {
    int M, N, K;
    float *A, *B, *C, *Cacc;
    int lda, ldb, ldc; // C and Cacc share ldc
} bench_gemm;

// a_trans: A is (K, M) as in gemm_tn; b_trans: B is (N, K) as in gemm_nt.
static int gemm_setup(clef_bench_case *c, bench_gemm *g, bench_rng *rng, int M,
                      int N, int K, int a_trans, int b_trans)
{
    int pad = c->shape->pad;
    int arows = a_trans ? K : M, acols = a_trans ? M : K;
    int brows = b_trans ? N : K, bcols = b_trans ? K : N;
    g->M = M, g->N = N, g->K = K;
    BENCH_ADD(c, g, A, BENCH_IN, arows, acols, acols + pad);
    BENCH_ADD(c, g, B, BENCH_IN, brows, bcols, bcols + pad);
    BENCH_ADD(c, g, C, BENCH_OUT, M, N, N + pad);
    BENCH_ADD(c, g, Cacc, BENCH_ACC, M, N, N + pad);
    g->lda = A->ld, g->ldb = B->ld, g->ldc = C->ld;
    bench_fill_int(A, rng, 2, 1);
    bench_fill_int(B, rng, 2, 1);
    bench_fill_int(Cacc, rng, 4, 0); // |Cacc| <= 4 + 4K < 2^24 for K <= 4e6
    snprintf(c->dims, sizeof c->dims, "M=%d N=%d K=%d lda=%d ldb=%d ldc=%d", M,
             N, K, A->ld, B->ld, C->ld);
    c->tol = &bench_tol_exact;
    c->flops = 2.0 * 2.0 * M * N * K;
    c->compute_bound = 1;
    return 0;
}

static int gemm_nt_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    return gemm_setup(c, st, rng, s->T, s->w, s->d, 0, 1);
}

static int gemm_nn_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    return gemm_setup(c, st, rng, s->T, s->d, s->w, 0, 0);
}

static int gemm_tn_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    return gemm_setup(c, st, rng, s->w, s->d, s->T, 1, 0);
}

static void gemm_call(clef_gemm_fn fn, const bench_gemm *g)
{
    fn(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->C, g->ldc, 0);
    fn(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->Cacc, g->ldc, 1);
}

static void gemm_nt_call(const clef_kernels *k, void *st)
{
    gemm_call(k->gemm_nt, st);
}

static void gemm_nn_call(const clef_kernels *k, void *st)
{
    gemm_call(k->gemm_nn, st);
}

static void gemm_tn_call(const clef_kernels *k, void *st)
{
    gemm_call(k->gemm_tn, st);
}

const bench_case_def bench_case_gemm_nt = {sizeof(bench_gemm), gemm_nt_setup,
                                           gemm_nt_call};
const bench_case_def bench_case_gemm_nn = {sizeof(bench_gemm), gemm_nn_setup,
                                           gemm_nn_call};
const bench_case_def bench_case_gemm_tn = {sizeof(bench_gemm), gemm_tn_setup,
                                           gemm_tn_call};

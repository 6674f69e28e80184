// bf16 GEMM (kernels.h gemm_bf16_*) on the memory projection's shapes, as
// case_gemm.c: nt M=T, N=w, K=d; nn M=T, N=d, K=w; tn M=w, N=d, K=T; and the
// float -> bf16 conversion over a T×d block of x̂.
//
// The bf16 operands live in the harness's float buffers two to a float: a
// row of K bf16 values is ceil(K/2) floats (ld floats apart, so lda = 2·ld
// bf16), which keeps the harness's checks (inputs unchanged, gaps and tails
// untouched) byte-exact. An odd K's last float has a bf16 NaN in its upper
// half, as the gaps hold the sentinel: a kernel that reads past K returns
// NaN or garbage and fails. Fills are bf16 values in [-1, 1]; products are
// exact, sums are not, so the tolerance grows with K (below).
#include "case.h"

#include <stdio.h>
#include <string.h>

// Each product of two bf16 values is exact in float; a kernel sums K of
// them in float in its own order (the reference: in double, rounded once),
// so its error is at most about K roundings of the running sum. Errors are
// relative to max(|C|, 1) and the fills keep |a·b| ≤ 1: (2 + K) ε.
static const bench_tol bench_tol_gemm_bf16 = {"gemm_bf16", 2, 1};

typedef struct bench_gemm_bf16 {
    int M, N, K;
    float *A, *B, *C, *Cacc;
    int lda, ldb, ldc; // lda, ldb in bf16 values
} bench_gemm_bf16;

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// rows × cols16 bf16 values into b (rows × ceil(cols16/2) floats).
static void fill_bf16(bench_buf *b, int cols16, bench_rng *rng)
{
    for (int r = 0; r < b->rows; r++) {
        uint16_t *row = (uint16_t *)(b->init + (size_t)r * b->ld);
        for (int k = 0; k < cols16; k++)
            row[k] = to_bf16(bench_uniform(rng, -1.0f, 1.0f));
        if (cols16 & 1)
            row[cols16] = 0x7fc1; // a NaN: past K, never read
    }
}

static int setup(clef_bench_case *c, bench_gemm_bf16 *g, bench_rng *rng, int M,
                 int N, int K, int a_trans, int b_trans)
{
    int pad = c->shape->pad;
    int arows = a_trans ? K : M, acols = a_trans ? M : K;
    int brows = b_trans ? N : K, bcols = b_trans ? K : N;
    int af = (acols + 1) / 2, bf = (bcols + 1) / 2;
    g->M = M, g->N = N, g->K = K;
    BENCH_ADD(c, g, A, BENCH_IN, arows, af, af + pad);
    BENCH_ADD(c, g, B, BENCH_IN, brows, bf, bf + pad);
    BENCH_ADD(c, g, C, BENCH_OUT, M, N, N + pad);
    BENCH_ADD(c, g, Cacc, BENCH_ACC, M, N, N + pad);
    g->lda = 2 * A->ld, g->ldb = 2 * B->ld, g->ldc = C->ld;
    fill_bf16(A, acols, rng);
    fill_bf16(B, bcols, rng);
    bench_fill_uniform(Cacc, rng, -1.0f, 1.0f);
    snprintf(c->dims, sizeof c->dims,
             "M=%d N=%d K=%d lda=%d ldb=%d ldc=%d (bf16 A, B)", M, N, K, g->lda,
             g->ldb, g->ldc);
    c->tol = &bench_tol_gemm_bf16;
    c->tol_len = K;
    c->flops = 2.0 * 2.0 * M * N * K;
    c->compute_bound = 1;
    return 0;
}

static int nt_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    return setup(c, st, rng, s->T, s->w, s->d, 0, 1);
}

static int nn_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    return setup(c, st, rng, s->T, s->d, s->w, 0, 0);
}

static int tn_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    return setup(c, st, rng, s->w, s->d, s->T, 1, 0);
}

static void call(clef_gemm_bf16_fn fn, const bench_gemm_bf16 *g)
{
    const uint16_t *A = (const uint16_t *)g->A, *B = (const uint16_t *)g->B;
    fn(g->M, g->N, g->K, A, g->lda, B, g->ldb, g->C, g->ldc, 0);
    fn(g->M, g->N, g->K, A, g->lda, B, g->ldb, g->Cacc, g->ldc, 1);
}

static void nt_call(const clef_kernels *k, void *st)
{
    call(k->gemm_bf16_nt, st);
}

static void nn_call(const clef_kernels *k, void *st)
{
    call(k->gemm_bf16_nn, st);
}

static void tn_call(const clef_kernels *k, void *st)
{
    call(k->gemm_bf16_tn, st);
}

const bench_case_def bench_case_gemm_bf16_nt = {sizeof(bench_gemm_bf16),
                                                nt_setup, nt_call};
const bench_case_def bench_case_gemm_bf16_nn = {sizeof(bench_gemm_bf16),
                                                nn_setup, nn_call};
const bench_case_def bench_case_gemm_bf16_tn = {sizeof(bench_gemm_bf16),
                                                tn_setup, tn_call};

// ---- cvt_f32_bf16: x (T·d) -> y, compared exactly ----
// x spans normals of every size, denormals, ties (low half 0x8000), values
// that round up into the next binade or to Inf, and ±Inf (NaN bits are
// tests/test_gemm_bf16.c's: the harness compares NaN as "any NaN").
typedef struct bench_cvt {
    size_t n;
    float *x, *y;
} bench_cvt;

static int cvt_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_cvt *v = st;
    const clef_bench_shape *s = c->shape;
    int n = s->T * s->d;
    v->n = (size_t)n;
    BENCH_ADD(c, v, x, BENCH_IN, 1, n, n);
    BENCH_ADD(c, v, y, BENCH_OUT, 1, (n + 1) / 2, (n + 1) / 2);
    for (int i = 0; i < n; i++) {
        uint32_t u = (uint32_t)bench_rng_next(rng);
        switch (bench_rng_next(rng) % 8) {
        case 0: // a tie: round to even
            u = (u & 0xffff0000u) | 0x8000u;
            break;
        case 1: // a denormal
            u &= 0x807fffffu;
            break;
        case 2: // rounds up to the next binade, or to Inf at the top
            u |= 0x007fff80u;
            break;
        case 3: // ±Inf
            u = (u & 0x80000000u) | 0x7f800000u;
            break;
        default:
            break;
        }
        if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
            u &= 0xbfffffffu; // a NaN from the random bits: make it finite
        memcpy(&BENCH_LIVE(x, 0, i), &u, sizeof u);
    }
    snprintf(c->dims, sizeof c->dims, "n=%d", n);
    c->tol = &bench_tol_exact;
    return 0;
}

static void cvt_call(const clef_kernels *k, void *st)
{
    bench_cvt *v = st;
    k->cvt_f32_bf16(v->n, v->x, (uint16_t *)v->y);
}

const bench_case_def bench_case_cvt_f32_bf16 = {sizeof(bench_cvt), cvt_setup,
                                                cvt_call};

// Routing cross-attention: the O option queries attend to the T memory rows
// (nk >= 2: with one key the backward's dQ and dK are identically 0), h
// heads of dh = w/h. K and V are the two halves of one packed (nk, 2w)
// buffer (ld 2w, as the packed in-projection writes them); so are dK, dV.
#include "case.h"

#include <math.h>
#include <stdio.h>

typedef struct bench_attention {
    int nq, nk, heads, dh;
    int ldq, ldkv;         // Q, O, dO, dQ: ld ldq; KV, dKV: ld ldkv; A: packed
    float *Q, *KV, *A, *O; // forward (Q, KV, A are backward inputs too)
    float *dO, *dQ, *dKV, *scratch; // backward
} bench_attention;

// Sizes, then Q and KV (returned in *q, *kv): the first buffers and fills
// of both directions.
static int attention_setup_qkv(clef_bench_case *c, bench_attention *at,
                               bench_rng *rng, bench_buf **q, bench_buf **kv)
{
    const clef_bench_shape *s = c->shape;
    at->nq = s->O, at->nk = bench_max_int(s->T, 2);
    at->heads = s->h, at->dh = s->w / s->h;
    int w = at->heads * at->dh, pad = s->pad;
    snprintf(c->dims, sizeof c->dims, "nq=%d nk=%d heads=%d dh=%d", at->nq,
             at->nk, at->heads, at->dh);
    c->compute_bound = 1;
    BENCH_ADD(c, at, Q, BENCH_IN, at->nq, w, w + pad);
    BENCH_ADD(c, at, KV, BENCH_IN, at->nk, 2 * w, 2 * w + pad);
    at->ldq = Q->ld, at->ldkv = KV->ld;
    bench_fill_uniform(Q, rng, -2, 2);
    bench_fill_uniform(KV, rng, -2, 2);
    *q = Q, *kv = KV;
    return 0;
}

static int attention_fwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_attention *at = st;
    bench_buf *Q, *KV;
    if (attention_setup_qkv(c, at, rng, &Q, &KV) != 0)
        return -1;
    int nq = at->nq, nk = at->nk, heads = at->heads, dh = at->dh;
    int w = heads * dh;
    BENCH_ADD(c, at, A, BENCH_OUT, heads * nq, nk, nk);
    BENCH_ADD(c, at, O, BENCH_OUT, nq, w, at->ldq);
    c->tol = &bench_tol_attention_fwd;
    c->tol_len = nk + dh;
    c->flops = (double)heads * nq * nk * (4.0 * dh + 5.0);
    return 0;
}

// A = softmax(Q_h K_hᵀ / √dh), in double.
static void fill_probs(const bench_attention *at, const bench_buf *Q,
                       const bench_buf *KV, bench_buf *A)
{
    int nq = at->nq, nk = at->nk, dh = at->dh;
    double scale = 1.0 / sqrt((double)dh);
    for (int h = 0; h < at->heads; h++)
        for (int i = 0; i < nq; i++) {
            float *arow = &BENCH_LIVE(A, h * nq + i, 0);
            for (int j = 0; j < nk; j++) {
                double acc = 0.0;
                for (int d = 0; d < dh; d++)
                    acc += (double)BENCH_LIVE(Q, i, h * dh + d) *
                           BENCH_LIVE(KV, j, h * dh + d);
                arow[j] = (float)(acc * scale);
            }
            bench_softmax_ref(nk, arow, arow);
        }
}

static int attention_bwd_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_attention *at = st;
    bench_buf *Q, *KV;
    if (attention_setup_qkv(c, at, rng, &Q, &KV) != 0)
        return -1;
    int nq = at->nq, nk = at->nk, heads = at->heads, dh = at->dh;
    int w = heads * dh;
    BENCH_ADD(c, at, A, BENCH_IN, heads * nq, nk, nk);
    BENCH_ADD(c, at, dO, BENCH_IN, nq, w, at->ldq);
    BENCH_ADD(c, at, dQ, BENCH_ACC, nq, w, at->ldq);
    BENCH_ADD(c, at, dKV, BENCH_ACC, nk, 2 * w, at->ldkv);
    BENCH_ADD(c, at, scratch, BENCH_SCRATCH, 1, nq * nk, nq * nk);
    fill_probs(at, Q, KV, A);
    bench_fill_uniform(dO, rng, -1, 1);
    bench_fill_uniform(dQ, rng, -1, 1);
    bench_fill_uniform(dKV, rng, -1, 1);
    c->tol = &bench_tol_attention_bwd;
    c->tol_len = nq + nk + dh;
    c->flops = (double)heads * nq * nk * (8.0 * dh + 5.0);
    return 0;
}

static void attention_fwd_call(const clef_kernels *k, void *st)
{
    bench_attention *at = st;
    int w = at->heads * at->dh;
    k->attention_fwd(at->nq, at->nk, at->heads, at->dh, at->Q, at->ldq, at->KV,
                     at->ldkv, at->KV + w, at->ldkv, at->A, at->O, at->ldq);
}

static void attention_bwd_call(const clef_kernels *k, void *st)
{
    bench_attention *at = st;
    int w = at->heads * at->dh;
    k->attention_bwd(at->nq, at->nk, at->heads, at->dh, at->Q, at->ldq, at->KV,
                     at->ldkv, at->KV + w, at->ldkv, at->A, at->dO, at->ldq,
                     at->dQ, at->ldq, at->dKV, at->ldkv, at->dKV + w, at->ldkv,
                     at->scratch);
}

const bench_case_def bench_case_attention_fwd = {
    sizeof(bench_attention), attention_fwd_setup, attention_fwd_call};
const bench_case_def bench_case_attention_bwd = {
    sizeof(bench_attention), attention_bwd_setup, attention_bwd_call};

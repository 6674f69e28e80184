// The grouped loss of one record: Q questions with >= 2 options each (a
// single option has zero loss and gradient), every third a score question,
// one-hot targets on even questions, soft targets on odd ones; smoothing,
// Brier and ordinal terms all on. The loss accumulates (in double) onto
// that of earlier groups.
#include "case.h"

#include <stdio.h>

typedef struct bench_loss {
    int nq, n;
    int *off, *is_score;
    clef_loss_args args;
    float *z, *y, *p, *dz;
    double *loss;
} bench_loss;

// Draws the questions (option counts into len[nq]); returns the number of
// score questions, or -1 on OOM.
static int loss_draw(clef_bench_case *c, bench_loss *ls, int *len,
                     bench_rng *rng)
{
    int nq = ls->nq, total = ls->n;
    int *off = ls->off = bench_ints_add(c, (size_t)nq + 1);
    int *is_score = ls->is_score = bench_ints_add(c, (size_t)nq);
    if (!off || !is_score)
        return -1;
    int nscore = 0, longest = 0;
    for (int q = 0; q < nq; q++)
        len[q] = 2;
    for (int i = 2 * nq; i < total; i++)
        len[bench_int_in(rng, 0, nq - 1)]++;
    off[0] = 0;
    for (int q = 0; q < nq; q++) {
        off[q + 1] = off[q] + len[q];
        is_score[q] = q % 3 == 1;
        nscore += is_score[q];
        longest = bench_max_int(longest, len[q]);
    }
    snprintf(c->dims, sizeof c->dims, "nq=%d options=%d longest=%d", nq, total,
             longest);
    c->tol = &bench_tol_loss;
    c->tol_len = longest;
    return nscore;
}

// One-hot targets on even questions, soft ones (summing to 1) on odd ones.
static void fill_targets(const bench_loss *ls, const int *len, bench_buf *y,
                         bench_rng *rng)
{
    for (int q = 0; q < ls->nq; q++) {
        float *t = &BENCH_LIVE(y, 0, ls->off[q]);
        if (q % 2 == 0) {
            for (int k = 0; k < len[q]; k++)
                t[k] = 0.0f;
            t[bench_int_in(rng, 0, len[q] - 1)] = 1.0f;
        } else {
            double s = 0.0;
            for (int k = 0; k < len[q]; k++)
                s += t[k] = bench_uniform(rng, 0.05f, 1);
            for (int k = 0; k < len[q]; k++)
                t[k] = (float)(t[k] / s);
        }
    }
}

static int loss_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_loss *ls = st;
    int nq = ls->nq = c->shape->Q;
    int total = ls->n = bench_max_int(c->shape->O, 2 * nq);
    int len[nq];
    int nscore = loss_draw(c, ls, len, rng);
    if (nscore < 0)
        return -1;
    BENCH_ADD(c, ls, z, BENCH_IN, 1, total, total);
    BENCH_ADD(c, ls, y, BENCH_IN, 1, total, total);
    BENCH_ADD(c, ls, p, BENCH_OUT, 1, total, total);
    BENCH_ADD(c, ls, dz, BENCH_OUT, 1, total, total);
    bench_fill_uniform(z, rng, -3, 3);
    fill_targets(ls, len, y, rng);
    ls->args = (clef_loss_args){
        .smoothing = 0.1f,
        .brier = 0.25f,
        .ordinal = 0.5f,
        .inv_n = 1.0f / (float)nq,
        .inv_nscore = nscore ? 1.0f / (float)nscore : 0.0f,
    };
    ls->loss = bench_dacc_add(c, "loss", 0.25); // the loss of earlier groups
    return 0;
}

static void loss_call(const clef_kernels *k, void *st)
{
    bench_loss *ls = st;
    k->loss(ls->nq, ls->off, ls->is_score, ls->z, ls->y, &ls->args, ls->p,
            ls->dz, ls->loss);
}

const bench_case_def bench_case_loss = {sizeof(bench_loss), loss_setup,
                                        loss_call};

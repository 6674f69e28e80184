// The grouped loss (HEAD.md §6): one loss kernel call over a record's or a
// packed batch's questions, normalised by the update's question counts.
#include "loss.h"
#include "acts.h"

#include <string.h>

// The questions the loss kernel sees: nq of them, options at off (nq + 1),
// is_score (nq), target (off[nq]); targets 0 when some question has none.
typedef struct loss_groups {
    int nq;
    const int *off, *is_score;
    const float *target;
    int targets;
} loss_groups;

// The update's normalisers N and N_score (HEAD.md §6).
typedef struct loss_counts {
    int n_q, n_score;
} loss_counts;

static int all_targets(const clef_record *r)
{
    for (int q = 0; q < r->Q; q++)
        if (!r->has_target[q])
            return 0;
    return 1;
}

void clef_batch_counts(const clef_record *const *recs, int n, int *n_q,
                       int *n_score)
{
    *n_q = 0;
    *n_score = 0;
    for (int b = 0; b < n; b++)
        for (int q = 0; q < recs[b]->Q; q++) {
            if (!recs[b]->has_target[q])
                continue;
            (*n_q)++;
            *n_score += recs[b]->qtype[q] == CLEF_QTYPE_SCORE;
        }
}

// The loss kernel over the questions of g, normalised by the update's
// counts n. Without targets for every question: the probabilities only
// (dz = 0, no loss).
static double grouped_loss(const clef_kernels *k, const loss_groups *g,
                           loss_counts n, const clef_train_opts *o,
                           const float *z, float *p, float *dz)
{
    const int O = g->off[g->nq];
    if (!g->targets || n.n_q == 0) {
        k->softmax_seg_fwd(g->nq, g->off, z, p);
        memset(dz, 0, sizeof(float) * O);
        return 0.0;
    }
    clef_loss_args a = {
        .smoothing = (float)o->smoothing,
        .brier = (float)o->brier,
        .ordinal = (float)o->ordinal,
        .inv_n = (float)(1.0 / n.n_q),
        .inv_nscore = n.n_score ? (float)(1.0 / n.n_score) : 0.f,
    };
    double loss = 0.0;
    k->loss(g->nq, g->off, g->is_score, z, g->target, &a, p, dz, &loss);
    return loss;
}

double clef_record_loss(const clef_kernels *k, const clef_record *r,
                        const float *z, const clef_train_opts *o, int n_q,
                        int n_score, float *p, float *dz)
{
    const loss_groups g = {r->Q, r->opt_off, r->is_score, r->target,
                           all_targets(r)};
    return grouped_loss(k, &g, (loss_counts){n_q, n_score}, o, z, p, dz);
}

// The packed batch's questions: one call, batch-global offsets.
static loss_groups batch_groups(const clef_ws *ws)
{
    return (loss_groups){ws->Q, ws->opt_off, ws->is_score, ws->target,
                         ws->all_targets};
}

double clef_update_loss(const clef_kernels *k, clef_ws *ws,
                        const clef_train_opts *o, int n_q, int n_score)
{
    const loss_groups g = batch_groups(ws);
    return grouped_loss(k, &g, (loss_counts){n_q, n_score}, o, ws->z, ws->p,
                        ws->dz);
}

double clef_batch_loss(const clef_kernels *k, clef_ws *ws, const float *z,
                       const clef_train_opts *o, float *p, float *dz)
{
    loss_counts n = {0, 0};
    for (int q = 0; q < ws->Q; q++) {
        n.n_q++;
        n.n_score += ws->is_score[q];
    }
    const loss_groups g = batch_groups(ws);
    return grouped_loss(k, &g, n, o, z, p, dz);
}

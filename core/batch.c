// Packing a batch: the row offsets of each record's memory, questions and
// options, batch-global question/option indices, and the record constants
// stacked in batch order (HEAD.md Appendix B, without padding: see acts.h),
// except x̂, which each record keeps (ws->xrec).
#include "acts.h"
#include "batch.h"
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int clef_batch_fits(const clef_ws *ws, const clef_record *const *recs, int n)
{
    const clef_ws_limits *l = &ws->lim;
    if (n < 1 || n > l->B)
        return 0;
    size_t T = 0, Q = 0, O = 0, OT = 0, QT = 0, QQ = 0;
    for (int b = 0; b < n; b++) {
        const clef_record *r = recs[b];
        T += r->T;
        Q += r->Q;
        O += r->O;
        OT += (size_t)r->O * r->T;
        QT += (size_t)r->Q * r->T;
        QQ += (size_t)r->Q * r->Q;
    }
    return T <= (size_t)l->T && Q <= (size_t)l->Q && O <= (size_t)l->O &&
           OT <= l->OT && QT <= l->QT && QQ <= l->QQ;
}

static void stack(float *dst, const float *src, int rows, int n)
{
    clef_rows_copy(dst, src, (size_t)rows * n);
}

void clef_batch_index(clef_ws *ws, const clef_record *const *recs, int n,
                      int bf16)
{
    const int d = ws->cfg.d;
    if (!clef_batch_fits(ws, recs, n)) { // a caller bug, never bad input
        fprintf(stderr,
                "clef: internal error: a batch of %d records does not "
                "fit its workspace\n",
                n);
        abort();
    }
    ws->nb = n;
    ws->t_off[0] = ws->q_off[0] = ws->o_off[0] = 0;
    ws->ot_off[0] = ws->qt_off[0] = ws->qq_off[0] = 0;
    ws->opt_off[0] = 0;
    ws->all_targets = 1;
    for (int b = 0; b < n; b++) {
        const clef_record *r = recs[b];
        const int q0 = ws->q_off[b], o0 = ws->o_off[b];
        for (int q = 0; q < r->Q; q++) {
            ws->qrec[q0 + q] = b;
            ws->qtype[q0 + q] = r->qtype[q];
            ws->is_score[q0 + q] = r->qtype[q] == CLEF_QTYPE_SCORE;
            ws->opt_off[q0 + q + 1] = o0 + r->opt_off[q + 1];
            ws->all_targets &= r->has_target[q] != 0;
            for (int o = r->opt_off[q]; o < r->opt_off[q + 1]; o++)
                ws->owner[o0 + o] = q0 + q;
        }
        memcpy(ws->target + o0, r->target, sizeof(float) * r->O);
        ws->t_off[b + 1] = ws->t_off[b] + r->T;
        ws->q_off[b + 1] = q0 + r->Q;
        ws->o_off[b + 1] = o0 + r->O;
        ws->ot_off[b + 1] = ws->ot_off[b] + (size_t)r->O * r->T;
        ws->qt_off[b + 1] = ws->qt_off[b] + (size_t)r->Q * r->T;
        ws->qq_off[b + 1] = ws->qq_off[b] + (size_t)r->Q * r->Q;
    }
    ws->T = ws->t_off[n];
    ws->Q = ws->q_off[n];
    ws->O = ws->o_off[n];
    for (int b = 0; b < n; b++) { // readers take xrec16 when it is set
        const clef_record *r = recs[b];
        ws->xrec[b] = r->xhat;
        ws->xrec16[b] = bf16 || !r->xhat ? r->xhat16 : NULL;
    }
    if (n == 1) { // a record alone needs no copies
        ws->qvhat = recs[0]->qvhat;
        ws->ctxhat = recs[0]->ctxhat;
        ws->lex = recs[0]->lex;
        ws->lhat = recs[0]->lhat;
        return;
    }
    for (int b = 0; b < n; b++) {
        const clef_record *r = recs[b];
        stack(ws->qvhat_b + (size_t)ws->q_off[b] * d, r->qvhat, r->Q, d);
        stack(ws->ctxhat_b + (size_t)ws->o_off[b] * d, r->ctxhat, r->O, d);
        stack(ws->lex_b + (size_t)ws->o_off[b] * d, r->lex, r->O, d);
        stack(ws->lhat_b + (size_t)ws->o_off[b] * d, r->lhat, r->O, d);
    }
    ws->qvhat = ws->qvhat_b;
    ws->ctxhat = ws->ctxhat_b;
    ws->lex = ws->lex_b;
    ws->lhat = ws->lhat_b;
}

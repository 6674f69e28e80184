// Evaluation of every record: logits, probabilities, loss and accuracy per
// split. Losses are means over the split's questions that carry a target
// (HEAD.md §6 with the run's ε, β, λ); accuracy counts those questions with
// two or more options, the prediction being the most probable option.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mm.h"
#include "train.h"

int cli_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

int cli_true_option(const clef_record *r, int q)
{
    if (!r->has_target[q])
        return -1;
    if (r->label[q] >= 0)
        return r->label[q];
    int o0 = r->opt_off[q];
    return cli_argmax(r->target + o0, r->opt_off[q + 1] - o0);
}

void cli_eval_free(cli_eval *ev)
{
    free(ev->zoff);
    free(ev->z);
    free(ev->p);
    memset(ev, 0, sizeof(*ev));
}

int cli_evaluate(const clef_kernels *k, const clef_head *hd,
                 const clef_package *pkg, clef_ws *ws,
                 const clef_train_opts *o, cli_eval *ev, clef_err *err)
{
    return cli_evaluate_splits(k, hd, pkg, ws, o, 7u, ev, err);
}

int cli_evaluate_splits(const clef_kernels *k, const clef_head *hd,
                        const clef_package *pkg, clef_ws *ws,
                        const clef_train_opts *o, unsigned mask,
                        cli_eval *ev, clef_err *err)
{
    memset(ev, 0, sizeof(*ev));
    clef_mm_refresh(k); // bf16: the parameters as they are now
    int n = pkg->nrecords;
    ev->zoff = malloc(((size_t)n + 1) * sizeof(size_t));
    if (!ev->zoff)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    ev->zoff[0] = 0;
    for (int i = 0; i < n; i++)
        ev->zoff[i + 1] = ev->zoff[i] + (size_t)pkg->records[i].O;
    size_t total = ev->zoff[n];
    ev->z = calloc(total ? total : 1, sizeof(float));
    ev->p = calloc(total ? total : 1, sizeof(float));
    float *dz = malloc((size_t)pkg->Omax * sizeof(float));
    if (!ev->z || !ev->p || !dz) {
        free(dz);
        cli_eval_free(ev);
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    }
    // normalisers per split: questions with a target, score questions
    int nq[3] = {0}, ns[3] = {0};
    for (int i = 0; i < n; i++) {
        const clef_record *r = &pkg->records[i];
        int a = 0, b = 0;
        if (!(mask & (1u << r->split)))
            continue;
        clef_batch_counts(&r, 1, &a, &b);
        nq[r->split] += a;
        ns[r->split] += b;
    }
    for (int i = 0; i < n; i++) {
        const clef_record *r = &pkg->records[i];
        float *z = ev->z + ev->zoff[i], *p = ev->p + ev->zoff[i];
        if (!(mask & (1u << r->split)))
            continue; // never run: its z and p stay 0
        clef_head_forward(k, hd, r, ws, z);
        ev->loss[r->split] +=
            clef_record_loss(k, r, z, o, nq[r->split] ? nq[r->split] : 1,
                             ns[r->split], p, dz);
        for (int q = 0; q < r->Q; q++) {
            int o0 = r->opt_off[q], m = r->opt_off[q + 1] - o0;
            int t = cli_true_option(r, q);
            if (t < 0 || m < 2)
                continue;
            ev->nacc[r->split]++;
            ev->correct[r->split] += cli_argmax(p + o0, m) == t;
        }
    }
    memcpy(ev->nq, nq, sizeof(nq));
    free(dz);
    return 0;
}

// Evaluation of every record: logits, probabilities, loss and accuracy per
// split. Losses are means over the split's questions that carry a target
// (HEAD.md §6 with the run's ε, β, λ); accuracy counts those questions with
// two or more options, the prediction being the most probable option.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_mpi.h"
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
                 const clef_package *pkg, clef_ws *ws, const clef_train_opts *o,
                 cli_eval *ev, clef_err *err)
{
    return cli_evaluate_splits(k, hd, pkg, ws, o, 7u, ev, err);
}

// Offsets, logits and probabilities of every record (z, p zero).
static int eval_alloc(const clef_package *pkg, cli_eval *ev, clef_err *err)
{
    memset(ev, 0, sizeof(*ev));
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
    if (!ev->z || !ev->p) {
        cli_eval_free(ev);
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    }
    return 0;
}

// Normalisers per split: questions with a target, score questions.
static void split_counts(const clef_package *pkg, unsigned mask, int nq[3],
                         int ns[3])
{
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        int a = 0, b = 0;
        if (!(mask & (1u << r->split)))
            continue;
        clef_batch_counts(&r, 1, &a, &b);
        nq[r->split] += a;
        ns[r->split] += b;
    }
}

// Records [lo, hi) of the mask's splits: their z, p and losses (rl).
static void eval_records(const clef_kernels *k, const clef_head *hd,
                         const clef_package *pkg, clef_ws *ws,
                         const clef_train_opts *o, unsigned mask, int lo,
                         int hi, const int nq[3], const int ns[3], cli_eval *ev,
                         double *rl, float *dz)
{
    for (int i = lo; i < hi; i++) {
        const clef_record *r = &pkg->records[i];
        float *z = ev->z + ev->zoff[i], *p = ev->p + ev->zoff[i];
        rl[i] = 0.0;
        if (!(mask & (1u << r->split)))
            continue; // never run: its z and p stay 0
        clef_head_forward(k, hd, r, ws, z);
        rl[i] = clef_record_loss(k, r, z, o, nq[r->split] ? nq[r->split] : 1,
                                 ns[r->split], p, dz);
    }
}

// The splits' sums over every record, in record order.
static void eval_sums(const clef_package *pkg, unsigned mask, const double *rl,
                      cli_eval *ev)
{
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        const float *p = ev->p + ev->zoff[i];
        if (!(mask & (1u << r->split)))
            continue;
        ev->loss[r->split] += rl[i];
        for (int q = 0; q < r->Q; q++) {
            int o0 = r->opt_off[q], m = r->opt_off[q + 1] - o0;
            int t = cli_true_option(r, q);
            if (t < 0 || m < 2)
                continue;
            ev->nacc[r->split]++;
            ev->correct[r->split] += cli_argmax(p + o0, m) == t;
        }
    }
}

// Record slice of rank r of N: [n·r/N, n·(r+1)/N).
static int slice_lo(int n, int r, int N)
{
    return (int)((long)n * r / N);
}

// Every rank's slice of z, p (floats, as bytes) and rl to every rank.
static int eval_gather(const clef_package *pkg, cli_eval *ev, double *rl)
{
    const int N = cli_mpi_size(), n = pkg->nrecords, me = cli_mpi_rank();
    int *cnt = malloc(4 * (size_t)N * sizeof(int));
    if (!cnt)
        return -1;
    int *off = cnt + N, *lc = cnt + 2 * N, *lo = cnt + 3 * N;
    for (int r = 0; r < N; r++) {
        const int a = slice_lo(n, r, N), b = slice_lo(n, r + 1, N);
        off[r] = (int)(ev->zoff[a] * sizeof(float));
        cnt[r] = (int)((ev->zoff[b] - ev->zoff[a]) * sizeof(float));
        lo[r] = (int)(a * sizeof(double));
        lc[r] = (int)((b - a) * sizeof(double));
    }
    // (in place: each rank's own part is already where it goes)
    cli_mpi_allgatherv_bytes((char *)ev->z + off[me], ev->z, cnt, off);
    cli_mpi_allgatherv_bytes((char *)ev->p + off[me], ev->p, cnt, off);
    cli_mpi_allgatherv_bytes((char *)rl + lo[me], rl, lc, lo);
    free(cnt);
    return 0;
}

static int evaluate(const clef_kernels *k, const clef_head *hd,
                    const clef_package *pkg, clef_ws *ws,
                    const clef_train_opts *o, unsigned mask, int dist,
                    cli_eval *ev, clef_err *err)
{
    int rc = eval_alloc(pkg, ev, err);
    if (rc)
        return rc;
    clef_mm_refresh(k); // bf16: the parameters as they are now
    const int n = pkg->nrecords, N = dist ? cli_mpi_size() : 1;
    const int me = dist ? cli_mpi_rank() : 0;
    float *dz = malloc((size_t)(pkg->Omax ? pkg->Omax : 1) * sizeof(float));
    double *rl = calloc((size_t)(n ? n : 1), sizeof(double));
    int nq[3] = {0}, ns[3] = {0};
    if (!dz || !rl) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto cleanup;
    }
    split_counts(pkg, mask, nq, ns);
    eval_records(k, hd, pkg, ws, o, mask, slice_lo(n, me, N),
                 slice_lo(n, me + 1, N), nq, ns, ev, rl, dz);
    if (N > 1 && eval_gather(pkg, ev, rl)) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto cleanup;
    }
    eval_sums(pkg, mask, rl, ev);
    memcpy(ev->nq, nq, sizeof(nq));
cleanup:
    free(dz);
    free(rl);
    if (rc)
        cli_eval_free(ev);
    return rc;
}

int cli_evaluate_splits(const clef_kernels *k, const clef_head *hd,
                        const clef_package *pkg, clef_ws *ws,
                        const clef_train_opts *o, unsigned mask, cli_eval *ev,
                        clef_err *err)
{
    return evaluate(k, hd, pkg, ws, o, mask, 0, ev, err);
}

int cli_evaluate_ranks(const clef_kernels *k, const clef_head *hd,
                       const clef_package *pkg, clef_ws *ws,
                       const clef_train_opts *o, unsigned mask, cli_eval *ev,
                       clef_err *err)
{
    return evaluate(k, hd, pkg, ws, o, mask, 1, ev, err);
}

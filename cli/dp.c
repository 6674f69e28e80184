// Data-parallel updates over MPI ranks (cli/train.h, cli_dp): a fixed
// partition of every batch into shards (S records each) and a fixed order
// of their sum, so the weights are the same bits for any number of ranks.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_mpi.h"
#include "par.h"
#include "train.h"

void cli_dp_free(cli_dp *d)
{
    free(d->cnt);
    free(d->acc);
    free(d->recv);
    free(d->loss);
    memset(d, 0, sizeof(*d));
}

int cli_dp_init(cli_dp *d, size_t nparams, int shard)
{
    memset(d, 0, sizeof(*d));
    const int N = cli_mpi_size(), me = cli_mpi_rank();
    d->rank = me;
    d->size = N;
    d->shard = shard;
    d->cnt = malloc(4 * (size_t)N * sizeof(int));
    d->loss = malloc((size_t)N * sizeof(double));
    if (!d->cnt || !d->loss)
        goto fail;
    d->off = d->cnt + N, d->rcnt = d->cnt + 2 * N, d->roff = d->cnt + 3 * N;
    for (int j = 0; j < N; j++) {
        const size_t a = nparams * j / N, b = nparams * (j + 1) / N;
        d->off[j] = (int)a;
        d->cnt[j] = (int)(b - a);
    }
    const size_t mine = (size_t)d->cnt[me];
    for (int j = 0; j < N; j++) {
        d->rcnt[j] = (int)mine;
        d->roff[j] = (int)(mine * j);
    }
    d->acc = malloc((mine ? mine : 1) * sizeof(float));
    d->recv = malloc((mine ? mine * N : 1) * sizeof(float));
    if (!d->acc || !d->recv)
        goto fail;
    return 0;
fail:
    cli_dp_free(d);
    return -1;
}

// acc (n) += x (n), elementwise: the same bits on any thread split.
static void add_into(float *acc, const float *x, size_t n)
{
    const size_t chunk = (size_t)1 << 16, nc = (n + chunk - 1) / chunk;
    CLEF_PAR_FOR(nc > 2, size_t, c, nc,
        const size_t i0 = c * chunk, i1 = n - i0 < chunk ? n : i0 + chunk;
        for (size_t i = i0; i < i1; i++)
            acc[i] += x[i];
    );
}

// Round r: shards r·N .. r·N + N − 1 (those below nsh), one per rank;
// shard s is records [s·S, min(s·S + S, n)).
static double dp_round(cli_dp *d, const clef_kernels *k, clef_head *hd,
                       const clef_record *const *recs, int n, int round,
                       int n_q, int n_score, clef_ws *ws,
                       const clef_train_opts *o)
{
    const int N = d->size, S = d->shard, s = round * N + d->rank;
    const int nsh = (n + S - 1) / S;
    const size_t mine = (size_t)d->cnt[d->rank];
    double l = 0.0;
    if (s < nsh) { // an idle rank's stale gradient is sent, and never added
        const int r0 = s * S, m = n - r0 < S ? n - r0 : S;
        l = clef_shard_grads(k, hd, recs + r0, m, r0, n_q, n_score, ws, o);
    }
    if (N > 1) // one process: its own gradient is the round's only part
        cli_mpi_alltoallv_f32(hd->grads, d->cnt, d->off, d->recv, d->rcnt,
                              d->roff);
    cli_mpi_allgather_f64(l, d->loss);
    double loss = 0.0;
    for (int j = 0; j < N && round * N + j < nsh; j++) {
        const float *x = N > 1 ? d->recv + (size_t)d->roff[j] : hd->grads;
        if (round == 0 && j == 0)
            memcpy(d->acc, x, mine * sizeof(float)); // not 0 + x: −0 stays
        else
            add_into(d->acc, x, mine);
        loss += d->loss[j];
    }
    return loss;
}

double cli_dp_step(cli_dp *d, const clef_kernels *k, clef_head *hd,
                   const clef_record *const *recs, int n, clef_ws *ws,
                   const clef_train_opts *o)
{
    int n_q, n_score;
    clef_batch_counts(recs, n, &n_q, &n_score);
    clef_train_begin(k, hd);
    double loss = 0.0; // the shards' losses in shard order
    const int nsh = (n + d->shard - 1) / d->shard;
    const int rounds = (nsh + d->size - 1) / d->size;
    for (int r = 0; r < rounds; r++)
        loss += dp_round(d, k, hd, recs, n, r, n_q, n_score, ws, o);
    cli_mpi_allgatherv_f32(d->acc, hd->grads, d->cnt, d->off);
    clef_train_apply(k, hd, o);
    return loss;
}

// FNV-1a over the 32-bit words of x (n floats): any changed bit changes
// the digest's chance of matching to about 2^-64.
static uint64_t digest(const float *x, size_t n, uint64_t h)
{
    const uint32_t *w = (const uint32_t *)(const void *)x;
    for (size_t i = 0; i < n; i++)
        h = (h ^ w[i]) * 1099511628211ull;
    return h;
}

int cli_dp_same_state(const clef_head *hd)
{
    uint64_t h = 1469598103934665603ull;
    h = digest(hd->params, hd->nparams, h);
    h = digest(hd->m, hd->nparams, h);
    h = digest(hd->v, hd->nparams, h);
    int same = 1;
    for (int part = 0; part < 4; part++) {
        const int v = (int)((h >> (16 * part)) & 0xffff);
        same &= cli_mpi_max(v) == cli_mpi_min(v);
    }
    return same;
}

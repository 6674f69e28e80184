// The update order of clef train (CLI.md):
//   sequential  train records in manifest order, consecutive groups of B;
//   bucketed    records grouped into shape buckets (scheduler/buckets.h:
//               same questions and option counts, T within the padding
//               bound), buckets in order of first appearance, each cut into
//               consecutive groups of B; each epoch runs the batches in an
//               order drawn from clef_rng seeded with seed + epoch·φ64.
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "scheduler/buckets.h"
#include "train.h"

// Shape bucket of every record (−1 for records not in `split`, or for all
// records when split < 0 means every split). nopt is filled for the
// geometries and freed by the caller. Returns 0 or −1.
int cli_buckets(const clef_package *pkg, int split, int *bucket_of,
                clef_bucket_stats *st)
{
    int n = pkg->nrecords, rc = -1;
    clef_geometry *g = calloc((size_t)n + 1, sizeof(*g));
    int *use = calloc((size_t)n + 1, sizeof(int));
    int **nopt = calloc((size_t)n + 1, sizeof(int *));
    if (!g || !use || !nopt)
        goto out;
    for (int i = 0; i < n; i++) {
        const clef_record *r = &pkg->records[i];
        nopt[i] = malloc(sizeof(int) * ((size_t)r->Q + 1));
        if (!nopt[i])
            goto out;
        for (int q = 0; q < r->Q; q++)
            nopt[i][q] = r->opt_off[q + 1] - r->opt_off[q];
        g[i] = (clef_geometry){r->T, r->Q, nopt[i]};
        use[i] = split < 0 || r->split == split;
    }
    rc = clef_buckets_assign(g, n, use, CLEF_BUCKET_MAX_WASTE, bucket_of, st);
out:
    if (nopt)
        for (int i = 0; i < n; i++)
            free(nopt[i]);
    free(nopt);
    free(use);
    free(g);
    return rc;
}

int cli_plan_build(const clef_package *pkg, int batch, int bucketed,
                   uint64_t seed, train_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->bucketed = bucketed;
    p->seed = seed;
    int n = pkg->nsplit[CLEF_SPLIT_TRAIN];
    p->ntrain = n;
    p->order = malloc(((size_t)n + 1) * sizeof(int));
    p->boff = malloc(((size_t)n + 2) * sizeof(int));
    p->perm = malloc(((size_t)n + 1) * sizeof(int));
    int *bucket = malloc(((size_t)pkg->nrecords + 1) * sizeof(int));
    if (!p->order || !p->boff || !p->perm || !bucket) {
        free(bucket);
        cli_plan_free(p);
        return -1;
    }
    // bucket id of every train record, named by its bucket's first record
    int k = 0;
    clef_bucket_stats st;
    if (bucketed && cli_buckets(pkg, CLEF_SPLIT_TRAIN, bucket, &st)) {
        free(bucket);
        cli_plan_free(p);
        return -1;
    }
    if (bucketed) {
        int *first = malloc(((size_t)pkg->nrecords + 1) * sizeof(int));
        if (!first) {
            free(bucket);
            cli_plan_free(p);
            return -1;
        }
        for (int i = 0; i < pkg->nrecords; i++)
            first[i] = -1;
        for (int i = 0; i < pkg->nrecords; i++)
            if (bucket[i] >= 0) {
                if (first[bucket[i]] < 0)
                    first[bucket[i]] = i;
                bucket[i] = first[bucket[i]];
            }
        free(first);
    } else {
        for (int i = 0; i < pkg->nrecords; i++)
            bucket[i] = pkg->records[i].split == CLEF_SPLIT_TRAIN ? i : -1;
    }
    // order: sequential = manifest order; bucketed = bucket after bucket
    p->nbatches = 0;
    p->boff[0] = 0;
    for (int b = 0; b < pkg->nrecords; b++) {
        if (bucket[b] != b)
            continue;
        int start = k;
        for (int i = b; i < pkg->nrecords; i++) {
            int mine = bucketed ? bucket[i] == b : i == b;
            if (mine)
                p->order[k++] = i;
        }
        if (!bucketed)
            continue; // sequential: one global run, cut below
        for (int s = start; s < k; s += batch) {
            p->boff[++p->nbatches] = s + batch < k ? s + batch : k;
        }
    }
    if (!bucketed)
        for (int s = 0; s < k; s += batch)
            p->boff[++p->nbatches] = s + batch < k ? s + batch : k;
    free(bucket);
    for (int b = 0; b < p->nbatches; b++)
        p->perm[b] = b;
    return 0;
}

void cli_plan_epoch(train_plan *p, long epoch)
{
    for (int b = 0; b < p->nbatches; b++)
        p->perm[b] = b;
    if (!p->bucketed)
        return;
    clef_rng rng;
    clef_rng_seed(&rng, p->seed + (uint64_t)epoch * 0x9E3779B97F4A7C15ull);
    for (int i = p->nbatches - 1; i > 0; i--) {
        int j = (int)clef_rng_below(&rng, (uint64_t)i + 1);
        int t = p->perm[i];
        p->perm[i] = p->perm[j];
        p->perm[j] = t;
    }
}

void cli_plan_free(train_plan *p)
{
    free(p->order);
    free(p->boff);
    free(p->perm);
    memset(p, 0, sizeof(*p));
}

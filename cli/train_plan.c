// The update order of clef train (CLI.md):
//   sequential  train records in manifest order, consecutive groups of B;
//   bucketed    records grouped by geometry (T, Q, option counts) into
//               buckets (in order of first appearance), each bucket cut into
//               consecutive groups of B; each epoch runs the batches in an
//               order drawn from clef_rng seeded with seed + epoch·φ64.
#include <string.h>

#include "rng.h"
#include "train.h"

static int same_geometry(const clef_record *a, const clef_record *b)
{
    if (a->T != b->T || a->Q != b->Q)
        return 0;
    return memcmp(a->opt_off, b->opt_off, (size_t)(a->Q + 1) * sizeof(int))
           == 0;
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
    // bucket id of every train record: first record of its geometry
    int k = 0;
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        bucket[i] = -1;
        if (r->split != CLEF_SPLIT_TRAIN)
            continue;
        bucket[i] = i;
        if (bucketed)
            for (int j = 0; j < i; j++)
                if (bucket[j] == j && same_geometry(&pkg->records[j], r)) {
                    bucket[i] = j;
                    break;
                }
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

#include "buckets.h"

#include <stdlib.h>
#include <string.h>

static int same_questions(const clef_geometry *a, const clef_geometry *b)
{
    return a->Q == b->Q &&
           memcmp(a->nopt, b->nopt, sizeof(int) * (size_t)a->Q) == 0;
}

typedef struct item {
    int idx; // record
    int cls; // question class: first record with the same Q and options
    int T;
} item;

static int by_class_then_T(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    if (a->cls != b->cls)
        return (a->cls > b->cls) - (a->cls < b->cls);
    if (a->T != b->T)
        return (a->T > b->T) - (a->T < b->T);
    return (a->idx > b->idx) - (a->idx < b->idx);
}

int clef_buckets_assign(const clef_geometry *g, int n, const int *use,
                        double max_waste, int *bucket_of, clef_bucket_stats *st)
{
    memset(st, 0, sizeof(*st));
    item *it = malloc(sizeof(item) * (n > 0 ? n : 1));
    int *raw = malloc(sizeof(int) * (n > 0 ? n : 1)); // group per record
    int *rename = malloc(sizeof(int) * (n > 0 ? n : 1));
    if (!it || !raw || !rename) {
        free(it);
        free(raw);
        free(rename);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        bucket_of[i] = -1;
        raw[i] = -1;
        rename[i] = -1;
        if (use && !use[i])
            continue;
        int cls = i;
        for (int j = 0; j < m; j++)
            if (same_questions(&g[it[j].idx], &g[i])) {
                cls = it[j].cls;
                break;
            }
        it[m++] = (item){i, cls, g[i].T};
    }
    qsort(it, m, sizeof(item), by_class_then_T);
    // Walk each class from its longest T down: a record joins the current
    // group while (longest − T) / longest ≤ max_waste.
    int groups = 0;
    for (int e = m - 1; e >= 0;) {
        int cls = it[e].cls, longest = it[e].T, s = e;
        while (s >= 0 && it[s].cls == cls &&
               (double)(longest - it[s].T) <= max_waste * longest)
            s--;
        size_t count = 0;
        for (int k = s + 1; k <= e; k++) {
            raw[it[k].idx] = groups;
            st->real_rows += (size_t)it[k].T;
            count++;
        }
        st->padded_rows += count * (size_t)longest;
        groups++;
        e = s;
    }
    // ids in order of first appearance in the input
    int next = 0;
    for (int i = 0; i < n; i++) {
        if (raw[i] < 0)
            continue;
        if (rename[raw[i]] < 0)
            rename[raw[i]] = next++;
        bucket_of[i] = rename[raw[i]];
    }
    st->nbuckets = next;
    free(it);
    free(raw);
    free(rename);
    return 0;
}

double clef_bucket_waste(const clef_bucket_stats *st)
{
    if (!st->padded_rows)
        return 0.0;
    return (double)(st->padded_rows - st->real_rows) / (double)st->padded_rows;
}

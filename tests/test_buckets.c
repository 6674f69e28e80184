// Shape buckets: every record's padding stays within the bound, buckets never
// mix question geometries, and assignment does not depend on record order.
#include <criterion/criterion.h>
#include <string.h>

#include "scheduler/buckets.h"
#include "util.h"

#define N 200

static int nopt_a[2] = {2, 1}, nopt_b[3] = {3, 3, 2}, nopt_c[2] = {2, 2};

static void make(clef_geometry *g, uint64_t *rng)
{
    for (int i = 0; i < N; i++) {
        int kind = clef_test_rand_int(rng, 0, 2);
        g[i].T = clef_test_rand_int(rng, 1, 600);
        g[i].Q = kind == 1 ? 3 : 2;
        g[i].nopt = kind == 0 ? nopt_a : kind == 1 ? nopt_b : nopt_c;
    }
}

Test(buckets, waste_bounded_and_questions_never_mixed)
{
    uint64_t rng = 42;
    clef_geometry g[N];
    make(g, &rng);
    int b[N];
    clef_bucket_stats st;
    cr_assert_eq(clef_buckets_assign(g, N, NULL, CLEF_BUCKET_MAX_WASTE, b, &st),
                 0);
    cr_assert_gt(st.nbuckets, 2);
    size_t real = 0, padded = 0;
    for (int k = 0; k < st.nbuckets; k++) {
        int longest = 0, first = -1, count = 0;
        for (int i = 0; i < N; i++)
            if (b[i] == k) {
                if (first < 0)
                    first = i;
                if (g[i].T > longest)
                    longest = g[i].T;
                count++;
                cr_expect(
                    g[i].Q == g[first].Q &&
                        !memcmp(g[i].nopt, g[first].nopt, sizeof(int) * g[i].Q),
                    "bucket %d mixes question geometries", k);
            }
        cr_assert_gt(count, 0, "bucket %d is empty", k);
        for (int i = 0; i < N; i++)
            if (b[i] == k) {
                cr_expect(longest - g[i].T <= CLEF_BUCKET_MAX_WASTE * longest,
                          "record %d: T %d padded to %d", i, g[i].T, longest);
                real += g[i].T;
                padded += longest;
            }
    }
    cr_expect_eq(st.real_rows, real);
    cr_expect_eq(st.padded_rows, padded);
    cr_expect_leq(clef_bucket_waste(&st), CLEF_BUCKET_MAX_WASTE);
}

Test(buckets, independent_of_record_order_and_unused_records_excluded)
{
    uint64_t rng = 7;
    clef_geometry g[N], r[N];
    make(g, &rng);
    int perm[N], use[N];
    for (int i = 0; i < N; i++) {
        perm[i] = N - 1 - i;
        r[i] = g[perm[i]];
        use[i] = i % 5 != 0;
    }
    int bg[N], br[N], bu[N];
    clef_bucket_stats sg, sr, su;
    clef_buckets_assign(g, N, NULL, CLEF_BUCKET_MAX_WASTE, bg, &sg);
    clef_buckets_assign(r, N, NULL, CLEF_BUCKET_MAX_WASTE, br, &sr);
    cr_expect_eq(sg.nbuckets, sr.nbuckets);
    cr_expect_eq(sg.padded_rows, sr.padded_rows);
    // same partition: two records share a bucket in one order iff in the other
    for (int i = 0; i < N; i += 7)
        for (int j = 0; j < N; j += 3)
            cr_expect_eq(bg[perm[i]] == bg[perm[j]], br[i] == br[j]);
    clef_buckets_assign(g, N, use, CLEF_BUCKET_MAX_WASTE, bu, &su);
    for (int i = 0; i < N; i++)
        cr_expect_eq(bu[i] < 0, !use[i], "record %d", i);
}

// clef validate: every rule of FORMATS.md, then a summary of the package.
// It only reads and checks (clef_package_read): no record is prepared.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scheduler/buckets.h"
#include "train.h"

static const char *help =
    "usage: clef validate --package DIR/package.json [--package-sha256 HEX]\n"
    "\n"
    "Reads and checks the package exactly as train does (manifest, SHA-256\n"
    "of every file, every shape, bound and float), computes nothing from it\n"
    "(no kernel runs), and prints a summary: records per\n"
    "split, histograms of T, Q and options per question, the geometry\n"
    "buckets (T, Q, option counts) and the question types. A bad package\n"
    "exits 2 with a message naming the file, record, field and rule.\n";

// A small histogram of ints (value -> count), kept sorted by value.
typedef struct hist {
    int n, cap;
    long *val, *cnt;
} hist;

static void hist_add(hist *h, long v)
{
    int i = 0;
    while (i < h->n && h->val[i] < v)
        i++;
    if (i < h->n && h->val[i] == v) {
        h->cnt[i]++;
        return;
    }
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->val = realloc(h->val, (size_t)h->cap * sizeof(long));
        h->cnt = realloc(h->cnt, (size_t)h->cap * sizeof(long));
        if (!h->val || !h->cnt)
            abort();
    }
    memmove(h->val + i + 1, h->val + i, (size_t)(h->n - i) * sizeof(long));
    memmove(h->cnt + i + 1, h->cnt + i, (size_t)(h->n - i) * sizeof(long));
    h->val[i] = v;
    h->cnt[i] = 1;
    h->n++;
}

static void hist_print(const char *title, const hist *h)
{
    printf("%s:", title);
    for (int i = 0; i < h->n; i++)
        printf(" %ld×%ld", h->val[i], h->cnt[i]);
    printf("\n");
    free(h->val);
    free(h->cnt);
}

// The geometry key of a record: "T=6 Q=2 options=2,1".
static void geometry(const clef_record *r, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "Q=%d options=", r->Q);
    for (int q = 0; q < r->Q && k < n; q++)
        k += (size_t)snprintf(buf + k, n - k, "%s%d", q ? "," : "",
                              r->opt_off[q + 1] - r->opt_off[q]);
}

// Shape buckets (scheduler/buckets.h) and what padding would cost: clef runs
// batches packed, so the waste shown is what a padded executor would pay.
static void print_buckets(const clef_package *pkg)
{
    int n = pkg->nrecords;
    int *b = calloc((size_t)n + 1, sizeof(int));
    clef_bucket_stats st;
    if (!b || cli_buckets(pkg, -1, b, &st))
        abort();
    printf("shape buckets: %d (T grouped within %.1f%% padding per record)\n",
           st.nbuckets, 100.0 * CLEF_BUCKET_MAX_WASTE);
    for (int k = 0; k < st.nbuckets; k++) {
        int count = 0, tmin = 0, tmax = 0, first = -1;
        for (int i = 0; i < n; i++) {
            if (b[i] != k)
                continue;
            int T = pkg->records[i].T;
            if (first < 0) {
                first = i;
                tmin = tmax = T;
            }
            tmin = T < tmin ? T : tmin;
            tmax = T > tmax ? T : tmax;
            count++;
        }
        char opts[256];
        geometry(&pkg->records[first], opts, sizeof(opts));
        printf("  %s; T %d..%d padded to %d: %d record%s\n", opts, tmin, tmax,
               tmax, count, count == 1 ? "" : "s");
    }
    printf("padding waste if padded to bucket T: %.1f%% (%zu of %zu memory "
           "rows); clef packs batches and computes none of it\n",
           100.0 * clef_bucket_waste(&st), st.padded_rows - st.real_rows,
           st.padded_rows);
    free(b);
}

int cli_validate(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(help, stdout);
        return 0;
    }
    clef_err err = {0};
    const char *manifest = NULL, *pin = NULL;
    for (int i = 0; i < argc; i++) {
        int r;
        if ((r = cli_flag(argc, argv, &i, "--package", 1, &manifest, &err)) ||
            (r = cli_flag(argc, argv, &i, "--package-sha256", 1, &pin, &err))) {
            if (r < 0)
                return cli_fail("validate", &err);
            continue;
        }
        clef_err_input(&err, NULL, NULL, argv[i],
                       "unknown flag (see clef "
                       "validate --help)");
        return cli_fail("validate", &err);
    }
    if (!manifest) {
        clef_err_input(&err, NULL, NULL, "--package", "is required");
        return cli_fail("validate", &err);
    }
    if (pin && !clef_sha256_is_hex(pin)) {
        clef_err_input(&err, NULL, NULL, "--package-sha256",
                       "must be 64 hexadecimal digits");
        return cli_fail("validate", &err);
    }
    clef_package pkg;
    if (clef_package_read(manifest, pin, &pkg, &err))
        return cli_fail("validate", &err);

    const clef_config *c = &pkg.cfg;
    printf("package: %s\n", pkg.manifest);
    printf("sha256: %s\n", pkg.sha256);
    printf("head: hidden_size %d, width %d, heads %d, feedforward %d, "
           "routing_layers %d, layers %d (%zu parameters)\n",
           c->d, c->w, c->h, c->f, c->R, c->L, clef_param_count(c));
    printf("lexical: %d rows × %d\n", pkg.V, c->d);
    printf("initial weights: %s\n", pkg.init_path ? pkg.init_path : "(none)");
    printf("shards: %d\n", pkg.nshards);
    printf("records: %d (train %d, validation %d, test %d)\n", pkg.nrecords,
           pkg.nsplit[0], pkg.nsplit[1], pkg.nsplit[2]);
    hist hT = {0}, hQ = {0}, hN = {0};
    int types[3] = {0}, nquestions = 0, nlabel = 0, ntarget = 0, nnone = 0;
    for (int i = 0; i < pkg.nrecords; i++) {
        const clef_record *r = &pkg.records[i];
        hist_add(&hT, r->T);
        hist_add(&hQ, r->Q);
        for (int q = 0; q < r->Q; q++) {
            hist_add(&hN, r->opt_off[q + 1] - r->opt_off[q]);
            types[r->qtype[q]]++;
            nquestions++;
            if (!r->has_target[q])
                nnone++;
            else if (r->label[q] >= 0)
                nlabel++;
            else
                ntarget++;
        }
    }
    printf("questions: %d (noul %d, choice %d, score %d; label %d, target %d, "
           "none %d)\n",
           nquestions, types[0], types[1], types[2], nlabel, ntarget, nnone);
    hist_print("T (positions) histogram, value×records", &hT);
    hist_print("Q (questions) histogram, value×records", &hQ);
    hist_print("options per question histogram, value×questions", &hN);
    print_buckets(&pkg);
    printf("ok\n");
    clef_package_free(&pkg);
    return 0;
}

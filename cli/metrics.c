// Per-question classification metrics (cli/metrics.h).
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static int row_argmax(const float *x, int k)
{
    int best = 0;
    for (int i = 1; i < k; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

// Bins (b/15, (b+1)/15]: c·15 is exact in double for a float c.
static int ece_bin(float c)
{
    double b = ceil((double)c * CLI_ECE_BINS) - 1;
    if (!(b >= 0))
        return 0;
    return b > CLI_ECE_BINS - 1 ? CLI_ECE_BINS - 1 : (int)b;
}

static double safe_log(float p)
{
    return log(p > FLT_MIN ? (double)p : (double)FLT_MIN);
}

static double example_nll(const float *p, int label, const float *y, int k)
{
    if (!y)
        return -safe_log(p[label]);
    double s = 0;
    for (int j = 0; j < k; j++)
        if (y[j] > 0)
            s -= (double)y[j] * safe_log(p[j]);
    return s;
}

static double macro_f1(const int *cm, int k)
{
    double sum = 0;
    int classes = 0;
    for (int c = 0; c < k; c++) {
        long tp = cm[c * k + c], as_label = 0, as_pred = 0;
        for (int j = 0; j < k; j++) {
            as_label += cm[c * k + j];
            as_pred += cm[j * k + c];
        }
        if (as_label + as_pred == 0)
            continue; // neither a label nor a prediction: left out
        sum += 2.0 * tp / (double)(as_label + as_pred);
        classes++;
    }
    return classes ? sum / classes : 0;
}

int cli_metrics_compute(const float *p, const int *label, const float *target,
                        int n, int k, cli_qmetrics *m)
{
    if (n < 1 || k < 1)
        return -1;
    for (int i = 0; i < n; i++)
        if (label[i] < 0 || label[i] >= k)
            return -1;
    for (size_t i = 0; i < (size_t)n * (size_t)k; i++)
        if (!isfinite(p[i]) || (target && !isfinite(target[i])))
            return -1;
    memset(m->confusion, 0, (size_t)k * (size_t)k * sizeof(int));
    double bin_n[CLI_ECE_BINS] = {0}, bin_acc[CLI_ECE_BINS] = {0},
           bin_conf[CLI_ECE_BINS] = {0}, nll = 0;
    int correct = 0;
    for (int i = 0; i < n; i++) {
        const float *row = p + (size_t)i * k;
        int pred = row_argmax(row, k), ok = pred == label[i];
        m->confusion[label[i] * k + pred]++;
        correct += ok;
        nll += example_nll(row, label[i],
                           target ? target + (size_t)i * k : NULL, k);
        int b = ece_bin(row[pred]);
        bin_n[b]++;
        bin_acc[b] += ok;
        bin_conf[b] += row[pred];
    }
    double ece = 0;
    for (int b = 0; b < CLI_ECE_BINS; b++)
        if (bin_n[b] > 0)
            ece += fabs(bin_acc[b] / bin_n[b] - bin_conf[b] / bin_n[b]) *
                   bin_n[b] / n;
    m->n = n;
    m->k = k;
    m->accuracy = (double)correct / n;
    m->macro_f1 = macro_f1(m->confusion, k);
    m->nll = nll / n;
    m->ece = ece;
    return 0;
}

// ------------------------------------------- per question id of a split --

typedef struct qset {
    const char *qid;
    int n, k, differ;
    const char **opts; // (k) union in first-seen order
    int first_m;       // option count of the first instance
} qset;

static int find_str(const char *const *a, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(a[i], s))
            return i;
    return -1;
}

// A question instance that counts: labelled, two or more options, named.
static int counts(const clef_record *r, int q)
{
    return r->qid && r->oid && r->qid[q] && cli_true_option(r, q) >= 0 &&
           r->opt_off[q + 1] - r->opt_off[q] >= 2;
}

// Adds the options of question q of r to s's union.
static int union_add(qset *s, const clef_record *r, int q)
{
    int o0 = r->opt_off[q], m = r->opt_off[q + 1] - o0;
    if (s->n == 0)
        s->first_m = m;
    else if (m != s->first_m)
        s->differ = 1;
    for (int j = 0; j < m; j++) {
        const char *id = r->oid[o0 + j];
        int at = find_str(s->opts, s->k, id);
        if (s->n > 0 && at != j)
            s->differ = 1;
        if (at >= 0)
            continue;
        const char **g = realloc(s->opts, (size_t)(s->k + 1) * sizeof(*g));
        if (!g)
            return -1;
        s->opts = g;
        s->opts[s->k++] = id;
    }
    s->n++;
    return 0;
}

static void qsets_free(qset *s, int n)
{
    for (int i = 0; s && i < n; i++)
        free(s[i].opts);
    free(s);
}

// The question ids of split (first-seen order) with their option unions.
static qset *collect(const clef_package *pkg, int split, int *nout)
{
    qset *s = NULL;
    int n = 0;
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        if (r->split != split)
            continue;
        for (int q = 0; q < r->Q; q++) {
            if (!counts(r, q))
                continue;
            int at = -1;
            for (int j = 0; j < n && at < 0; j++)
                if (!strcmp(s[j].qid, r->qid[q]))
                    at = j;
            if (at < 0) {
                qset *g = realloc(s, (size_t)(n + 1) * sizeof(*g));
                if (!g)
                    goto oom;
                s = g;
                memset(&s[n], 0, sizeof(*s));
                s[n].qid = r->qid[q];
                at = n++;
            }
            if (union_add(&s[at], r, q))
                goto oom;
        }
    }
    *nout = n;
    return s ? s : calloc(1, sizeof(*s));
oom:
    qsets_free(s, n);
    return NULL;
}

// Scatters every instance of s into union-ordered rows and computes.
static int compute_set(const clef_package *pkg, const cli_eval *ev, int split,
                       const qset *s, cli_qmetrics *m)
{
    size_t nk = (size_t)s->n * (size_t)s->k;
    float *p = calloc(nk, sizeof(float)), *y = calloc(nk, sizeof(float));
    int *label = malloc((size_t)s->n * sizeof(int)), rc = -1, e = 0;
    m->confusion = malloc((size_t)s->k * (size_t)s->k * sizeof(int));
    if (!p || !y || !label || !m->confusion)
        goto cleanup;
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        if (r->split != split)
            continue;
        const float *rp = ev->p + ev->zoff[i];
        for (int q = 0; q < r->Q; q++) {
            if (!counts(r, q) || strcmp(r->qid[q], s->qid))
                continue;
            int o0 = r->opt_off[q], mo = r->opt_off[q + 1] - o0;
            for (int j = 0; j < mo; j++) {
                int u = find_str(s->opts, s->k, r->oid[o0 + j]);
                p[(size_t)e * s->k + u] = rp[o0 + j];
                y[(size_t)e * s->k + u] = r->target[o0 + j];
            }
            label[e] =
                find_str(s->opts, s->k, r->oid[o0 + cli_true_option(r, q)]);
            e++;
        }
    }
    rc = cli_metrics_compute(p, label, y, s->n, s->k, m);
cleanup:
    free(p);
    free(y);
    free(label);
    return rc;
}

static json_t *question_json(const qset *s, const cli_qmetrics *m)
{
    json_t *opts = json_array(), *cm = json_array();
    for (int j = 0; j < s->k; j++) {
        json_array_append_new(opts, json_string(s->opts[j]));
        json_t *row = json_array();
        for (int c = 0; c < s->k; c++)
            json_array_append_new(row,
                                  json_integer(m->confusion[j * s->k + c]));
        json_array_append_new(cm, row);
    }
    return json_pack("{s:i, s:o, s:b, s:f, s:f, s:f, s:f, s:o}", "n", m->n,
                     "options", opts, "options_differ", s->differ, "accuracy",
                     m->accuracy, "macro_f1", m->macro_f1, "nll", m->nll, "ece",
                     m->ece, "confusion", cm);
}

// {"<qid>": metrics} (full 1, else {"<qid>": accuracy}); NULL when the
// split has no question to report or on failure (*fail set).
static json_t *split_json(const clef_package *pkg, const cli_eval *ev,
                          int split, int full, int *fail)
{
    int n = 0;
    qset *s = collect(pkg, split, &n);
    if (!s) {
        *fail = 1;
        return NULL;
    }
    json_t *out = json_object();
    for (int i = 0; i < n && out; i++) {
        if (s[i].k < 2)
            continue;
        cli_qmetrics m = {0};
        json_t *q = NULL; // left out: non-finite probabilities
        if (!compute_set(pkg, ev, split, &s[i], &m))
            q = full ? question_json(&s[i], &m) : json_real(m.accuracy);
        if (q)
            json_object_set_new(out, s[i].qid, q);
        free(m.confusion);
    }
    qsets_free(s, n);
    if (*fail || !out || json_object_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *cli_per_question_json(const clef_package *pkg, const cli_eval *ev,
                              unsigned mask)
{
    json_t *j = json_object();
    int fail = !j;
    for (int s = 0; s < 3 && !fail; s++) {
        if (!(mask & (1u << s)))
            continue;
        json_t *sj = split_json(pkg, ev, s, 1, &fail);
        if (sj)
            json_object_set_new(j, clef_split_name(s), sj);
    }
    if (fail) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *cli_split_accuracy_json(const clef_package *pkg, const cli_eval *ev,
                                int split)
{
    int fail = 0;
    json_t *j = split_json(pkg, ev, split, 0, &fail);
    return j ? j : (fail ? NULL : json_object());
}

// clef sweep: each run's result and the leaderboard (stdout table,
// DIR/sweep.json, DIR/sweep.csv, DIR/best.safetensors).
//
// sweep.json holds only what the runs' bits decide (settings, metrics,
// steps), so an interrupted and resumed sweep writes the same file byte for
// byte; timings, which differ between any two sweeps, are in sweep.csv and
// the table only.
#define _XOPEN_SOURCE 700
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

// The metric of a run: with early stopping its best evaluation, else the
// validation metric after training (NAN: none, e.g. no validation record).
static void result_metric(const sweep_spec *s, json_t *res, sweep_result *r)
{
    json_t *m = json_object_get(res, "metrics");
    json_t *es = json_object_get(res, "early_stopping");
    r->steps =
        (long)json_integer_value(json_object_get(res, "completed_steps"));
    r->best_step = r->steps;
    r->metric = NAN;
    json_t *v = json_object_get(m, s->metric_acc ? "validation_accuracy_after"
                                                 : "validation_loss_after");
    if (json_is_number(v))
        r->metric = json_number_value(v);
    if (json_is_object(es)) {
        json_t *bs = json_object_get(es, "best_step");
        json_t *bv = json_object_get(es, "best_value"); // of --metric
        if (json_is_integer(bs))
            r->best_step = (long)json_integer_value(bs);
        if (json_is_number(bv))
            r->metric = json_number_value(bv);
        r->stopped_early = json_is_true(json_object_get(es, "stopped_early"));
    }
    json_t *tl = json_object_get(m, "train_loss_after");
    r->train_loss = json_is_number(tl) ? json_number_value(tl) : NAN;
    json_t *t = json_object_get(res, "timing");
    r->updates_per_s = json_number_value(json_object_get(t, "updates_per_s"));
    r->wall_s = json_number_value(json_object_get(t, "total_s"));
}

int sweep_result_read(const sweep_spec *s, const char *run_dir, sweep_result *r)
{
    memset(r, 0, sizeof(*r));
    r->metric = r->train_loss = NAN;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/result.json", run_dir);
    json_t *res = json_load_file(path, 0, NULL);
    if (!res) {
        snprintf(r->status, sizeof(r->status), "no result");
        return -1;
    }
    const char *st = json_string_value(json_object_get(res, "status"));
    r->ok = st && !strcmp(st, "ok");
    snprintf(r->status, sizeof(r->status), "%s", st ? st : "?");
    result_metric(s, res, r);
    json_decref(res);
    return 0;
}

// Rank order: ok runs with a metric first (best first: lowest loss or
// highest accuracy), then the rest; ties keep the expansion order.
typedef struct ranked {
    int run;
    int higher_better; // the metric is an accuracy (qsort has no context)
    sweep_result r;
} ranked;

static int by_metric(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    const int ha = a->r.ok && isfinite(a->r.metric);
    const int hb = b->r.ok && isfinite(b->r.metric);
    if (ha != hb)
        return hb - ha;
    if (ha && a->r.metric != b->r.metric) {
        const int a_better = a->higher_better ? a->r.metric > b->r.metric
                                              : a->r.metric < b->r.metric;
        return a_better ? -1 : 1;
    }
    return a->run - b->run;
}

static void rank_runs(const sweep_spec *s, ranked *rk)
{
    for (int i = 0; i < s->nruns; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/runs/%s", s->dir, s->runs[i].name);
        rk[i].run = i;
        rk[i].higher_better = s->metric_acc;
        sweep_result_read(s, dir, &rk[i].r);
    }
    qsort(rk, (size_t)s->nruns, sizeof(*rk), by_metric);
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *board_json(const sweep_spec *s, const ranked *rk,
                          const char *sha, int frozen_ok)
{
    json_t *runs = json_array();
    for (int i = 0; i < s->nruns; i++) {
        const sweep_run *sr = &s->runs[rk[i].run];
        const sweep_result *r = &rk[i].r;
        json_t *set = json_object();
        for (int k = 0; k < sr->nset; k++)
            json_object_set_new(set, sr->set[k].key,
                                json_string(sr->set[k].val));
        char w[PATH_MAX];
        snprintf(w, sizeof(w), "runs/%s/weights.safetensors", sr->name);
        json_array_append_new(
            runs,
            json_pack("{s:i, s:s, s:o, s:s, s:o, s:I, s:I, s:b, s:o, "
                      "s:s}",
                      "rank", i + 1, "name", sr->name, "settings", set,
                      "status", r->status, "metric", num_or_null(r->metric),
                      "best_step", (json_int_t)r->best_step, "steps",
                      (json_int_t)r->steps, "stopped_early", r->stopped_early,
                      "train_loss_after", num_or_null(r->train_loss), "weights",
                      w));
    }
    const int has_best = s->nruns && rk[0].r.ok && isfinite(rk[0].r.metric);
    return json_pack("{s:{s:s, s:s}, s:s, s:b, s:o, s:o}", "package",
                     "manifest", s->manifest, "sha256", sha, "metric",
                     s->metric_acc ? "val_accuracy" : "val_loss",
                     "frozen_inputs_unchanged", frozen_ok, "best",
                     has_best ? json_string(s->runs[rk[0].run].name)
                              : json_null(),
                     "runs", runs);
}

// A CSV field: quoted (names hold commas), quotes doubled.
static void csv_str(FILE *f, const char *v)
{
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

static int write_csv(const sweep_spec *s, const ranked *rk, clef_err *err)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/sweep.csv", s->dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot write", tmp);
    fprintf(f,
            "rank,name,settings,status,%s,best_step,steps,stopped_early,"
            "train_loss_after,updates_per_s,wall_s\n",
            s->metric_acc ? "val_accuracy" : "val_loss");
    for (int i = 0; i < s->nruns; i++) {
        const sweep_run *sr = &s->runs[rk[i].run];
        const sweep_result *r = &rk[i].r;
        char set[4096] = "";
        for (int k = 0; k < sr->nset; k++) {
            size_t at = strlen(set);
            snprintf(set + at, sizeof(set) - at, "%s--%s=%s", k ? " " : "",
                     sr->set[k].key, sr->set[k].val);
        }
        fprintf(f, "%d,", i + 1);
        csv_str(f, sr->name);
        fputc(',', f);
        csv_str(f, set);
        fprintf(f, ",%s,%.9g,%ld,%ld,%d,%.9g,%.6g,%.6g\n", r->status, r->metric,
                r->best_step, r->steps, r->stopped_early, r->train_loss,
                r->updates_per_s, r->wall_s);
    }
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot write", path);
    }
    return 0;
}

// DIR/best.safetensors -> runs/<best>/weights.safetensors (relative, so the
// sweep dir can move), replaced atomically.
static int link_best(const sweep_spec *s, const ranked *rk, clef_err *err)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32], target[PATH_MAX];
    snprintf(path, sizeof(path), "%s/best.safetensors", s->dir);
    if (!s->nruns || !rk[0].r.ok || !isfinite(rk[0].r.metric)) {
        unlink(path);
        return 0;
    }
    snprintf(target, sizeof(target), "runs/%s/weights.safetensors",
             s->runs[rk[0].run].name);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    unlink(tmp);
    if (symlink(target, tmp) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot link", path);
    }
    return 0;
}

static void print_table(const sweep_spec *s, const ranked *rk)
{
    int wname = 4;
    for (int i = 0; i < s->nruns; i++) {
        int n = (int)strlen(s->runs[i].name);
        wname = n > wname ? n : wname;
    }
    printf("%-4s  %-*s  %12s  %8s  %10s  %9s  %8s  %s\n", "rank", wname, "name",
           s->metric_acc ? "val_accuracy" : "val_loss", "step", "train_loss",
           "upd/s", "wall_s", "status");
    for (int i = 0; i < s->nruns; i++) {
        const sweep_result *r = &rk[i].r;
        printf("%-4d  %-*s  %12.6g  %8ld  %10.6g  %9.1f  %8.2f  %s%s\n", i + 1,
               wname, s->runs[rk[i].run].name, r->metric, r->best_step,
               r->train_loss, r->updates_per_s, r->wall_s, r->status,
               r->stopped_early ? " (stopped early)" : "");
    }
}

int sweep_board(const sweep_spec *s, const char *package_sha256, int frozen_ok,
                clef_err *err)
{
    ranked *rk = calloc((size_t)s->nruns + 1, sizeof(*rk));
    if (!rk)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    rank_runs(s, rk);
    json_t *j = board_json(s, rk, package_sha256, frozen_ok);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sweep.json", s->dir);
    int rc = j ? cli_write_json(path, j,
                                JSON_INDENT(2) | JSON_REAL_PRECISION(9), err)
               : clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    json_decref(j);
    if (!rc)
        rc = write_csv(s, rk, err);
    if (!rc)
        rc = link_best(s, rk, err);
    if (!rc)
        print_table(s, rk);
    free(rk);
    return rc;
}

// clef train's early stopping (--patience, --metric, --min-delta; CLI.md):
// the best weights so far, their file best-<step>.safetensors, and the
// state a checkpoint carries so that a resumed run stops where an
// uninterrupted one would.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"
#include "train_run.h"
#include "weights.h"

void train_best_path(const train_run *t, long step, char *out, size_t n)
{
    snprintf(out, n, "%s/best-%ld.safetensors", t->c.run_dir, step);
}

const char *train_metric_name(const train_cfg *c)
{
    return c->metric_acc ? "val_accuracy" : "val_loss";
}

int train_es_stopped(const train_run *t)
{
    return t->es.on && t->es.bad >= t->c.patience;
}

static int params_sha(const train_run *t, const float *w,
                      char hex[CLEF_SHA256_HEX])
{
    return clef_sha256_hex(w, t->hd.nparams * sizeof(float), hex);
}

// The best weights of the resumed state, from best-<step>.safetensors; they
// must be the bits the checkpoint recorded (best_sha256).
static int es_load_best(train_run *t, const char *sha, clef_err *err)
{
    char path[PATH_MAX], hex[CLEF_SHA256_HEX] = "";
    train_best_path(t, t->es.best_step, path, sizeof(path));
    clef_head h2;
    clef_err e2 = {0};
    if (clef_weights_load(path, t->pkg->cfg.h, &h2, &e2))
        return clef_err_input(err, path, NULL, "--resume",
                              "the checkpoint's early-stopping best weights "
                              "(step %ld) cannot be read: %s",
                              t->es.best_step, e2.msg);
    int same = h2.nparams == t->hd.nparams &&
               !memcmp(&h2.cfg, &t->hd.cfg, sizeof(h2.cfg)) &&
               !params_sha(t, h2.params, hex) && sha &&
               clef_sha256_equal(hex, sha);
    if (same)
        memcpy(t->es.best, h2.params, t->hd.nparams * sizeof(float));
    clef_head_free(&h2);
    if (!same)
        return clef_err_input(err, path, NULL, "best_sha256",
                              "these are not the best weights (step %ld) "
                              "that %s recorded",
                              t->es.best_step, t->c.resume);
    t->es.written = t->es.best_step;
    return 0;
}

// The resumed checkpoint's __metadata__.early_stopping: {"best_step",
// "best_loss" (the best --metric value, C99 hex float; the name is older than
// --metric), "metric" (absent: val_loss), "bad", "best_sha256", ...}.
static int es_restore(train_run *t, clef_err *err)
{
    json_error_t je;
    json_t *j = json_loads(t->es.meta, 0, &je);
    json_t *bs = json_object_get(j, "best_step");
    json_t *bad = json_object_get(j, "bad");
    const char *loss = json_string_value(json_object_get(j, "best_loss"));
    char *end = NULL;
    double l = loss ? strtod(loss, &end) : NAN;
    long step = (long)json_integer_value(bs);
    json_int_t nbad = json_integer_value(bad);
    int rc = 0;
    if (!json_is_integer(bs) || !json_is_integer(bad) || !loss || *end ||
        step < -1 || step > t->start_step || nbad < 0 || nbad > INT_MAX ||
        (step >= 0) != (isfinite(l) != 0)) {
        rc = clef_err_input(err, t->c.resume, NULL,
                            "__metadata__.early_stopping",
                            "not the early-stopping state of this run "
                            "(best_step, best_loss, bad)");
        goto cleanup;
    }
    const char *m = json_string_value(json_object_get(j, "metric"));
    if (strcmp(m ? m : "val_loss", train_metric_name(&t->c))) {
        rc = clef_err_input(err, t->c.resume, NULL,
                            "__metadata__.early_stopping.metric",
                            "the checkpoint's early stopping watched %s, "
                            "this run asks for %s",
                            m ? m : "val_loss", train_metric_name(&t->c));
        goto cleanup;
    }
    t->es.best_step = step;
    t->es.best_value = l;
    t->es.bad = (int)nbad;
    if (step >= 0)
        rc = es_load_best(
            t, json_string_value(json_object_get(j, "best_sha256")), err);
cleanup:
    json_decref(j);
    return rc;
}

// Before anything is written: --patience needs a validation record; a
// resumed run continues the checkpoint's early stopping.
int train_es_setup(train_run *t, clef_err *err)
{
    const train_cfg *c = &t->c;
    early_stop *es = &t->es;
    es->on = c->patience > 0;
    es->best_step = -1;
    es->written = -1;
    es->best_value = c->metric_acc ? -INFINITY : INFINITY;
    if (!es->on)
        return 0;
    if (t->pkg->nsplit[CLEF_SPLIT_VALIDATION] == 0)
        return clef_err_input(err, t->pkg->manifest, NULL, "--patience",
                              "early stopping needs a record with split "
                              "\"validation\"; the package has none");
    if (!(es->best = malloc(t->hd.nparams * sizeof(float))))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if (!c->resume)
        return 0;
    if (!es->meta)
        return clef_err_input(err, c->resume, NULL, "--patience",
                              "the checkpoint holds no early-stopping state "
                              "(it was trained without --patience): resume "
                              "without --patience or start a new run");
    return es_restore(t, err);
}

// One --eval-every evaluation: an improvement beats the best --metric
// (validation loss, lower; or validation accuracy, higher) by more than
// --min-delta.
void train_es_observe(train_run *t, long step, const cli_eval *ev)
{
    early_stop *es = &t->es;
    const int V = CLEF_SPLIT_VALIDATION, acc = t->c.metric_acc;
    const double v =
        acc ? (ev->nacc[V] ? (double)ev->correct[V] / ev->nacc[V] : NAN)
            : ev->loss[V];
    const int better = acc ? v > es->best_value + t->c.min_delta
                           : v < es->best_value - t->c.min_delta;
    if (isfinite(v) && better) {
        es->best_value = v;
        es->best_step = step;
        es->bad = 0;
        memcpy(es->best, t->hd.params, t->hd.nparams * sizeof(float));
    } else {
        es->bad++;
    }
}

// The state for the checkpoint's metadata (malloc'd JSON), NULL when off.
char *train_es_meta(const train_run *t)
{
    char loss[64], hex[CLEF_SHA256_HEX] = "";
    snprintf(loss, sizeof(loss), "%a", t->es.best_value);
    if (t->es.best_step >= 0 && params_sha(t, t->es.best, hex))
        return NULL;
    json_t *j = json_pack("{s:i, s:f, s:s, s:I, s:s, s:i, s:s}", "patience",
                          t->c.patience, "min_delta", t->c.min_delta, "metric",
                          train_metric_name(&t->c), "best_step",
                          (json_int_t)t->es.best_step, "best_loss", loss, "bad",
                          t->es.bad, "best_sha256", hex);
    char *out = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return out;
}

// best-<best_step>.safetensors (atomic), before a checkpoint refers to it.
int train_es_write_best(train_run *t, clef_err *err)
{
    early_stop *es = &t->es;
    if (!es->on || es->best_step < 0 || es->written == es->best_step)
        return 0;
    clef_head view = t->hd;
    view.params = es->best;
    size_t at = 0;
    int ti = clef_first_nonfinite(&view, es->best, &at);
    if (ti >= 0)
        return clef_err_set(err, CLEF_ERR_RUN,
                            "non-finite best parameter %s[%zu] (step %ld): "
                            "nothing written",
                            view.tensors[ti].name, at, es->best_step);
    char path[PATH_MAX], step[32];
    train_best_path(t, es->best_step, path, sizeof(path));
    snprintf(step, sizeof(step), "%ld", es->best_step);
    clef_st_meta meta[2] = {{"package_sha256", t->pkg->sha256}, {"step", step}};
    int rc = clef_weights_save(path, &view, meta, 2, err);
    if (!rc)
        es->written = es->best_step;
    return rc;
}

json_t *train_es_json(const train_run *t)
{
    const early_stop *es = &t->es;
    if (!es->on)
        return json_null();
    json_t *best = es->best_step >= 0 ? json_real(es->best_value) : json_null();
    return json_pack(
        "{s:i, s:f, s:s, s:o, s:O, s:o, s:I, s:b}", "patience", t->c.patience,
        "min_delta", t->c.min_delta, "metric", train_metric_name(&t->c),
        "best_step",
        es->best_step >= 0 ? json_integer(es->best_step) : json_null(),
        "best_value", best,
        t->c.metric_acc ? "best_validation_accuracy" : "best_validation_loss",
        best, "stopped_at_step", (json_int_t)t->hd.step, "stopped_early",
        train_es_stopped(t) && t->hd.step < t->total_steps);
}

// clef train's result JSON (FORMATS.md): metrics before and after, every
// record's scores, the history points, the artifacts, data-parallel facts
// and timing, written to the run dir's result.json (and --json).
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>

#include "cli_mpi.h"
#include "metrics.h"
#include "scheduler/threads.h"
#include "train_run.h"

static json_t *split_loss(const cli_eval *ev, int s)
{
    return ev->nq[s] ? json_real(ev->loss[s]) : json_null();
}

static json_t *split_acc(const cli_eval *ev, int s)
{
    return ev->nacc[s] ? json_real((double)ev->correct[s] / ev->nacc[s])
                       : json_null();
}

static json_t *metrics_json(const clef_package *pkg, const cli_eval *b,
                            const cli_eval *a)
{
    json_t *m = json_object();
    const int T = CLEF_SPLIT_TRAIN, V = CLEF_SPLIT_VALIDATION;
    json_object_set_new(m, "train_loss_before", split_loss(b, T));
    json_object_set_new(m, "train_loss_after", split_loss(a, T));
    json_object_set_new(m, "validation_loss_before", split_loss(b, V));
    json_object_set_new(m, "validation_loss_after", split_loss(a, V));
    json_object_set_new(m, "train_accuracy_before", split_acc(b, T));
    json_object_set_new(m, "train_accuracy_after", split_acc(a, T));
    json_object_set_new(m, "validation_accuracy_before", split_acc(b, V));
    json_object_set_new(m, "validation_accuracy_after", split_acc(a, V));
    json_t *pa = cli_per_question_json(pkg, a, CLI_SPLITS_ALL);
    json_t *pb = cli_per_question_json(pkg, b, CLI_SPLITS_ALL);
    json_object_set_new(m, "per_question",
                        pa && pb
                            ? json_pack("{s:o, s:o}", "after", pa, "before", pb)
                            : json_null());
    if (!(pa && pb)) {
        json_decref(pa);
        json_decref(pb);
    }
    return m;
}

static json_t *floats_json(const float *x, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real((double)x[i]));
    return a;
}

// Every record with its logits and probabilities (after training).
static json_t *records_json(const clef_package *pkg, const cli_eval *ev)
{
    json_t *arr = json_array();
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        const float *z = ev->z + ev->zoff[i], *p = ev->p + ev->zoff[i];
        json_t *qs = json_array();
        for (int q = 0; q < r->Q; q++) {
            int o0 = r->opt_off[q], n = r->opt_off[q + 1] - o0;
            json_t *opts = json_array();
            for (int j = 0; j < n; j++)
                json_array_append_new(opts, json_string(r->oid[o0 + j]));
            json_t *jq = json_pack(
                "{s:s, s:s, s:o, s:o, s:o, s:s}", "id", r->qid[q], "type",
                clef_qtype_name(r->qtype[q]), "options", opts, "logits",
                floats_json(z + o0, n), "probabilities", floats_json(p + o0, n),
                "predicted", r->oid[o0 + cli_argmax(p + o0, n)]);
            if (r->has_target[q] && r->label[q] >= 0)
                json_object_set_new(jq, "label",
                                    json_string(r->oid[o0 + r->label[q]]));
            else
                json_object_set_new(jq, "label", json_null());
            if (r->has_target[q] && r->label[q] < 0)
                json_object_set_new(jq, "target",
                                    floats_json(r->target + o0, n));
            json_array_append_new(qs, jq);
        }
        json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "id", r->id,
                                             "split", clef_split_name(r->split),
                                             "questions", qs));
    }
    return arr;
}

json_t *train_history_point(const clef_package *pkg, long step,
                            const cli_eval *ev)
{
    const int V = CLEF_SPLIT_VALIDATION;
    json_t *perq = cli_split_accuracy_json(pkg, ev, V);
    return json_pack(
        "{s:I, s:o, s:o, s:o, s:o}", "step", (json_int_t)step, "train_loss",
        split_loss(ev, CLEF_SPLIT_TRAIN), "validation_loss", split_loss(ev, V),
        "validation_accuracy", split_acc(ev, V),
        "validation_accuracy_per_question", perq ? perq : json_null());
}

static double peak_rss_mb(void)
{
    struct rusage ru; // peak resident set of the process so far (KiB)
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss / 1024.0 : 0;
}

// Every rank's peak RSS to every rank (t->rss: allocated with the workspace).
void train_rss_gather(train_run *t)
{
    cli_mpi_allgather_f64(peak_rss_mb(), t->rss);
}

// {"ranks": N, "shard_records": S, "peak_rss_mb": [per rank]}, or null.
static json_t *dp_json(const train_run *t)
{
    if (!t->dp)
        return json_null();
    json_t *rss = json_array();
    for (int r = 0; r < cli_mpi_size(); r++)
        json_array_append_new(rss, json_real(t->rss[r]));
    return json_pack("{s:i, s:i, s:s, s:o}", "ranks", cli_mpi_size(),
                     "shard_records", train_dp_shard(&t->c), "combine",
                     "shard order, fixed for any rank count", "peak_rss_mb",
                     rss);
}

static json_t *artifacts_json(const train_run *t, const char *weights)
{
    json_t *ck = json_array();
    for (int i = 0; i < t->nhist; i++) {
        char path[64], full[PATH_MAX + 64];
        snprintf(path, sizeof(path), "checkpoint-%ld.safetensors", t->hist[i]);
        snprintf(full, sizeof(full), "%s/%s", t->run_abs, path);
        json_array_append_new(ck, json_string(full));
    }
    char w[PATH_MAX + 64];
    snprintf(w, sizeof(w), "%s/weights.safetensors", t->run_abs);
    return json_pack("{s:o, s:o}", "weights",
                     weights ? json_string(w) : json_null(), "checkpoints", ck);
}

json_t *train_result_json(train_run *t, const clef_err *fail, int checks[3],
                          const char *weights)
{
    json_t *j = json_object();
    json_object_set_new(j, "status", json_string(fail ? "error" : "ok"));
    if (fail) {
        // what a rerun can --resume from: every checkpoint written is finite
        char last[PATH_MAX + 64] = "";
        if (t->nhist)
            snprintf(last, sizeof(last), "%s/checkpoint-%ld.safetensors",
                     t->run_abs, t->hist[t->nhist - 1]);
        json_object_set_new(
            j, "error",
            json_pack("{s:i, s:s, s:o}", "code", fail->code, "message",
                      fail->msg, "last_good_checkpoint",
                      last[0] ? json_string(last) : json_null()));
    }
    json_object_set_new(j, "completed_steps", json_integer(t->hd.step));
    json_object_set_new(j, "package",
                        json_pack("{s:s, s:s}", "manifest", t->manifest_abs,
                                  "sha256", t->pkg->sha256));
    json_object_set_new(
        j, "train", cli_train_settings(&t->c, t->k->backend, cli_threads()));
    if (t->pkg->provenance)
        json_object_set_new(j, "provenance",
                            json_loads(t->pkg->provenance, 0, NULL));
    if (t->before.z && t->after.z)
        json_object_set_new(j, "metrics",
                            metrics_json(t->pkg, &t->before, &t->after));
    json_object_set_new(j, "early_stopping", train_es_json(t));
    json_object_set_new(
        j, "stop_reason",
        json_string(fail ? "error"
                    : train_es_stopped(t) && t->hd.step < t->total_steps
                        ? "patience"
                        : "epochs"));
    json_object_set_new(j, "history", json_incref(t->history));
    if (t->after.z)
        json_object_set_new(j, "records", records_json(t->pkg, &t->after));
    if (checks)
        json_object_set_new(j, "checks",
                            json_pack("{s:b, s:b, s:b}",
                                      "frozen_inputs_unchanged", checks[0],
                                      "checkpoint_reload", checks[1],
                                      "export_parity", checks[2]));
    json_object_set_new(j, "artifacts", artifacts_json(t, weights));
    json_object_set_new(j, "data_parallel", dp_json(t));
    double total = cli_now() - t->t0;
    long steps = t->hd.step - t->start_step;
    double peak_mb = peak_rss_mb();
    json_object_set_new(j, "timing",
                        json_pack("{s:f, s:f, s:f, s:f}", "total_s", total,
                                  "train_s", t->train_s, "updates_per_s",
                                  t->train_s > 0 ? steps / t->train_s : 0.0,
                                  "peak_rss_mb", peak_mb));
    return j;
}

int train_write_results(train_run *t, json_t *res, clef_err *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/result.json", t->c.run_dir);
    size_t fl = JSON_INDENT(2) | JSON_REAL_PRECISION(9);
    int rc = cli_write_json(path, res, fl, err);
    if (!rc && t->c.json_out)
        rc = cli_write_json(t->c.json_out, res, fl, err);
    return rc;
}

// Suite early_stop: clef train --patience K [--min-delta X] (issue 17). On a
// fixture whose validation loss falls, then rises, the run stops K
// evaluations after its best; weights.safetensors is bit for bit a plain run
// of best_step steps; a run resumed from any checkpoint (the abandoned
// future's files still in the run dir) exports the same bits and the same
// early_stopping block; bad usage exits 2 with nothing written.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "util_package.h"

// Seed 4 with these settings: validation loss falls until about step 9, then
// rises. One update per epoch (8 train records, batch 8), so --epochs N is
// exactly N steps.
#define FIXTURE "fixture --records 8 --validation 4 --seed 4"
#define TRAIN                                                                  \
    "train --quiet --batch 8 --lr 0.003 --backend scalar --threads 1 "         \
    "--package %s/package.json"
#define PATIENCE 2

static char *make_fixture(const char *dir)
{
    char *pkg = tp_path(dir, "pkg");
    cr_assert_eq(tp_clef(dir, FIXTURE " --out %s", pkg), 0, "%s", tp_err(dir));
    return pkg;
}

// The early-stopping run into dir/name: 30 epochs, evaluations every step,
// checkpoints every 2 steps, all kept.
static void run_patience(const char *dir, const char *pkg, const char *name)
{
    int rc = tp_clef(dir,
                     TRAIN " --run-dir %s/%s --epochs 30 --eval-every 1 "
                           "--patience %d --checkpoint-every 2 "
                           "--keep-checkpoints 0",
                     pkg, dir, name, PATIENCE);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
}

static long jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "%s is not an integer", key);
    return (long)json_integer_value(v);
}

Test(early_stop, stops_after_patience_and_exports_the_best, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char *pkg = make_fixture(dir);
    run_patience(dir, pkg, "run");
    json_t *r = tp_load_json(tp_path(dir, "run/result.json"));
    json_t *es = json_object_get(r, "early_stopping");
    cr_assert(json_is_object(es), "no early_stopping block");
    long best = jint(es, "best_step"), stop = jint(es, "stopped_at_step");
    cr_expect_eq(jint(es, "patience"), PATIENCE);
    cr_expect_eq(json_real_value(json_object_get(es, "min_delta")), 0.0);
    cr_expect(json_is_true(json_object_get(es, "stopped_early")),
              "the fixture's validation loss should rise and stop the run");
    cr_expect_lt(stop, 30);
    cr_expect_eq(stop - best, PATIENCE, "best %ld, stopped at %ld", best, stop);
    cr_expect_eq(jint(r, "completed_steps"), stop);
    // the best is the lowest validation loss of the history after step 0
    json_t *h = json_object_get(r, "history"), *pt;
    size_t i;
    long argmin = -1;
    double lo = INFINITY;
    json_array_foreach (h, i, pt) {
        double v = json_real_value(json_object_get(pt, "validation_loss"));
        cr_expect(json_is_number(json_object_get(pt, "validation_accuracy")));
        cr_expect(json_is_object(
            json_object_get(pt, "validation_accuracy_per_question")));
        if (jint(pt, "step") > 0 && v < lo) {
            lo = v;
            argmin = jint(pt, "step");
        }
    }
    cr_expect_eq(argmin, best);
    double bl = json_real_value(json_object_get(es, "best_validation_loss"));
    cr_expect_eq(bl, lo);
    cr_expect_gt(best, 1, "the best should not be the first evaluation");
    cr_expect_eq(jint(json_array_get(h, json_array_size(h) - 1), "step"), stop);
    // the metrics after training are the best weights'
    json_t *m = json_object_get(r, "metrics");
    cr_expect_eq(json_real_value(json_object_get(m, "validation_loss_after")),
                 bl);
    json_t *pq = json_object_get(m, "per_question");
    cr_expect(json_is_object(json_object_get(
                  json_object_get(json_object_get(pq, "after"), "validation"),
                  "action")),
              "no metrics.per_question.after.validation.action");
    cr_expect_null(json_object_get(json_object_get(pq, "after"), "test"),
                   "the fixture has no test record");
    // bit for bit the weights of a plain run of best_step steps
    int rc =
        tp_clef(dir, TRAIN " --run-dir %s/plain --epochs %ld", pkg, dir, best);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    cr_expect(tp_same_file(tp_path(dir, "run/weights.safetensors"),
                           tp_path(dir, "plain/weights.safetensors")),
              "weights.safetensors is not the weights at step %ld", best);
    // the last checkpoint holds the latest state, not the best
    char name[64];
    snprintf(name, sizeof(name), "run/checkpoint-%ld.safetensors", stop);
    cr_expect(tp_exists(tp_path(dir, name)), "%s", name);
    json_decref(r);
    tp_rmdir(dir);
}

// Resumed from each checkpoint, in the same run dir (the later checkpoints
// and best files of the abandoned future still there) and in a fresh copy of
// the checkpoint alone with its best file: the same weights and block.
Test(early_stop, resume_continues_exactly, .timeout = 180)
{
    char *dir = tp_tmpdir();
    char *pkg = make_fixture(dir);
    run_patience(dir, pkg, "run");
    json_t *r = tp_load_json(tp_path(dir, "run/result.json"));
    json_t *want = json_deep_copy(json_object_get(r, "early_stopping"));
    long stop = jint(want, "stopped_at_step"), best = jint(want, "best_step");
    json_decref(r);
    cr_assert_eq(tp_copy_dir(tp_path(dir, "run/weights.safetensors"),
                             tp_path(dir, "want.safetensors")),
                 0);
    // steps before, at and after the best, one short of the stop (its bad
    // count is not 0) and the stop itself
    long from[] = {2, best - 1, best + 1, stop - 1, stop};
    for (size_t i = 0; i < sizeof(from) / sizeof(*from); i++) {
        if (from[i] % 2 && from[i] != stop)
            from[i]++; // checkpoints are every 2 steps
        int rc =
            tp_clef(dir,
                    TRAIN " --run-dir %s/run --epochs 30 "
                          "--eval-every 1 --patience %d --checkpoint-every 2 "
                          "--keep-checkpoints 0 --resume "
                          "%s/run/checkpoint-%ld.safetensors",
                    pkg, dir, PATIENCE, dir, from[i]);
        cr_assert_eq(rc, 0, "resume from %ld: %s", from[i], tp_err(dir));
        cr_expect(tp_same_file(tp_path(dir, "run/weights.safetensors"),
                               tp_path(dir, "want.safetensors")),
                  "resumed from step %ld: other weights", from[i]);
        json_t *r2 = tp_load_json(tp_path(dir, "run/result.json"));
        json_t *got = json_object_get(r2, "early_stopping");
        char *gs = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        char *ws = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
        cr_expect(json_equal(got, want), "resumed from %ld: %s, want %s",
                  from[i], gs, ws);
        free(gs);
        free(ws);
        json_decref(r2);
    }
    // a fresh run dir with only the checkpoint at stop - 1 (or its even
    // neighbour) and the best file it refers to
    long at = (stop - 1) % 2 ? stop - 2 : stop - 1;
    char ck[64], bf[64];
    snprintf(ck, sizeof(ck), "checkpoint-%ld.safetensors", at);
    snprintf(bf, sizeof(bf), "best-%ld.safetensors", at >= best ? best : at);
    cr_assert_eq(tp_copy_dir(tp_path(dir, "run"), tp_path(dir, "all")), 0);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "mkdir %s/lone && cp %s/all/%s %s/all/%s "
             "%s/lone/",
             dir, dir, ck, dir, bf, dir);
    cr_assert_eq(system(cmd), 0);
    int rc = tp_clef(dir,
                     TRAIN " --run-dir %s/lone --epochs 30 "
                           "--eval-every 1 --patience %d --resume %s/lone/%s",
                     pkg, dir, PATIENCE, dir, ck);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    cr_expect(tp_same_file(tp_path(dir, "lone/weights.safetensors"),
                           tp_path(dir, "want.safetensors")));
    json_decref(want);
    tp_rmdir(dir);
}

// The best files follow checkpoint pruning: only those a kept checkpoint
// refers to stay; a best file that is not the recorded one is refused.
Test(early_stop, best_files_pruned_and_checked, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char *pkg = make_fixture(dir);
    int rc = tp_clef(dir,
                     TRAIN " --run-dir %s/run --epochs 30 --eval-every 1 "
                           "--patience %d --checkpoint-every 1 "
                           "--keep-checkpoints 2",
                     pkg, dir, PATIENCE);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    json_t *r = tp_load_json(tp_path(dir, "run/result.json"));
    json_t *es = json_object_get(r, "early_stopping");
    long best = jint(es, "best_step"), stop = jint(es, "stopped_at_step");
    json_decref(r);
    char name[64];
    for (long s = 1; s <= stop; s++) {
        snprintf(name, sizeof(name), "run/best-%ld.safetensors", s);
        cr_expect_eq(tp_exists(tp_path(dir, name)), s == best, "%s: exists %d",
                     name, tp_exists(tp_path(dir, name)));
    }
    // the kept checkpoint before the stop refers to best-<best>: replace
    // it with other weights (a plain run's) and resuming must refuse
    rc = tp_clef(dir, TRAIN " --run-dir %s/plain --epochs 1", pkg, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    snprintf(name, sizeof(name), "run/best-%ld.safetensors", best);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cp %s/plain/weights.safetensors %s", dir,
             tp_path(dir, name));
    cr_assert_eq(system(cmd), 0);
    rc = tp_clef(dir,
                 TRAIN
                 " --run-dir %s/run --epochs 30 --eval-every 1 "
                 "--patience %d --resume %s/run/checkpoint-%ld.safetensors",
                 pkg, dir, PATIENCE, dir, stop - 1);
    cr_expect_eq(rc, 2, "%s", tp_err(dir));
    cr_expect(strstr(tp_err(dir), "best_sha256"), "%s", tp_err(dir));
    // and a missing one
    unlink(tp_path(dir, name));
    rc = tp_clef(dir,
                 TRAIN
                 " --run-dir %s/run --epochs 30 --eval-every 1 "
                 "--patience %d --resume %s/run/checkpoint-%ld.safetensors",
                 pkg, dir, PATIENCE, dir, stop - 1);
    cr_expect_eq(rc, 2, "%s", tp_err(dir));
    cr_expect(strstr(tp_err(dir), name + 4), "%s", tp_err(dir));
    tp_rmdir(dir);
}

Test(early_stop, bad_usage_exits_2_with_nothing_written, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char *pkg = make_fixture(dir);
    static const struct {
        const char *flags, *names;
    } bad[] = {
        {"--patience 2", "--eval-every"},
        {"--patience 2 --eval-every 0", "--eval-every"},
        {"--patience -1 --eval-every 1", "--patience"},
        {"--patience 0 --eval-every 1", "--patience"},
        {"--patience x --eval-every 1", "--patience"},
        {"--patience 2 --eval-every 1 --min-delta -0.1", "--min-delta"},
        {"--patience 2 --eval-every 1 --min-delta nan", "--min-delta"},
        {"--eval-every 1 --min-delta 0.1", "--patience"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        int rc =
            tp_clef(dir, TRAIN " --run-dir %s/run %s", pkg, dir, bad[i].flags);
        cr_expect_eq(rc, 2, "%s: exit %d", bad[i].flags, rc);
        cr_expect(strstr(tp_err(dir), bad[i].names), "%s: %s", bad[i].flags,
                  tp_err(dir));
        cr_expect(!tp_exists(tp_path(dir, "run")), "%s wrote the run dir",
                  bad[i].flags);
    }
    // no validation record
    char *nov = tp_path(dir, "noval");
    cr_assert_eq(tp_clef(dir, "fixture --out %s --validation 0", nov), 0);
    int rc = tp_clef(dir,
                     TRAIN " --run-dir %s/run --eval-every 1 "
                           "--patience 1",
                     nov, dir);
    cr_expect_eq(rc, 2, "exit %d", rc);
    cr_expect(strstr(tp_err(dir), "validation") &&
                  strstr(tp_err(dir), "--patience"),
              "%s", tp_err(dir));
    cr_expect(!tp_exists(tp_path(dir, "run")));
    // --patience on a checkpoint trained without it: refused, untouched
    rc = tp_clef(dir,
                 TRAIN " --run-dir %s/plain --epochs 2 "
                       "--checkpoint-every 1",
                 pkg, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    size_t n0 = 0;
    char *before = tp_slurp(tp_path(dir, "plain/result.json"), &n0);
    rc =
        tp_clef(dir,
                TRAIN " --run-dir %s/plain --epochs 4 --eval-every 1 "
                      "--patience 1 --resume %s/plain/checkpoint-1.safetensors",
                pkg, dir, dir);
    cr_expect_eq(rc, 2, "exit %d", rc);
    cr_expect(strstr(tp_err(dir), "early-stopping"), "%s", tp_err(dir));
    size_t n1 = 0;
    char *after = tp_slurp(tp_path(dir, "plain/result.json"), &n1);
    cr_expect(before && after && n0 == n1 && !memcmp(before, after, n0),
              "result.json changed");
    cr_expect(!tp_exists(tp_path(dir, "plain/checkpoint-3.safetensors")));
    free(before);
    free(after);
    tp_rmdir(dir);
}

Test(early_stop, help_documents_the_flags, .timeout = 30)
{
    char *dir = tp_tmpdir();
    cr_assert_eq(tp_clef(dir, "train --help"), 0);
    char *out = tp_slurp(tp_path(dir, "out"), NULL);
    cr_assert_not_null(out);
    cr_expect(strstr(out, "--patience K"), "%s", out);
    cr_expect(strstr(out, "--min-delta X"), "%s", out);
    cr_expect(strstr(out, "early_stopping"), "%s", out);
    cr_expect(strstr(out, "per_question"), "%s", out);
    free(out);
    tp_rmdir(dir);
}

// Mixed geometry (option lists that differ under one question id, soft
// targets, a test record): per-question metrics for every split with labels.
Test(early_stop, per_question_on_mixed_package, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_path(dir, "mixed");
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", pkg);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(tp_write_mixed_package(pkg), 0);
    int rc = tp_clef(dir,
                     "train --quiet --package %s/package.json "
                     "--run-dir %s/run --epochs 3 --eval-every 1 "
                     "--patience 5",
                     pkg, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    json_t *r = tp_load_json(tp_path(dir, "run/result.json"));
    json_t *pq = json_object_get(json_object_get(r, "metrics"), "per_question");
    char *txt = json_dumps(pq, JSON_COMPACT);
    const char *splits[3] = {"train", "validation", "test"};
    for (int b = 0; b < 2; b++) {
        json_t *ba = json_object_get(pq, b ? "before" : "after");
        for (int s = 0; s < 3; s++) {
            json_t *sp = json_object_get(ba, splits[s]);
            cr_expect(json_is_object(sp) && json_object_size(sp) > 0,
                      "%s.%s missing: %s", b ? "before" : "after", splits[s],
                      txt);
            const char *qid;
            json_t *q;
            json_object_foreach (sp, qid, q) {
                size_t k = json_array_size(json_object_get(q, "options"));
                cr_expect_geq(k, 2, "%s: %s", qid, txt);
                json_t *cm = json_object_get(q, "confusion");
                cr_expect_eq(json_array_size(cm), k, "%s", qid);
                long sum = 0;
                size_t a, c;
                json_t *row, *x;
                json_array_foreach (cm, a, row)
                    json_array_foreach (row, c, x)
                        sum += (long)json_integer_value(x);
                cr_expect_eq(sum, jint(q, "n"), "%s: %s", qid, txt);
                double acc = json_real_value(json_object_get(q, "accuracy"));
                double ece = json_real_value(json_object_get(q, "ece"));
                cr_expect(acc >= 0 && acc <= 1 && ece >= 0 && ece <= 1);
                cr_expect(isfinite(json_real_value(json_object_get(q, "nll"))));
            }
        }
    }
    // "first" has 2, 3 and 4 options in different train records: the union
    json_t *first = json_object_get(
        json_object_get(json_object_get(pq, "after"), "train"), "first");
    cr_expect(json_is_true(json_object_get(first, "options_differ")), "%s",
              txt);
    cr_expect_eq(json_array_size(json_object_get(first, "options")), 4, "%s",
                 txt);
    free(txt);
    json_decref(r);
    tp_rmdir(dir);
}

// --metric val_accuracy: the best is the highest validation accuracy of the
// history (the first of equals); best.safetensors is weights.safetensors,
// last.safetensors the weights of a plain run to the stop; stop_reason says
// why the run ended.
Test(early_stop, accuracy_metric_best_and_last_files, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char *pkg = make_fixture(dir);
    int rc = tp_clef(dir,
                     TRAIN " --run-dir %s/run --epochs 30 --eval-every 1 "
                           "--patience 3 --metric val_accuracy",
                     pkg, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    json_t *r = tp_load_json(tp_path(dir, "run/result.json"));
    json_t *es = json_object_get(r, "early_stopping");
    cr_assert_str_eq(json_string_value(json_object_get(es, "metric")),
                     "val_accuracy");
    long best = jint(es, "best_step"), stop = jint(es, "stopped_at_step");
    json_t *h = json_object_get(r, "history"), *pt;
    size_t i;
    long argmax = -1;
    double hi = -INFINITY;
    json_array_foreach (h, i, pt) {
        double v = json_real_value(json_object_get(pt, "validation_accuracy"));
        if (jint(pt, "step") > 0 && v > hi) {
            hi = v;
            argmax = jint(pt, "step");
        }
    }
    cr_expect_eq(argmax, best);
    cr_expect_eq(json_real_value(json_object_get(es, "best_value")), hi);
    cr_expect_eq(
        json_real_value(json_object_get(es, "best_validation_accuracy")), hi);
    const int early = json_is_true(json_object_get(es, "stopped_early"));
    cr_expect_str_eq(json_string_value(json_object_get(r, "stop_reason")),
                     early ? "patience" : "epochs");
    cr_expect(tp_same_file(tp_path(dir, "run/weights.safetensors"),
                           tp_path(dir, "run/best.safetensors")));
    rc = tp_clef(dir, TRAIN " --run-dir %s/plain --epochs %ld", pkg, dir, stop);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    cr_expect(tp_same_file(tp_path(dir, "run/last.safetensors"),
                           tp_path(dir, "plain/weights.safetensors")),
              "last.safetensors is not the weights at step %ld", stop);
    json_t *p = tp_load_json(tp_path(dir, "plain/result.json"));
    cr_expect_str_eq(json_string_value(json_object_get(p, "stop_reason")),
                     "epochs");
    cr_expect(!tp_exists(tp_path(dir, "plain/best.safetensors")));
    json_decref(p);
    // resuming with the other metric is refused
    char ck[64];
    snprintf(ck, sizeof(ck), "run/checkpoint-%ld.safetensors", stop);
    rc = tp_clef(dir,
                 TRAIN " --run-dir %s/run --epochs 30 --eval-every 1 "
                       "--patience 3 --resume %s",
                 pkg, dir, tp_path(dir, ck));
    cr_expect_eq(rc, 2, "%s", tp_err(dir));
    cr_expect(strstr(tp_err(dir), "metric"), "%s", tp_err(dir));
    json_decref(r);
    tp_rmdir(dir);
}

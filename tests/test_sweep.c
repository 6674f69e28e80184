// Suite sweep: clef sweep (issue 19). Every run's weights are bit for bit
// those of the same settings run alone with clef train, at --parallel 1 and
// 2; the runs expand in the documented order with readable names; a sweep
// killed as by kill -9 (twice) and rerun ends with the same sweep.json and
// weights, byte for byte, as an uninterrupted one; a sweep dir of another
// sweep is refused; bad specs exit 2 with nothing written; the leaderboard
// ranks by the metric and links the best run's weights; runs in fp32 and
// bf16 in one sweep each match clef train alone in their precision.
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util_package.h"

#define FIXTURE "fixture --records 12 --validation 4 --positions 24 --seed 5"
// 12 train records: batch 4 is 3 updates an epoch, batch 2 is 6
// dropout on: the masks must not depend on which worker runs a run
#define SHARED "--epochs 3 --backend scalar --dropout 0.1"
#define GRID "--grid lr=1e-3,3e-3 --grid batch=4,2"

static char *make_fixture(const char *dir)
{
    char *pkg = tp_path(dir, "pkg");
    cr_assert_eq(tp_clef(dir, FIXTURE " --out %s", pkg), 0, "%s", tp_err(dir));
    return pkg;
}

static int sweep(const char *dir, const char *pkg, const char *name,
                 const char *extra)
{
    return tp_clef(
        dir, "sweep --package %s/package.json --sweep-dir %s/%s " SHARED " %s",
        pkg, dir, name, extra);
}

// The runs of DIR/name/sweep-spec.json, in expansion order.
static json_t *spec_runs(const char *dir, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s/sweep-spec.json", dir, name);
    json_t *j = tp_load_json(p);
    json_t *runs = json_incref(json_object_get(j, "runs"));
    json_decref(j);
    return runs;
}

// Each run of sweep `name` against clef train alone with its settings.
static void check_runs_alone(const char *dir, const char *pkg, const char *name)
{
    json_t *runs = spec_runs(dir, name);
    cr_assert_eq(json_array_size(runs), 4);
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *r = json_array_get(runs, i);
        const char *rn = json_string_value(json_object_get(r, "name"));
        json_t *set = json_object_get(r, "settings");
        const char *lr = json_string_value(json_object_get(set, "lr"));
        const char *b = json_string_value(json_object_get(set, "batch"));
        cr_assert(rn && lr && b);
        char alone[PATH_MAX], a[PATH_MAX + 32], s[PATH_MAX];
        snprintf(alone, sizeof(alone), "%s/alone-%s-%zu", dir, name, i);
        cr_assert_eq(tp_clef(dir,
                             "train --quiet --package %s/package.json "
                             "--run-dir %s " SHARED " --lr %s --batch %s",
                             pkg, alone, lr, b),
                     0, "%s", tp_err(dir));
        snprintf(a, sizeof(a), "%s/weights.safetensors", alone);
        snprintf(s, sizeof(s), "%s/%s/runs/%s/weights.safetensors", dir, name,
                 rn);
        cr_assert(tp_same_file(a, s),
                  "run %s of sweep %s differs from clef "
                  "train alone",
                  rn, name);
    }
    json_decref(runs);
}

Test(sweep, runs_match_clef_train_alone)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    cr_assert_eq(sweep(dir, pkg, "p1", GRID " --parallel 1"), 0, "%s",
                 tp_err(dir));
    cr_assert_eq(sweep(dir, pkg, "p2", GRID " --parallel 2"), 0, "%s",
                 tp_err(dir));
    // the first axis outermost, the last innermost
    static const char *const order[4] = {"lr=1e-3,batch=4", "lr=1e-3,batch=2",
                                         "lr=3e-3,batch=4", "lr=3e-3,batch=2"};
    json_t *runs = spec_runs(dir, "p1");
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(json_string_value(json_object_get(
                             json_array_get(runs, (size_t)i), "name")),
                         order[i]);
    json_decref(runs);
    check_runs_alone(dir, pkg, "p1");
    check_runs_alone(dir, pkg, "p2");
    tp_rmdir(dir);
}

// Runs in fp32 and bf16 share one package: each must still be clef train
// alone in its precision, bit for bit. A bf16 run alone keeps x̂ in bf16 and
// reads it so outside the products too (X = x̂ ⊙ γ + β, γ's gradient), so
// the shared package holds both copies; reading the float x̂ instead gives
// other bits.
Test(sweep, mixed_precisions_match_clef_train_alone)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    cr_assert_eq(sweep(dir, pkg, "mix", "--grid precision=fp32,bf16"), 0, "%s",
                 tp_err(dir));
    static const char *const prec[2] = {"fp32", "bf16"};
    for (int i = 0; i < 2; i++) {
        char alone[PATH_MAX], a[PATH_MAX + 32], s[PATH_MAX];
        snprintf(alone, sizeof(alone), "%s/alone-%s", dir, prec[i]);
        cr_assert_eq(tp_clef(dir,
                             "train --quiet --package %s/package.json "
                             "--run-dir %s " SHARED " --precision %s",
                             pkg, alone, prec[i]),
                     0, "%s", tp_err(dir));
        snprintf(a, sizeof(a), "%s/weights.safetensors", alone);
        snprintf(s, sizeof(s), "%s/mix/runs/prec=%s/weights.safetensors", dir,
                 prec[i]);
        cr_assert(tp_same_file(a, s),
                  "the %s run of a mixed sweep differs from clef train alone",
                  prec[i]);
    }
    tp_rmdir(dir);
}

Test(sweep, seeds_are_innermost)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    cr_assert_eq(sweep(dir, pkg, "s",
                       "--grid weight-decay=0,0.01 --seeds 2 "
                       "--seed 10 --batching bucketed"),
                 0, "%s", tp_err(dir));
    static const char *const order[4] = {"wd=0,seed=10", "wd=0,seed=11",
                                         "wd=0.01,seed=10", "wd=0.01,seed=11"};
    json_t *runs = spec_runs(dir, "s");
    cr_assert_eq(json_array_size(runs), 4);
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(json_string_value(json_object_get(
                             json_array_get(runs, (size_t)i), "name")),
                         order[i]);
    json_decref(runs);
    tp_rmdir(dir);
}

// Checkpoints every 3 steps, not the sweep's default of one per 30 s (none
// in these short runs), so that runs die half way; the uninterrupted sweep
// keeps the default: the checkpoints' cadence must change no bit either.
#define CUT_CKPT " --checkpoint-every 3"
// Killed at the checkpoint of step `kill` of whichever run reaches it first.
static int killed_sweep(const char *dir, const char *pkg, const char *name,
                        const char *kill)
{
    setenv("CLEF_FAULT_KILL_STEP", kill, 1);
    int rc = sweep(dir, pkg, name, GRID CUT_CKPT " --parallel 2");
    unsetenv("CLEF_FAULT_KILL_STEP");
    return rc;
}

Test(sweep, resume_after_kill_is_byte_identical)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    cr_assert_eq(sweep(dir, pkg, "whole", GRID " --parallel 2"), 0, "%s",
                 tp_err(dir));
    // step 6 dies in the first batch-2 run (batch-4 runs checkpoint at 3, 6
    // and 9 too): then, resumed, at 12 in a batch-2 run
    int rc = killed_sweep(dir, pkg, "cut", "6");
    cr_assert(rc == 137 || rc == -1, "not killed: exit %d", rc);
    rc = killed_sweep(dir, pkg, "cut", "12");
    cr_assert(rc == 137 || rc == -1, "not killed on resume: exit %d", rc);
    cr_assert_eq(sweep(dir, pkg, "cut", GRID CUT_CKPT " --parallel 2"), 0, "%s",
                 tp_err(dir));
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof(a), "%s/whole/sweep.json", dir);
    snprintf(b, sizeof(b), "%s/cut/sweep.json", dir);
    cr_assert(tp_same_file(a, b), "sweep.json differs after kill and rerun");
    json_t *runs = spec_runs(dir, "whole");
    for (size_t i = 0; i < json_array_size(runs); i++) {
        const char *rn =
            json_string_value(json_object_get(json_array_get(runs, i), "name"));
        snprintf(a, sizeof(a), "%s/whole/runs/%s/weights.safetensors", dir, rn);
        snprintf(b, sizeof(b), "%s/cut/runs/%s/weights.safetensors", dir, rn);
        cr_assert(tp_same_file(a, b), "run %s differs after kill and rerun",
                  rn);
    }
    json_decref(runs);
    // the same command again: every run skipped, outputs checked
    cr_assert_eq(sweep(dir, pkg, "cut", GRID CUT_CKPT " --parallel 2"), 0);
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/out", dir);
    char *text = tp_slurp(out, NULL);
    cr_assert(text && strstr(text, "(4 done before, 0 failed)"), "%s", text);
    free(text);
    tp_rmdir(dir);
}

Test(sweep, leaderboard_ranks_and_links_best)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    cr_assert_eq(sweep(dir, pkg, "b", GRID), 0, "%s", tp_err(dir));
    char p[PATH_MAX], link[PATH_MAX];
    snprintf(p, sizeof(p), "%s/b/sweep.json", dir);
    json_t *j = tp_load_json(p);
    json_t *runs = json_object_get(j, "runs");
    cr_assert_eq(json_array_size(runs), 4);
    double prev = -INFINITY;
    for (size_t i = 0; i < 4; i++) {
        json_t *r = json_array_get(runs, i);
        double m = json_number_value(json_object_get(r, "metric"));
        cr_assert(isfinite(m) && m >= prev, "rank %zu out of order", i + 1);
        prev = m;
    }
    const char *best = json_string_value(json_object_get(j, "best"));
    cr_assert_str_eq(best, json_string_value(json_object_get(
                               json_array_get(runs, 0), "name")));
    snprintf(p, sizeof(p), "%s/b/best.safetensors", dir);
    ssize_t n = readlink(p, link, sizeof(link) - 1);
    cr_assert(n > 0);
    link[n] = '\0';
    char want[PATH_MAX];
    snprintf(want, sizeof(want), "runs/%s/weights.safetensors", best);
    cr_assert_str_eq(link, want);
    json_decref(j);
    tp_rmdir(dir);
}

Test(sweep, refuses_another_sweeps_dir)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    cr_assert_eq(sweep(dir, pkg, "d", GRID), 0, "%s", tp_err(dir));
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/d/sweep.json", dir);
    size_t n0 = 0;
    char *before = tp_slurp(p, &n0);
    cr_assert_eq(sweep(dir, pkg, "d", "--grid lr=1e-3,2e-3 --grid batch=4,2"),
                 2);
    cr_assert(strstr(tp_err(dir), "different runs"), "%s", tp_err(dir));
    cr_assert_eq(tp_clef(dir,
                         "sweep --package %s/package.json --sweep-dir "
                         "%s/d --epochs 4 --backend scalar " GRID,
                         pkg, dir),
                 2);
    cr_assert(strstr(tp_err(dir), "different shared settings"), "%s",
              tp_err(dir));
    char *other = tp_path(dir, "other");
    cr_assert_eq(tp_clef(dir,
                         "fixture --records 12 --validation 4 "
                         "--positions 24 --seed 6 --out %s",
                         other),
                 0);
    cr_assert_eq(sweep(dir, other, "d", GRID), 2);
    cr_assert(strstr(tp_err(dir), "different package"), "%s", tp_err(dir));
    size_t n1 = 0;
    char *after = tp_slurp(p, &n1);
    cr_assert(before && after && n0 == n1 && !memcmp(before, after, n0));
    free(before);
    free(after);
    tp_rmdir(dir);
}

// A bad spec: exit 2, a message naming the axis or value, nothing written.
static void bad(const char *dir, const char *pkg, const char *extra,
                const char *says)
{
    char sd[PATH_MAX];
    snprintf(sd, sizeof(sd), "%s/bad", dir);
    int rc = sweep(dir, pkg, "bad", extra);
    cr_assert_eq(rc, 2, "%s: exit %d: %s", extra, rc, tp_err(dir));
    cr_assert(strstr(tp_err(dir), says), "%s: \"%s\" not in: %s", extra, says,
              tp_err(dir));
    struct stat st;
    cr_assert_neq(stat(sd, &st), 0, "%s: the sweep dir was created", extra);
}

Test(sweep, bad_specs_exit_2_and_write_nothing)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    bad(dir, pkg, "--grid learning-rate=1e-3,2e-3", "unknown setting");
    bad(dir, pkg, "--grid lr=", "axis lr has no values");
    bad(dir, pkg, "--grid lr=1e-3,,2e-3", "axis lr: an empty value");
    bad(dir, pkg, "--grid lr", "is not NAME=V1,V2");
    bad(dir, pkg, "--grid lr=1e-3,0.001", "duplicate run");
    bad(dir, pkg, "--grid lr=1e-3,1e-3", "value 1e-3 given twice");
    bad(dir, pkg, "--grid batch=4,0", "batch=0");
    bad(dir, pkg, "--grid batch=4,0", "out of range");
    bad(dir, pkg, "--grid lr=abc", "run lr=abc: field --lr: \"abc\"");
    bad(dir, pkg, "--grid backend=scalar,avx2", "cannot vary between runs");
    bad(dir, pkg, "--grid lr=1e-3,2e-3 --lr 1e-3", "also given as a shared");
    bad(dir, pkg,
        "--grid lr=1,2,3,4,5,6,7,8,9,10 --grid wd=0,1,2,3,4,5,6,7,"
        "8,9 --grid eps=1,2,3,4,5,6,7,8,9,10 --seeds 11",
        "more than 10000 need --yes");
    bad(dir, pkg, "--grid seed=1,2 --seeds 2", "seed axis");
    bad(dir, pkg, "--run-dir x", "not a sweep flag");
    char runs[PATH_MAX];
    snprintf(runs, sizeof(runs), "%s/runs.json", dir);
    const char *file = "[{\"lr\": 0.001}, {\"lr\": 1e-3}]";
    cr_assert_eq(tp_write(runs, file, strlen(file)), 0);
    char arg[PATH_MAX + 16];
    snprintf(arg, sizeof(arg), "--runs %s", runs);
    bad(dir, pkg, arg, "duplicate run");
    const char *bad_file = "[{\"lr\": 0.001}, {\"lr\": [1]}]";
    cr_assert_eq(tp_write(runs, bad_file, strlen(bad_file)), 0);
    bad(dir, pkg, arg, "[1].lr");
    tp_rmdir(dir);
}

Test(sweep, runs_file_lists_runs_in_order)
{
    char *dir = tp_tmpdir(), *pkg = make_fixture(dir);
    char runs[PATH_MAX];
    snprintf(runs, sizeof(runs), "%s/runs.json", dir);
    const char *file = "[{\"lr\": 0.003, \"weight_decay\": 0}, {\"batch\": 2}]";
    cr_assert_eq(tp_write(runs, file, strlen(file)), 0);
    char arg[PATH_MAX + 16];
    snprintf(arg, sizeof(arg), "--runs %s", runs);
    cr_assert_eq(sweep(dir, pkg, "f", arg), 0, "%s", tp_err(dir));
    json_t *r = spec_runs(dir, "f");
    cr_assert_eq(json_array_size(r), 2);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_array_get(r, 0), "name")),
        "lr=0.003,wd=0");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_array_get(r, 1), "name")),
        "batch=2");
    json_decref(r);
    tp_rmdir(dir);
}

// Suite train_guards: clef train refuses what would corrupt a run, and
// never leaves a corrupt one (issue 16, defects 3, 4, 5, 10, 11, 12): eps and
// betas that make AdamW divide by zero, seeds that are not decimal digits or
// not representable in JSON, non-finite state never written, pruning by the
// run's own history after --resume, stale temporaries removed, an unusable
// run dir refused before the first update, outputs that are inputs refused.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "weights.h"
#include "util_package.h"

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

// Every value of every tensor of a checkpoint is finite (the loader checks).
static void expect_checkpoint_finite(const char *path)
{
    clef_head hd;
    memset(&hd, 0, sizeof(hd));
    clef_err err = {0};
    cr_expect_eq(clef_checkpoint_load(path, &hd, &err), 0, "%s: %s", path,
                 err.msg);
    clef_head_free(&hd);
}

// --eps 0 made AdamW divide 0/0 (a NaN checkpoint); eps below the smallest
// normal float and betas that round to 1 are as bad.
Test(train_guards, eps_and_betas_that_divide_by_zero_exit_2, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    const char *bad[] = {"--eps 0", "--eps 1e-50", "--eps -1",
                         "--betas 0.9,0.9999999999", "--betas 0.99999999,0.9"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        int rc = tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --checkpoint-every 1 %s",
                         pkg, dir, bad[i]);
        cr_expect_eq(rc, 2, "%s: exit %d", bad[i], rc);
        cr_expect(strstr(tp_err(dir), bad[i][2] == 'e' ? "--eps" : "--betas"),
                  "%s: %s", bad[i], tp_err(dir));
        cr_expect(!tp_exists(tp_path(dir, "run")), "%s wrote the run dir",
                  bad[i]);
    }
    tp_rmdir(dir);
}

// " -1" became 2^64 - 1 and seeds >= 2^63 printed as negative numbers.
Test(train_guards, seeds_are_decimal_and_fit_json, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    const char *bad[] = {"' -1'",
                         "-1",
                         "' 5'",
                         "+5",
                         "0x10",
                         "5x",
                         "9223372036854775808",
                         "18446744073709551615",
                         "''"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        int rc = tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --seed %s",
                         pkg, dir, bad[i]);
        cr_expect_eq(rc, 2, "--seed %s: exit %d", bad[i], rc);
        cr_expect(strstr(tp_err(dir), "--seed"), "%s", tp_err(dir));
        cr_expect(!tp_exists(tp_path(dir, "run")));
        rc = tp_clef(dir, "fixture --out %s/f --seed %s", dir, bad[i]);
        cr_expect_eq(rc, 2, "fixture --seed %s: exit %d", bad[i], rc);
    }
    // the largest seed is kept exactly in result.json and the checkpoint
    cr_assert_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --seed 9223372036854775807",
                         pkg, dir),
                 0, "%s", tp_err(dir));
    json_t *r = load_json(tp_path(dir, "run/result.json"));
    json_t *seed = json_object_get(json_object_get(r, "train"), "seed");
    cr_expect(json_is_integer(seed));
    cr_expect_eq(json_integer_value(seed), INT64_MAX);
    json_decref(r);
    tp_rmdir(dir);
}

// A parameter that turns NaN after update 3 (CLEF_FAULT_NAN_STEP) never
// reaches a file: checkpoint-3 is not written, checkpoints 1-2 stay, exit 1,
// result.json names the tensor and the last good checkpoint.
Test(train_guards, non_finite_state_is_never_written, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    int rc = tp_clef(dir,
                     "train --quiet --package %s/package.json --run-dir "
                     "%s/run --epochs 4 --checkpoint-every 1 "
                     "--keep-checkpoints 0",
                     pkg, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    rc = tp_clef(dir,
                 "train --quiet --package %s/package.json --run-dir "
                 "%s/bad --epochs 4 --checkpoint-every 1 "
                 "--keep-checkpoints 0 --json-out %s/bad.json",
                 pkg, dir, dir);
    cr_assert_eq(rc, 0);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "env CLEF_FAULT_NAN_STEP=3 %s/clef train "
             "--quiet --package %s/package.json --run-dir %s/nan --epochs 4 "
             "--checkpoint-every 1 --keep-checkpoints 0 >%s/out 2>%s/err",
             CLEF_BIN_DIR, pkg, dir, dir, dir);
    int st = system(cmd);
    cr_assert(WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 1, "%s", tp_err(dir));
    cr_expect(strstr(tp_err(dir), "non-finite parameter"), "%s", tp_err(dir));
    cr_expect(tp_exists(tp_path(dir, "nan/checkpoint-1.safetensors")));
    cr_expect(tp_exists(tp_path(dir, "nan/checkpoint-2.safetensors")));
    cr_expect(!tp_exists(tp_path(dir, "nan/checkpoint-3.safetensors")),
              "a checkpoint with a NaN was written");
    cr_expect(!tp_exists(tp_path(dir, "nan/weights.safetensors")));
    expect_checkpoint_finite(tp_path(dir, "nan/checkpoint-2.safetensors"));
    json_t *r = load_json(tp_path(dir, "nan/result.json"));
    cr_expect_str_eq(json_string_value(json_object_get(r, "status")), "error");
    json_t *e = json_object_get(r, "error");
    const char *last =
        json_string_value(json_object_get(e, "last_good_checkpoint"));
    cr_expect(last && strstr(last, "/checkpoint-2.safetensors"), "%s",
              last ? last : "(null)");
    json_decref(r);
    tp_rmdir(dir);
}

// Resuming from step 2 of a run that reached 6: the stale checkpoints 4-6
// of the abandoned future must not make pruning delete the resumed run's own
// newest checkpoint (the final reload then failed).
Test(train_guards, resume_prunes_by_its_own_history, .timeout = 90)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    cr_assert_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --epochs 3 "
                         "--checkpoint-every 1 --keep-checkpoints 0",
                         pkg, dir),
                 0, "%s", tp_err(dir));
    cr_assert(tp_exists(tp_path(dir, "run/checkpoint-6.safetensors")));
    // 2 steps an epoch: resume from step 2 to 4, keeping one checkpoint
    int rc = tp_clef(dir,
                     "train --quiet --package %s/package.json --run-dir "
                     "%s/run --epochs 2 --checkpoint-every 1 "
                     "--keep-checkpoints 1 --resume "
                     "%s/run/checkpoint-2.safetensors",
                     pkg, dir, dir);
    cr_assert_eq(rc, 0, "resume: exit %d: %s", rc, tp_err(dir));
    json_t *r = load_json(tp_path(dir, "run/result.json"));
    cr_expect_str_eq(json_string_value(json_object_get(r, "status")), "ok");
    json_t *checks = json_object_get(r, "checks");
    cr_expect(json_is_true(json_object_get(checks, "checkpoint_reload")));
    json_t *ck =
        json_object_get(json_object_get(r, "artifacts"), "checkpoints");
    cr_assert_eq(json_array_size(ck), 1, "keeps its own newest one");
    cr_expect(strstr(json_string_value(json_array_get(ck, 0)),
                     "/checkpoint-4.safetensors"));
    cr_expect(tp_exists(tp_path(dir, "run/checkpoint-4.safetensors")));
    cr_expect(!tp_exists(tp_path(dir, "run/checkpoint-3.safetensors")),
              "its own older checkpoint is pruned");
    cr_expect(!tp_exists(tp_path(dir, "run/checkpoint-2.safetensors")),
              "the checkpoint it resumed from is its history too");
    json_decref(r);
    tp_rmdir(dir);
}

// Temporaries of writes interrupted by a crash ("<output>.tmp.<pid>", the
// pid long gone) are removed on resume, and a run dir holding only those
// counts as empty; a live writer's temporary and other files are kept.
Test(train_guards, stale_temporaries_are_removed, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    cr_assert_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --epochs 1",
                         pkg, dir),
                 0, "%s", tp_err(dir));
    // pid 2^22 + 1 exceeds Linux's pid_max limit: never a live process
    const char *stale[] = {"checkpoint-7.safetensors.tmp.4194305",
                           "weights.safetensors.tmp.4194305",
                           "result.json.tmp.4194305"};
    char live[64], other[] = "notes.tmp.4194305";
    snprintf(live, sizeof(live), "checkpoint-9.safetensors.tmp.%ld",
             (long)getpid());
    char p[1200];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/run/%s", dir, stale[i]);
        cr_assert_eq(tp_write(p, "x", 1), 0);
    }
    snprintf(p, sizeof(p), "%s/run/%s", dir, other);
    cr_assert_eq(tp_write(p, "x", 1), 0);
    cr_assert_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --epochs 2 --resume "
                         "%s/run/checkpoint-2.safetensors",
                         pkg, dir, dir),
                 0, "%s", tp_err(dir));
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/run/%s", dir, stale[i]);
        cr_expect(!tp_exists(p), "%s left", stale[i]);
    }
    snprintf(p, sizeof(p), "%s/run/%s", dir, other);
    cr_expect(tp_exists(p), "a file that is not clef's was removed");
    // a run dir with nothing but stale temporaries is a fresh run's
    snprintf(p, sizeof(p), "%s/run2", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/run2/%s", dir, stale[0]);
    cr_assert_eq(tp_write(p, "x", 1), 0);
    cr_expect_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run2",
                         pkg, dir),
                 0, "%s", tp_err(dir));
    cr_expect(!tp_exists(p));
    // a live writer's temporary is not stale: the dir is not empty
    snprintf(p, sizeof(p), "%s/run3", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/run3/%s", dir, live);
    cr_assert_eq(tp_write(p, "x", 1), 0);
    cr_expect_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run3",
                         pkg, dir),
                 2);
    cr_expect(tp_exists(p));
    tp_rmdir(dir);
}

// The run dir was checked only when the results were written: a dangling
// link, a file, a path below a file or a read-only folder trained the whole
// run first. Each is exit 2 before anything is written.
Test(train_guards, unusable_run_dir_exits_2_before_training, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    char p[1200];
    snprintf(p, sizeof(p), "%s/dangling", dir);
    cr_assert_eq(symlink("/nonexistent/clef-run", p), 0);
    snprintf(p, sizeof(p), "%s/file", dir);
    cr_assert_eq(tp_write(p, "x", 1), 0);
    const char *runs[] = {"dangling", "file", "file/run"};
    for (int i = 0; i < 3; i++) {
        int rc = tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/%s --json-out %s/r.json",
                         pkg, dir, runs[i], dir);
        cr_expect_eq(rc, 2, "%s: exit %d: %s", runs[i], rc, tp_err(dir));
        cr_expect(strstr(tp_err(dir), "--run-dir"), "%s", tp_err(dir));
        cr_expect(!tp_exists(tp_path(dir, "r.json")), "%s", runs[i]);
    }
    tp_rmdir(dir);
}

// A read-only parent: as root, clef runs as user 65534 (root writes
// anywhere), which needs setpriv and a / that user can traverse.
Test(train_guards, read_only_run_dir_exits_2_before_training, .timeout = 60)
{
    char cmd[4096];
    const char *as = "";
    if (geteuid() == 0) {
        if (system("command -v setpriv >/dev/null 2>&1") != 0)
            cr_skip_test("running as root without setpriv (util-linux): "
                         "the read-only case cannot be checked");
        as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
        snprintf(cmd, sizeof(cmd), "%s%s/clef --version >/dev/null 2>&1", as,
                 CLEF_BIN_DIR);
        if (system(cmd) != 0) // e.g. a chroot whose / is mode 0700
            cr_skip_test("user 65534 cannot run %s/clef here: the read-only "
                         "case cannot be checked",
                         CLEF_BIN_DIR);
    }
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    char p[1200];
    snprintf(p, sizeof(p), "%s/ro", dir);
    cr_assert_eq(mkdir(p, 0555), 0);
    cr_assert_eq(chmod(p, 0555), 0);
    cr_assert_eq(chmod(dir, 0755), 0);
    snprintf(cmd, sizeof(cmd),
             "%s%s/clef train --quiet --package "
             "%s/package.json --run-dir %s/ro/run >/dev/null 2>%s/ro.err",
             as, CLEF_BIN_DIR, pkg, dir, dir);
    int st = system(cmd);
    cr_assert(WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 2, "read-only parent: exit %d",
                 WEXITSTATUS(st));
    cr_expect(!tp_exists(tp_path(dir, "ro/run")));
    tp_rmdir(dir);
}

// --json-out (or a run dir's result.json / weights.safetensors, through a
// link) naming an input replaced the manifest; refused, nothing written.
Test(train_guards, outputs_that_are_inputs_exit_2, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    size_t n0 = 0;
    char *before = tp_slurp(tp_path(pkg, "package.json"), &n0);
    cr_assert_not_null(before);
    const char *outs[] = {"package.json", "init.safetensors",
                          "lexical.safetensors"};
    for (int i = 0; i < 3; i++) {
        if (!tp_exists(tp_path(pkg, outs[i])))
            continue;
        int rc = tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --json-out %s/%s",
                         pkg, dir, pkg, outs[i]);
        cr_expect_eq(rc, 2, "--json-out %s: exit %d", outs[i], rc);
        cr_expect(strstr(tp_err(dir), "--json-out"), "%s", tp_err(dir));
        cr_expect(!tp_exists(tp_path(dir, "run")));
    }
    // a link to the manifest, and --json-out naming the --init weights
    char p[1200];
    snprintf(p, sizeof(p), "%s/link.json", dir);
    cr_assert_eq(symlink(tp_path(pkg, "package.json"), p), 0);
    cr_expect_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --json-out %s",
                         pkg, dir, p),
                 2);
    cr_expect_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/run --init %s/init.safetensors "
                         "--json-out %s/init.safetensors",
                         pkg, dir, pkg, pkg),
                 2);
    size_t n1 = 0;
    char *after = tp_slurp(tp_path(pkg, "package.json"), &n1);
    cr_assert_not_null(after);
    cr_expect(n0 == n1 && !memcmp(before, after, n0),
              "the manifest was overwritten");
    free(before);
    free(after);
    tp_rmdir(dir);
}

// Suite cli: the clef program end to end (CLEF_BIN_DIR/clef in temp dirs):
// the golden one-step run, fixture/validate/inspect, mixed geometries,
// resume equality, score replies, checkpoints, exit codes and the catalogue
// of broken packages (exit 2, a message naming file/record/field/rule, no
// run dir).
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "weights.h"
#include "cpu/cpu.h"
#include "util_package.h"

#define GOLDEN_DIR CLEF_TEST_DATA "/golden/tiny"
// HEAD.md §9: a float32 implementation agrees with the float64 golden answers
// to about 3e-7 relative; the spec says test with 1e-5 (= 84 FLT_EPSILON).
#define GOLDEN_RTOL (84 * FLT_EPSILON)

// dir/name in a per-process pool (each Criterion test is its own process):
// no ownership to track, nothing leaks.
static char *file_in(const char *dir, const char *name)
{
    static char pool[96][1024];
    static int used;
    cr_assert_lt(used, 96, "file_in pool exhausted");
    char *p = pool[used++];
    int n = snprintf(p, sizeof(pool[0]), "%s/%s", dir, name);
    cr_assert_lt(n, (int)sizeof(pool[0]), "path too long");
    return p;
}

static double num(json_t *j)
{
    cr_assert(json_is_number(j), "expected a number");
    return json_number_value(j);
}

static void expect_close(double got, double want, double scale,
                         const char *what)
{
    double tol = GOLDEN_RTOL * fmax(fabs(want), scale);
    cr_expect(fabs(got - want) <= tol, "%s: got %.9g, want %.9g (tol %.3g)",
              what, got, want, tol);
}

// Reads the JSON-lines reply of clef score into an array.
static json_t *score_lines(const char *path)
{
    char *s = tp_slurp(path, NULL);
    cr_assert_not_null(s);
    json_t *arr = json_array();
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        cr_assert_not_null(j, "score line is not JSON: %s", line);
        json_array_append_new(arr, j);
    }
    free(s);
    return arr;
}

Test(cli, version_and_help)
{
    char *dir = tp_tmpdir();
    cr_assert_eq(tp_clef(dir, "--version"), 0);
    char *out = tp_slurp(file_in(dir, "out"), NULL);
    cr_expect(strstr(out, "clef " CLEF_VERSION) != NULL, "%s", out);
    cr_expect(strstr(out, "kernels:") && strstr(out, "scalar"), "%s", out);
    free(out);
    const char *cmds[5] = {"train", "score", "validate", "fixture", "inspect"};
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(tp_clef(dir, "%s --help", cmds[i]), 0, "%s", cmds[i]);
        out = tp_slurp(file_in(dir, "out"), NULL);
        char want[64];
        snprintf(want, sizeof(want), "usage: clef %s", cmds[i]);
        cr_expect(strstr(out, want) != NULL, "%s --help: %s", cmds[i], out);
        free(out);
    }
    cr_expect_eq(tp_clef(dir, "frobnicate"), 2);
    cr_expect_eq(tp_clef(dir, "train --epochs"), 2, "flag without value");
    tp_rmdir(dir);
}

// The golden package, one step through the CLI, against expected.json.
Test(cli, golden_one_step, .timeout = 60)
{
    char *dir = tp_tmpdir();
    json_t *exp = tp_load_json(GOLDEN_DIR "/expected.json");
    char *run = file_in(dir, "run");
    int rc = tp_clef(dir,
                     "train --package %s/package.json --run-dir %s --init "
                     "%s/weights.safetensors --label-smoothing 0.1 --brier "
                     "0.25 --eps 1e-8 --decay-scope all --epochs 1 --quiet "
                     "--json-out %s/result.json",
                     GOLDEN_DIR, run, GOLDEN_DIR, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    json_t *res = tp_load_json(file_in(dir, "result.json"));
    cr_expect_str_eq(json_string_value(json_object_get(res, "status")), "ok");
    cr_expect_eq(json_integer_value(json_object_get(res, "completed_steps")),
                 1);
    json_t *checks = json_object_get(res, "checks");
    cr_expect(json_is_true(json_object_get(checks, "frozen_inputs_unchanged")));
    cr_expect(json_is_true(json_object_get(checks, "checkpoint_reload")));
    cr_expect(json_is_true(json_object_get(checks, "export_parity")));
    // loss before the step: the golden loss (one record, mean over 3 q)
    double loss = num(json_object_get(exp, "loss"));
    expect_close(num(json_object_get(json_object_get(res, "metrics"),
                                     "train_loss_before")),
                 loss, 0, "train_loss_before");
    // run-dir/result.json is the same document
    json_t *res2 = tp_load_json(file_in(run, "result.json"));
    cr_expect(json_equal(json_object_get(res, "records"),
                         json_object_get(res2, "records")));

    // logits before training: clef score with the golden weights
    rc = tp_clef(dir,
                 "score --weights %s/weights.safetensors --package "
                 "%s/package.json",
                 GOLDEN_DIR, GOLDEN_DIR);
    cr_assert_eq(rc, 0);
    json_t *lines = score_lines(file_in(dir, "out"));
    cr_assert_eq(json_array_size(lines), 3);
    json_t *elog = json_object_get(exp, "logits");
    json_t *eprob = json_object_get(exp, "probabilities");
    double scale = 0;
    for (size_t i = 0; i < json_array_size(elog); i++)
        scale = fmax(scale, fabs(num(json_array_get(elog, i))));
    size_t o = 0;
    for (size_t q = 0; q < 3; q++) {
        json_t *scores = json_object_get(json_array_get(lines, q), "scores");
        json_t *ep = json_array_get(eprob, q);
        cr_assert_eq(json_array_size(scores), json_array_size(ep));
        for (size_t i = 0; i < json_array_size(scores); i++, o++) {
            json_t *s = json_array_get(scores, i);
            char what[64];
            snprintf(what, sizeof(what), "logit %zu", o);
            expect_close(num(json_object_get(s, "logit")),
                         num(json_array_get(elog, o)), scale, what);
            snprintf(what, sizeof(what), "probability %zu.%zu", q, i);
            expect_close(num(json_object_get(s, "probability")),
                         num(json_array_get(ep, i)), 0, what);
        }
    }
    cr_expect_eq(o, json_array_size(elog));

    // after one step: per-tensor sum and l2 of the exported weights
    clef_head hd;
    clef_err err = {0};
    cr_assert_eq(
        clef_weights_load(file_in(run, "weights.safetensors"), 2, &hd, &err), 0,
        "%s", err.msg);
    json_t *after = json_object_get(exp, "after_one_step");
    cr_assert_eq(json_object_size(after), (size_t)hd.ntensors);
    const char *name;
    json_t *v;
    json_object_foreach (after, name, v) {
        int t = clef_head_find(&hd, name);
        cr_assert_geq(t, 0, "tensor %s missing from the export", name);
        const float *x = hd.params + hd.tensors[t].offset;
        double sum = 0, sq = 0;
        for (size_t i = 0; i < hd.tensors[t].numel; i++) {
            sum += x[i];
            sq += (double)x[i] * x[i];
        }
        double l2 = num(json_object_get(v, "l2"));
        char what[160];
        snprintf(what, sizeof(what), "%s sum", name);
        expect_close(sum, num(json_object_get(v, "sum")), l2, what);
        snprintf(what, sizeof(what), "%s l2", name);
        expect_close(sqrt(sq), l2, 0, what);
    }
    clef_head_free(&hd);
    json_decref(lines);
    json_decref(res);
    json_decref(res2);
    json_decref(exp);
    tp_rmdir(dir);
}

Test(cli, fixture_validate_inspect)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s", pkg), 0);
    json_t *m = tp_load_json(file_in(pkg, "package.json"));
    json_t *recs = json_object_get(m, "records");
    cr_assert_eq(json_array_size(recs), 3);
    const char *split[3] = {"train", "train", "validation"};
    for (int i = 0; i < 3; i++) {
        json_t *r = json_array_get(recs, i);
        char id[16];
        snprintf(id, sizeof(id), "record-%d", i);
        cr_expect_str_eq(json_string_value(json_object_get(r, "id")), id);
        cr_expect_str_eq(json_string_value(json_object_get(r, "split")),
                         split[i]);
        json_t *qs = json_object_get(r, "questions");
        cr_assert_eq(json_array_size(qs), 2);
        json_t *a = json_array_get(qs, 0), *b = json_array_get(qs, 1);
        cr_expect_str_eq(json_string_value(json_object_get(a, "id")), "action");
        cr_expect_str_eq(json_string_value(json_object_get(b, "id")), "mode");
        json_t *wa = json_pack("[s, s]", "read", "clarify");
        json_t *wb = json_pack("[s]", "normal");
        cr_expect(json_equal(json_object_get(a, "options"), wa));
        cr_expect(json_equal(json_object_get(b, "options"), wb));
        json_decref(wa);
        json_decref(wb);
    }
    // labels balanced over the two train records
    int l0 = (int)json_integer_value(json_object_get(
        json_array_get(json_object_get(json_array_get(recs, 0), "questions"),
                       0),
        "label"));
    int l1 = (int)json_integer_value(json_object_get(
        json_array_get(json_object_get(json_array_get(recs, 1), "questions"),
                       0),
        "label"));
    cr_expect_neq(l0, l1);
    cr_assert_eq(tp_clef(dir, "validate --package %s/package.json", pkg), 0);
    char *out = tp_slurp(file_in(dir, "out"), NULL);
    cr_expect(strstr(out, "records: 3 (train 2, validation 1, test 0)"), "%s",
              out);
    cr_expect(strstr(out, "Q=2 options=2,1; T 6..6 padded to 6: 3 records"),
              "%s", out);
    free(out);
    cr_assert_eq(tp_clef(dir, "inspect %s/init.safetensors", pkg), 0);
    out = tp_slurp(file_in(dir, "out"), NULL);
    cr_expect(strstr(out, "parameters: 5596"), "%s", out);
    cr_expect(strstr(out, "tensors: 122"), "%s", out);
    cr_expect(strstr(out, "format: clef-head/1"), "%s", out);
    free(out);
    // the same seed writes the same package; another seed another one
    cr_assert_eq(tp_clef(dir, "fixture --out %s/again", dir), 0);
    cr_assert_eq(tp_clef(dir, "fixture --out %s/other --seed 1", dir), 0);
    size_t na, nb, nc;
    char *a = tp_slurp(file_in(pkg, "records-000.safetensors"), &na);
    char *b = tp_slurp(
        file_in(file_in(dir, "again"), "records-000.safetensors"), &nb);
    char *c = tp_slurp(
        file_in(file_in(dir, "other"), "records-000.safetensors"), &nc);
    cr_expect(na == nb && !memcmp(a, b, na), "fixture is deterministic");
    cr_expect(na == nc && memcmp(a, c, na), "--seed changes the data");
    free(a);
    free(b);
    free(c);
    // --questions/--options: Q choice questions of N options
    cr_assert_eq(tp_clef(dir,
                         "fixture --out %s/qn --questions 3 --options 4 "
                         "--records 5 --validation 2 --positions 20",
                         dir),
                 0);
    cr_assert_eq(tp_clef(dir, "validate --package %s/qn/package.json", dir), 0);
    out = tp_slurp(file_in(dir, "out"), NULL);
    cr_expect(
        strstr(out, "Q=3 options=4,4,4; T 20..20 padded to 20: 7 records"),
        "%s", out);
    free(out);
    // refuses a non-empty --out
    cr_expect_eq(tp_clef(dir, "fixture --out %s", pkg), 2);
    // refuses layer counts that no package may hold (head.* ≥ 1), writing
    // nothing
    const char *zero[2] = {"--layers", "--routing-layers"};
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(tp_clef(dir, "fixture --out %s/zero %s 0", dir, zero[i]),
                     2, "%s 0", zero[i]);
        cr_expect(strstr(tp_err(dir), zero[i]), "%s", tp_err(dir));
        cr_expect(!tp_exists(file_in(dir, "zero")), "%s 0 wrote nothing",
                  zero[i]);
    }
    // inspect refuses what is not safetensors
    cr_expect_eq(tp_clef(dir, "inspect %s/package.json", pkg), 2);
    cr_expect(strstr(tp_err(dir), "package.json"), "%s", tp_err(dir));
    json_decref(m);
    tp_rmdir(dir);
}

static json_t *train_ok(const char *dir, const char *args)
{
    int rc = tp_clef(dir, "train --quiet %s --json-out %s/res.json", args, dir);
    cr_assert_eq(rc, 0, "clef train %s: %s", args, tp_err(dir));
    json_t *r = tp_load_json(file_in(dir, "res.json"));
    cr_expect_str_eq(json_string_value(json_object_get(r, "status")), "ok");
    return r;
}

Test(cli, mixed_geometry_trains, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "mixed");
    cr_assert_eq(system(NULL) != 0, 1);
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", pkg);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(tp_write_mixed_package(pkg), 0);
    cr_assert_eq(tp_clef(dir, "validate --package %s/package.json", pkg), 0,
                 "%s", tp_err(dir));
    // 4 train records, batch 3: 2 updates per epoch, 2 epochs
    char args[4200];
    snprintf(args, sizeof(args),
             "--package %s/package.json --run-dir %s/seq "
             "--epochs 2 --batch 3 --ordinal 0.5 --brier 0.1",
             pkg, dir);
    json_t *r = train_ok(dir, args);
    cr_expect_eq(json_integer_value(json_object_get(r, "completed_steps")), 4);
    json_t *m = json_object_get(r, "metrics");
    cr_expect(json_is_number(json_object_get(m, "validation_loss_after")));
    cr_expect(json_is_true(
        json_object_get(json_object_get(r, "checks"), "export_parity")));
    cr_expect_eq(json_array_size(json_object_get(r, "records")), 6);
    json_decref(r);
    // bucketed: buckets {m-0, m-3}, {m-1}, {m-2}: batch 2 gives 3 updates
    snprintf(args, sizeof(args),
             "--package %s/package.json --run-dir %s/bkt "
             "--epochs 2 --batch 2 --batching bucketed",
             pkg, dir);
    r = train_ok(dir, args);
    cr_expect_eq(json_integer_value(json_object_get(r, "completed_steps")), 6);
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_object_get(r, "train"), "batching")),
                     "bucketed");
    json_decref(r);
    tp_rmdir(dir);
}

// N steps, then a resumed run to 2N, give the bytes of 2N straight steps.
static void resume_case(const char *dir, const char *pkg, const char *extra,
                        int steps_per_epoch)
{
    char args[4200];
    snprintf(args, sizeof(args),
             "--package %s --run-dir %s/straight "
             "--epochs 4 %s",
             pkg, dir, extra);
    json_decref(train_ok(dir, args));
    snprintf(args, sizeof(args),
             "--package %s --run-dir %s/split --epochs 2 "
             "%s",
             pkg, dir, extra);
    json_decref(train_ok(dir, args));
    snprintf(args, sizeof(args),
             "--package %s --run-dir %s/split --epochs 4 "
             "--resume %s/split/checkpoint-%d.safetensors %s",
             pkg, dir, dir, 2 * steps_per_epoch, extra);
    json_t *r = train_ok(dir, args);
    cr_expect_eq(json_integer_value(json_object_get(r, "completed_steps")),
                 4 * steps_per_epoch);
    json_decref(r);
    char a[4200], b[4200];
    snprintf(a, sizeof(a), "%s/straight/weights.safetensors", dir);
    snprintf(b, sizeof(b), "%s/split/weights.safetensors", dir);
    cr_expect(tp_same_file(a, b), "resumed weights differ (%s)", extra);
    snprintf(a, sizeof(a), "%s/straight/checkpoint-%d.safetensors", dir,
             4 * steps_per_epoch);
    snprintf(b, sizeof(b), "%s/split/checkpoint-%d.safetensors", dir,
             4 * steps_per_epoch);
    cr_expect(tp_same_file(a, b), "resumed checkpoints differ (%s)", extra);
}

Test(cli, resume_equality, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s --records 3", pkg), 0);
    char manifest[4200];
    snprintf(manifest, sizeof(manifest), "%s/package.json", pkg);
    char sub[4200];
    snprintf(sub, sizeof(sub), "mkdir -p %s/s1 %s/s2", dir, dir);
    cr_assert_eq(system(sub), 0);
    snprintf(sub, sizeof(sub), "%s/s1", dir);
    // 3 train records, batch 2: 2 updates per epoch (one short batch)
    resume_case(sub, manifest, "--batch 2 --max-grad-norm 0.5", 2);
    // the mixed package, bucketed order
    snprintf(sub, sizeof(sub), "%s/s2", dir);
    char mixed[4200], cmd[4300];
    snprintf(mixed, sizeof(mixed), "%s/mixed", dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", mixed);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(tp_write_mixed_package(mixed), 0);
    snprintf(mixed, sizeof(mixed), "%s/mixed/package.json", dir);
    resume_case(sub, mixed, "--batching bucketed --batch 2 --seed 7", 3);
    // a resume with other update settings is refused, nothing written
    char args[13000];
    snprintf(args, sizeof(args),
             "train --package %s --run-dir %s/split "
             "--epochs 6 --resume %s/split/checkpoint-12.safetensors "
             "--batching bucketed --batch 2 --seed 8",
             mixed, sub, sub);
    cr_expect_eq(tp_clef(dir, "%s", args), 2);
    const char *err = tp_err(dir);
    cr_expect(strstr(err, "seed"), "%s", err);
    snprintf(args, sizeof(args), "%s/split/checkpoint-14.safetensors", sub);
    cr_expect(!tp_exists(args));
    // a checkpoint of another package (same head) is refused
    cr_assert_eq(
        tp_clef(dir, "fixture --out %s/other --records 3 --seed 5", dir), 0);
    snprintf(args, sizeof(args),
             "train --package %s/other/package.json "
             "--run-dir %s/other-run --epochs 4 --batch 2 --max-grad-norm 0.5 "
             "--resume %s/s1/split/checkpoint-8.safetensors",
             dir, dir, dir);
    cr_expect_eq(tp_clef(dir, "%s", args), 2);
    cr_expect(strstr(tp_err(dir), "package_sha256"), "%s", tp_err(dir));
    cr_expect(!tp_exists(file_in(dir, "other-run")));
    tp_rmdir(dir);
}

Test(cli, score_output)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s", pkg), 0);
    cr_assert_eq(tp_clef(dir,
                         "score --weights %s/init.safetensors --package "
                         "%s/package.json",
                         pkg, pkg),
                 0);
    json_t *lines = score_lines(file_in(dir, "out"));
    cr_assert_eq(json_array_size(lines), 6, "3 records × 2 questions");
    size_t i;
    json_t *l;
    json_array_foreach (lines, i, l) {
        char rid[32];
        snprintf(rid, sizeof(rid), "record-%zu", i / 2);
        cr_expect_str_eq(json_string_value(json_object_get(l, "record")), rid);
        cr_expect_str_eq(json_string_value(json_object_get(l, "question")),
                         i % 2 ? "mode" : "action");
        cr_expect_str_eq(
            json_string_value(json_object_get(l, "score_semantics")),
            "raw_logits");
        cr_expect(json_is_false(json_object_get(l, "executed")));
        json_t *sc = json_object_get(l, "scores");
        cr_assert_eq(json_array_size(sc), i % 2 ? 1 : 2);
        double sum = 0, best = -1, zmax = -INFINITY;
        const char *arg = NULL;
        for (size_t k = 0; k < json_array_size(sc); k++) {
            json_t *s = json_array_get(sc, k);
            double p = num(json_object_get(s, "probability"));
            zmax = fmax(zmax, num(json_object_get(s, "logit")));
            sum += p;
            if (p > best) {
                best = p;
                arg = json_string_value(json_object_get(s, "candidate_id"));
            }
        }
        // softmax of two float32 logits: a few ulp per term
        cr_expect(fabs(sum - 1) <= 4 * FLT_EPSILON, "sum %g", sum);
        json_t *d = json_object_get(l, "decision");
        cr_expect_str_eq(json_string_value(json_object_get(d, "status")),
                         "ranked");
        cr_expect(json_is_null(json_object_get(d, "reason")));
        cr_expect_str_eq(json_string_value(json_object_get(d, "candidate_id")),
                         arg);
    }
    json_decref(lines);
    // one question of one record; abstains below --min-confidence
    cr_assert_eq(tp_clef(dir,
                         "score --weights %s/init.safetensors --package "
                         "%s/package.json --record record-1 --question "
                         "action --min-confidence 0.999",
                         pkg, pkg),
                 0);
    lines = score_lines(file_in(dir, "out"));
    cr_assert_eq(json_array_size(lines), 1);
    json_t *d = json_object_get(json_array_get(lines, 0), "decision");
    cr_expect_str_eq(json_string_value(json_object_get(d, "status")),
                     "abstained");
    cr_expect(json_is_null(json_object_get(d, "candidate_id")));
    cr_expect(strstr(json_string_value(json_object_get(d, "reason")),
                     "below --min-confidence"));
    json_decref(lines);
    // the single-option question always clears any threshold
    cr_assert_eq(tp_clef(dir,
                         "score --weights %s/init.safetensors --package "
                         "%s/package.json --question mode "
                         "--min-confidence 1",
                         pkg, pkg),
                 0);
    lines = score_lines(file_in(dir, "out"));
    cr_assert_eq(json_array_size(lines), 3);
    cr_expect_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_array_get(lines, 0), "decision"), "status")),
        "ranked");
    json_decref(lines);
    cr_expect_eq(tp_clef(dir,
                         "score --weights %s/init.safetensors --package "
                         "%s/package.json --record nope",
                         pkg, pkg),
                 2);
    cr_expect_eq(tp_clef(dir,
                         "score --weights %s/init.safetensors --package "
                         "%s/package.json --question nope",
                         pkg, pkg),
                 2);
    cr_expect_eq(tp_clef(dir,
                         "score --weights %s/weights.safetensors "
                         "--package %s/package.json",
                         GOLDEN_DIR, pkg),
                 0, "golden head (d 8, w 8) fits the fixture's head");
    tp_rmdir(dir);
}

Test(cli, checkpoints_history_and_run_dir, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s", pkg), 0);
    char args[4200];
    snprintf(args, sizeof(args),
             "--package %s/package.json --run-dir %s/run "
             "--epochs 3 --checkpoint-every 1 --keep-checkpoints 2 "
             "--eval-every 2",
             pkg, dir);
    json_t *r = train_ok(dir, args);
    // --json-out may name a file inside the run dir it creates
    cr_expect_eq(tp_clef(dir,
                         "train --quiet --package %s/package.json "
                         "--run-dir %s/r2 --json-out %s/r2/out.json",
                         pkg, dir, dir),
                 0, "%s", tp_err(dir));
    cr_expect(tp_exists(file_in(dir, "r2/out.json")));
    cr_expect_eq(json_integer_value(json_object_get(r, "completed_steps")), 6);
    json_t *ck =
        json_object_get(json_object_get(r, "artifacts"), "checkpoints");
    cr_assert_eq(json_array_size(ck), 2, "keeps the newest 2");
    cr_expect(strstr(json_string_value(json_array_get(ck, 0)),
                     "/checkpoint-5.safetensors"));
    cr_expect(strstr(json_string_value(json_array_get(ck, 1)),
                     "/checkpoint-6.safetensors"));
    snprintf(args, sizeof(args), "%s/run/checkpoint-4.safetensors", dir);
    cr_expect(!tp_exists(args), "older checkpoints are removed");
    // --checkpoint-seconds: a checkpoint after every update that ends that
    // long after the last one (1 µs: after every update here)
    snprintf(args, sizeof(args),
             "--package %s/package.json --run-dir %s/rs "
             "--epochs 2 --checkpoint-seconds 1e-6 --keep-checkpoints 0",
             pkg, dir);
    json_t *rs = train_ok(dir, args);
    json_t *cks =
        json_object_get(json_object_get(rs, "artifacts"), "checkpoints");
    cr_expect_eq(json_array_size(cks), 4, "a checkpoint after every update");
    json_decref(rs);
    json_t *h = json_object_get(r, "history");
    cr_assert_eq(json_array_size(h), 4, "steps 0, 2, 4, 6");
    for (int i = 0; i < 4; i++)
        cr_expect_eq(
            json_integer_value(json_object_get(json_array_get(h, i), "step")),
            2 * i);
    // the metrics and history agree: loss after = last history point
    cr_expect_eq(
        num(json_object_get(json_object_get(r, "metrics"), "train_loss_after")),
        num(json_object_get(json_array_get(h, 3), "train_loss")));
    json_decref(r);
    // a non-empty run dir is refused (exit 2, nothing written)
    snprintf(args, sizeof(args),
             "train --package %s/package.json --run-dir "
             "%s/run --json-out %s/again.json",
             pkg, dir, dir);
    cr_expect_eq(tp_clef(dir, "%s", args), 2);
    cr_expect(!tp_exists(file_in(dir, "again.json")));
    const char *err = tp_err(dir);
    cr_expect(strstr(err, "--run-dir") && strstr(err, "not empty"), "%s", err);
    // bad flag values: exit 2 before anything exists
    const char *bad[] = {"--epochs -1",
                         "--batch 0",
                         "--lr nan",
                         "--betas 0.9",
                         "--decay-scope none",
                         "--batching random",
                         "--backend nosuch",
                         "--label-smoothing 2",
                         "--package-sha256 12",
                         "--checkpoint-seconds -1",
                         "--bogus 1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cr_expect_eq(tp_clef(dir,
                             "train --package %s/package.json --run-dir "
                             "%s/fresh %s",
                             pkg, dir, bad[i]),
                     2, "%s", bad[i]);
        cr_expect(!tp_exists(file_in(dir, "fresh")), "%s created the run dir",
                  bad[i]);
    }
    tp_rmdir(dir);
}

// Weights of 1e30 overflow the forward pass: exit 1, status "error".
Test(cli, non_finite_loss_exits_1, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s", pkg), 0);
    clef_head hd;
    clef_err err = {0};
    cr_assert_eq(
        clef_weights_load(file_in(pkg, "init.safetensors"), 2, &hd, &err), 0,
        "%s", err.msg);
    for (size_t i = 0; i < hd.nparams; i++)
        hd.params[i] = hd.params[i] >= 0 ? 1e30f : -1e30f;
    cr_assert_eq(
        clef_weights_save(file_in(dir, "huge.safetensors"), &hd, NULL, 0, &err),
        0, "%s", err.msg);
    clef_head_free(&hd);
    int rc = tp_clef(dir,
                     "train --package %s/package.json --run-dir %s/run "
                     "--init %s/huge.safetensors --json-out %s/r.json",
                     pkg, dir, dir, dir);
    cr_expect_eq(rc, 1);
    json_t *r = tp_load_json(file_in(dir, "r.json"));
    cr_expect_str_eq(json_string_value(json_object_get(r, "status")), "error");
    json_t *e = json_object_get(r, "error");
    cr_expect(
        strstr(json_string_value(json_object_get(e, "message")), "non-finite"));
    cr_expect(tp_exists(file_in(file_in(dir, "run"), "result.json")));
    json_decref(r);
    tp_rmdir(dir);
}

// --epochs 0: no update; the run exports the initial weights as they are
// (it used to stop itself with SIGKILL: the tests' kill-at-step fault hook
// took an unset step, 0, for a request to die at checkpoint 0).
Test(cli, zero_epochs_export_the_initial_weights, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s", pkg), 0);
    int rc = tp_clef(dir,
                     "train --quiet --package %s/package.json --run-dir "
                     "%s/run --init %s/init.safetensors --epochs 0 "
                     "--json-out %s/r.json",
                     pkg, dir, pkg, dir);
    cr_assert_eq(rc, 0, "%s", tp_err(dir));
    json_t *r = tp_load_json(file_in(dir, "r.json"));
    cr_expect_str_eq(json_string_value(json_object_get(r, "status")), "ok");
    cr_expect_eq(json_integer_value(json_object_get(r, "completed_steps")), 0);
    json_decref(r);
    clef_head a, b;
    clef_err err = {0};
    cr_assert_eq(
        clef_weights_load(file_in(pkg, "init.safetensors"), 2, &a, &err), 0,
        "%s", err.msg);
    cr_assert_eq(
        clef_weights_load(file_in(file_in(dir, "run"), "weights.safetensors"),
                          2, &b, &err),
        0, "%s", err.msg);
    cr_assert_eq(a.nparams, b.nparams);
    cr_expect(memcmp(a.params, b.params, sizeof(float) * a.nparams) == 0,
              "the exported weights are not the initial ones");
    clef_head_free(&a);
    clef_head_free(&b);
    tp_rmdir(dir);
}

// Every broken package: exit 2, its own message, and no run dir.
Test(cli, broken_catalogue, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char base[1024];
    snprintf(base, sizeof(base), "%s/base", dir);
    cr_assert_eq(tp_fixture(base), 0);
    for (int c = 0; c < tp_nbroken; c++) {
        const tp_broken *bc = &tp_broken_cases[c];
        char pdir[1100], run[1100], pin[100] = "";
        snprintf(pdir, sizeof(pdir), "%s/case-%02d", dir, c);
        snprintf(run, sizeof(run), "%s/run-%02d", dir, c);
        cr_assert_eq(tp_copy_dir(base, pdir), 0);
        cr_assert_eq(bc->make(pdir), 0, "%s: cannot build the case", bc->name);
        if (bc->pin)
            snprintf(pin, sizeof(pin), "--package-sha256 %s", bc->pin);
        int rc = tp_clef(dir,
                         "train --package %s/package.json --run-dir %s "
                         "--json-out %s/r-%02d.json %s",
                         pdir, run, dir, c, pin);
        cr_expect_eq(rc, 2, "%s: exit %d", bc->name, rc);
        cr_expect(!tp_exists(run), "%s: the run dir was created", bc->name);
        char jo[1100];
        snprintf(jo, sizeof(jo), "%s/r-%02d.json", dir, c);
        cr_expect(!tp_exists(jo), "%s: --json-out was written", bc->name);
        const char *err = tp_err(dir);
        for (int k = 0; k < 4 && bc->expect[k]; k++)
            cr_expect(strstr(err, bc->expect[k]) != NULL,
                      "%s: stderr \"%s\" lacks \"%s\"", bc->name, err,
                      bc->expect[k]);
        rc = tp_clef(dir, "validate --package %s/package.json %s", pdir, pin);
        cr_expect_eq(rc, 2, "validate %s: exit %d", bc->name, rc);
    }
    tp_rmdir(dir);
}

// With a fixed backend the bits do not depend on --threads (CLI.md); without
// a terminal no progress bar is drawn (stderr stays empty). More threads than
// the hardware has give the same bits and one warning line.
Test(cli, threads_do_not_change_bits, .timeout = 60)
{
    const int over = clef_cpu_get()->pus + 1;
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir,
                         "fixture --out %s --records 4 --positions 24 "
                         "--hidden 32 --width 16 --feedforward 40",
                         pkg),
                 0);
    const char *backends[2] = {"scalar", "auto"};
    for (int b = 0; b < 2; b++) {
        char w[2][1200];
        for (int th = 1; th <= 2; th++) {
            char run[1100];
            snprintf(run, sizeof(run), "%s/%s-%d", dir, backends[b], th);
            int rc = tp_clef(dir,
                             "train --package %s/package.json --run-dir "
                             "%s --epochs 2 --batch 2 --backend %s "
                             "--threads %d",
                             pkg, run, backends[b], th);
            cr_assert_eq(rc, 0, "%s", tp_err(dir));
            cr_expect_str_eq(tp_err(dir), "",
                             "stderr is not a terminal: no "
                             "progress bar");
            snprintf(w[th - 1], sizeof(w[0]), "%s/weights.safetensors", run);
        }
        cr_expect(tp_same_file(w[0], w[1]), "%s: --threads 1 and 2 differ",
                  backends[b]);
        char run[1100], wo[1200];
        snprintf(run, sizeof(run), "%s/%s-over", dir, backends[b]);
        int rc = tp_clef(dir,
                         "train --package %s/package.json --run-dir %s "
                         "--epochs 2 --batch 2 --backend %s --threads %d",
                         pkg, run, backends[b], over);
        cr_assert_eq(rc, 0, "%s", tp_err(dir));
        cr_expect(strstr(tp_err(dir), "oversubscribed") != NULL,
                  "--threads %d: no warning in \"%s\"", over, tp_err(dir));
        snprintf(wo, sizeof(wo), "%s/weights.safetensors", run);
        cr_expect(tp_same_file(w[0], wo), "%s: --threads 1 and %d differ",
                  backends[b], over);
    }
    tp_rmdir(dir);
}

// On a terminal (a pty from script(1)) the bar shows step, epoch, loss,
// updates per second and time left; --quiet silences it.
Test(cli, progress_bar_on_a_terminal, .timeout = 60)
{
    if (!tp_exists("/usr/bin/script"))
        cr_skip_test("/usr/bin/script (util-linux) is missing: no pty");
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(tp_clef(dir, "fixture --out %s", pkg), 0);
    for (int quiet = 0; quiet < 2; quiet++) {
        char cmd[4096];
        snprintf(cmd, sizeof(cmd),
                 "/usr/bin/script -qec '%s/clef train --package "
                 "%s/package.json --run-dir %s/run%d --epochs 3 %s' "
                 "/dev/null >%s/tty 2>&1",
                 CLEF_BIN_DIR, pkg, dir, quiet, quiet ? "--quiet" : "", dir);
        cr_assert_eq(system(cmd), 0);
        char *out = tp_slurp(file_in(dir, "tty"), NULL);
        cr_assert_not_null(out);
        int bar =
            strstr(out, "step 6/6 epoch 3/3 loss") && strstr(out, "upd/s left");
        cr_expect_eq(bar, !quiet, "quiet %d: %s", quiet, out);
        free(out);
    }
    tp_rmdir(dir);
}

// CLEF_MEMORY_ATTENTION takes auto, project or absorb; anything else is a
// usage error that names the variable, and nothing is written.
Test(cli, memory_attention_setting_is_checked, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = file_in(dir, "pkg");
    cr_assert_eq(
        tp_clef(dir, "fixture --out %s --records 2 --positions 8", pkg), 0);
    char *run = file_in(dir, "run");
    setenv("CLEF_MEMORY_ATTENTION", "sideways", 1);
    int rc =
        tp_clef(dir, "train --package %s/package.json --run-dir %s", pkg, run);
    unsetenv("CLEF_MEMORY_ATTENTION");
    cr_expect_eq(rc, 2);
    cr_expect(strstr(tp_err(dir), "CLEF_MEMORY_ATTENTION") != NULL, "%s",
              tp_err(dir));
    cr_expect(!tp_exists(run), "the run dir was created");
    setenv("CLEF_MEMORY_ATTENTION", "project", 1);
    rc = tp_clef(dir, "train --package %s/package.json --run-dir %s --quiet",
                 pkg, run);
    unsetenv("CLEF_MEMORY_ATTENTION");
    cr_expect_eq(rc, 0, "%s", tp_err(dir));
    tp_rmdir(dir);
}

// Suite dropout (core/dropout.h, clef train --dropout): the masks' statistics
// and keys, an update's independence of the thread count and of the
// sub-batches it is cut into, and the CLI (package head.dropout, resume,
// bad values). The gradients under fixed masks are head_fd's dropout_* cases.
//
//   masks_keep_one_minus_p: over 2^20 elements of 4 sites, the kept fraction
//       is within 5σ of 1 − p (σ = √(p(1−p)/n)) for p = 0.1, 0.5, 0.9.
//   masks_differ_by_every_key: changing the step, site, layer, record, row or
//       column gives an independent draw: two masks agree on a fraction
//       within 5σ of p² + (1−p)².
//   record_key_is_the_updates: record b of a sub-batch starting at record r
//       of its update draws exactly as record r + b of the whole update.
//   update_is_thread_and_subbatch_invariant: clef_train_step with p = 0.3
//       leaves the same bits on 1 and 2 threads; a workspace of one record
//       (the update cut into 3 sub-batches) gives the same batch loss to
//       float rounding (64 ε), which different masks would miss by far.
//   cli_*: see each test.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/scalar/scalar.h"
#include "dropout.h"
#include "head.h"
#include "ref_head.h"
#include "util.h"
#include "util_package.h"

#define SIGMAS 5.0

static double sigma(double p, double n)
{
    return sqrt(p * (1 - p) / n);
}

Test(dropout, masks_keep_one_minus_p)
{
    const double ps[3] = {0.1, 0.5, 0.9};
    for (int k = 0; k < 3; k++) {
        clef_dropout d;
        clef_dropout_set(&d, ps[k], 3407, 5, 0);
        cr_assert(clef_dropout_on(&d));
        cr_expect_eq(d.scale, (float)(1.0 / (1.0 - ps[k])));
        long kept = 0, n = 0;
        for (int site = 0; site < 4; site++) {
            const uint64_t key = clef_dropout_site(&d, site, site);
            for (int b = 0; b < 8; b++)
                for (int row = 0; row < 64; row++)
                    for (int col = 0; col < 512; col++, n++)
                        kept += clef_dropout_keeps(&d, key, b, row, col);
        }
        const double frac = (double)kept / n, want = 1 - ps[k];
        cr_expect(fabs(frac - want) <= SIGMAS * sigma(ps[k], n),
                  "p = %g: kept %.5f of %ld, expected %.5f ± %.5f", ps[k], frac,
                  n, want, SIGMAS * sigma(ps[k], n));
    }
    clef_dropout off;
    clef_dropout_set(&off, 0.0, 3407, 5, 0);
    cr_expect(!clef_dropout_on(&off), "p = 0 must turn dropout off");
}

// The fraction of n elements (rows × cols) on which two masks agree.
typedef struct mask_at {
    const clef_dropout *d;
    uint64_t site;
    int b, row0, col0;
} mask_at;

static double agreement(mask_at x, mask_at y, int rows, int cols)
{
    long same = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            same +=
                clef_dropout_keeps(x.d, x.site, x.b, x.row0 + r, x.col0 + c) ==
                clef_dropout_keeps(y.d, y.site, y.b, y.row0 + r, y.col0 + c);
    return (double)same / ((double)rows * cols);
}

Test(dropout, masks_differ_by_every_key)
{
    const double p = 0.3, want = p * p + (1 - p) * (1 - p);
    const int rows = 256, cols = 256;
    const double tol = SIGMAS * sigma(want, (double)rows * cols);
    clef_dropout a, b;
    clef_dropout_set(&a, p, 11, 1, 0);
    clef_dropout_set(&b, p, 11, 2, 0); // the next update
    const uint64_t s = clef_dropout_site(&a, CLEF_DROP_FIELD_FFN_IN, 1);
    const mask_at base = {&a, s, 0, 0, 0};
    const struct {
        const char *what;
        mask_at other;
    } cases[] = {
        {"step",
         {&b, clef_dropout_site(&b, CLEF_DROP_FIELD_FFN_IN, 1), 0, 0, 0}},
        {"site",
         {&a, clef_dropout_site(&a, CLEF_DROP_FIELD_FFN_OUT, 1), 0, 0, 0}},
        {"layer",
         {&a, clef_dropout_site(&a, CLEF_DROP_FIELD_FFN_IN, 2), 0, 0, 0}},
        {"record", {&a, s, 1, 0, 0}},
        {"row", {&a, s, 0, rows, 0}},
        {"column", {&a, s, 0, 0, cols}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double f = agreement(base, cases[i].other, rows, cols);
        cr_expect(fabs(f - want) <= tol,
                  "another %s: masks agree on %.4f, independent ones on "
                  "%.4f ± %.4f",
                  cases[i].what, f, want, tol);
    }
    cr_expect_eq(agreement(base, base, rows, cols), 1.0);
}

Test(dropout, record_key_is_the_updates)
{
    clef_dropout whole, part;
    clef_dropout_set(&whole, 0.5, 9, 3, 0);
    clef_dropout_set(&part, 0.5, 9, 3, 2); // sub-batch from record 2
    const uint64_t s = clef_dropout_site(&whole, CLEF_DROP_SCORER, 0);
    cr_assert_eq(s, clef_dropout_site(&part, CLEF_DROP_SCORER, 0));
    const mask_at x = {&whole, s, 3, 0, 0}, y = {&part, s, 1, 0, 0};
    cr_expect_eq(agreement(x, y, 64, 64), 1.0,
                 "record 1 of a sub-batch from record 2 must draw as record 3");
}

// ---- whole updates ----

#define NREC 3
static const int rec_T[NREC] = {11, 7, 9};
static const int rec_Q[NREC] = {2, 3, 1};
static const int rec_types[NREC][4] = {{1, 2}, {0, 1, 1}, {1}};
static const int rec_nopt[NREC][4] = {{3, 4}, {2, 2, 3}, {5}};

// Two updates of the batch with dropout p on `threads` threads, the
// workspace sized for `fit` records at a time; the parameters (malloc'd) and
// the first update's loss.
static float *train(int threads, int fit, double *loss)
{
    const clef_config cfg = {.d = 12, .w = 16, .h = 4, .f = 24, .R = 2, .L = 2};
    const clef_test_batch_spec spec = {.n = NREC,
                                       .V = 9,
                                       .T = rec_T,
                                       .Q = rec_Q,
                                       .types = rec_types,
                                       .nopt = rec_nopt,
                                       .rng_mul = 7001,
                                       .rng_add = 3};
    clef_test_batch r;
    clef_test_batch_init(&r, &cfg, 41, &spec);
    clef_train_opts o = clef_test_train_opts();
    o.dropout = 0.3;
    o.dropout_seed = 77;
    clef_ws_limits lim;
    clef_ws_limits_for(r.recs, NREC, fit, &lim);
    clef_ws *ws = clef_ws_create_limits(&cfg, &lim);
    cr_assert_not_null(ws);
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    *loss = clef_train_step(&clef_scalar_kernels, &r.hd, r.ptr, NREC, ws, &o);
    clef_train_step(&clef_scalar_kernels, &r.hd, r.ptr, NREC, ws, &o);
    omp_set_num_threads(before);
    float *w = clef_test_falloc(r.hd.nparams);
    memcpy(w, r.hd.params, sizeof(float) * r.hd.nparams);
    clef_ws_free(ws);
    clef_test_batch_free(&r);
    return w;
}

Test(dropout, update_is_thread_and_subbatch_invariant)
{
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: two threads would not run at once");
    const clef_config cfg = {.d = 12, .w = 16, .h = 4, .f = 24, .R = 2, .L = 2};
    const size_t n = clef_param_count(&cfg);
    double l1, l2, lsub;
    float *w1 = train(1, NREC, &l1), *w2 = train(2, NREC, &l2);
    const long diff = clef_test_first_diff(w1, w2, n);
    cr_expect(diff < 0, "parameter %ld: %.9g on 1 thread, %.9g on 2", diff,
              diff < 0 ? 0.0 : w1[diff], diff < 0 ? 0.0 : w2[diff]);
    cr_expect_eq(memcmp(&l1, &l2, sizeof l1), 0, "loss %.17g vs %.17g", l1, l2);
    free(train(1, 1, &lsub));
    cr_expect(fabs(lsub - l1) <= 64 * CLEF_TEST_EPS * fabs(l1),
              "one pass: loss %.9g; three sub-batches: %.9g", l1, lsub);
    free(w1);
    free(w2);
}

// ---- the CLI ----

#define TRAIN                                                                  \
    "train --quiet --batch 2 --lr 0.01 --backend scalar --threads 1 "          \
    "--package %s/package.json --run-dir %s/%s"

static char *weights_of(const char *dir, const char *run)
{
    char name[256];
    snprintf(name, sizeof(name), "%s/weights.safetensors", run);
    return tp_path(dir, name);
}

// 1 when two safetensors files hold the same tensor bytes (their data
// sections; the headers' metadata name the package, which differs here).
static int same_tensors(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tp_slurp(a, &na), *y = tp_slurp(b, &nb);
    uint64_t ha = 0, hb = 0;
    int same = x && y && na >= 8 && nb >= 8;
    if (same) {
        memcpy(&ha, x, 8), memcpy(&hb, y, 8);
        same = 8 + ha <= na && 8 + hb <= nb && na - ha == nb - hb &&
               !memcmp(x + 8 + ha, y + 8 + hb, na - 8 - ha);
    }
    free(x), free(y);
    return same;
}

// The package's head.dropout is the default; --dropout overrides it; result
// result.json's train settings record the one used; P = 0 is the plain run.
Test(dropout, cli_package_default_and_flag, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    char *pkg2 = tp_path(dir, "pkg2");
    cr_assert_eq(tp_copy_dir(pkg, pkg2), 0);
    json_t *m = tp_manifest_load(pkg2);
    json_object_set_new(json_object_get(m, "head"), "dropout", json_real(0.25));
    cr_assert_eq(tp_manifest_save(pkg2, m), 0);
    json_decref(m);
    const struct {
        const char *pkg, *run, *extra;
    } runs[] = {
        {pkg, "plain", ""},
        {pkg, "zero", " --dropout 0"},
        {pkg, "flag", " --dropout 0.25"},
        {pkg2, "package", ""},
        {pkg2, "override", " --dropout 0"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        cr_assert_eq(tp_clef(dir, TRAIN " --epochs 3%s", runs[i].pkg, dir,
                             runs[i].run, runs[i].extra),
                     0, "%s: %s", runs[i].run, tp_err(dir));
    cr_expect(tp_same_file(weights_of(dir, "plain"), weights_of(dir, "zero")),
              "--dropout 0 must be the plain run");
    cr_expect(
        same_tensors(weights_of(dir, "plain"), weights_of(dir, "override")),
        "--dropout 0 must override the package's head.dropout");
    cr_expect(same_tensors(weights_of(dir, "flag"), weights_of(dir, "package")),
              "head.dropout 0.25 must train as --dropout 0.25");
    cr_expect(!same_tensors(weights_of(dir, "plain"), weights_of(dir, "flag")),
              "dropout 0.25 left the weights of a plain run");
    json_t *r = tp_load_json(tp_path(dir, "package/result.json"));
    json_t *st = json_object_get(r, "train");
    cr_expect_eq(json_number_value(json_object_get(st, "dropout")), 0.25,
                 "result.json train.dropout");
    json_decref(r);
    tp_rmdir(dir);
}

// A run resumed from a checkpoint exports the bits of an uninterrupted one;
// resuming with another --dropout is refused.
Test(dropout, cli_resume_is_byte_identical, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    cr_assert_eq(
        tp_clef(dir, TRAIN " --epochs 4 --dropout 0.3", pkg, dir, "whole"), 0,
        "%s", tp_err(dir));
    cr_assert_eq(
        tp_clef(dir, TRAIN " --epochs 2 --dropout 0.3", pkg, dir, "part"), 0,
        "%s", tp_err(dir));
    json_t *r = tp_load_json(tp_path(dir, "part/result.json"));
    const long steps =
        (long)json_integer_value(json_object_get(r, "completed_steps"));
    json_decref(r);
    char ck[256];
    snprintf(ck, sizeof(ck), "%s/part/checkpoint-%ld.safetensors", dir, steps);
    cr_expect_eq(tp_clef(dir, TRAIN " --epochs 4 --dropout 0.4 --resume %s",
                         pkg, dir, "part", ck),
                 2, "another --dropout on resume must exit 2");
    cr_expect(strstr(tp_err(dir), "dropout") != NULL, "%s", tp_err(dir));
    cr_assert_eq(tp_clef(dir, TRAIN " --epochs 4 --dropout 0.3 --resume %s",
                         pkg, dir, "part", ck),
                 0, "%s", tp_err(dir));
    cr_expect(tp_same_file(weights_of(dir, "whole"), weights_of(dir, "part")),
              "resumed weights differ from the uninterrupted run's");
    tp_rmdir(dir);
}

Test(dropout, cli_bad_values_exit_2, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    const char *bad[] = {"1", "-0.1", "x", "nan", "1e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(
            tp_clef(dir, TRAIN " --dropout %s", pkg, dir, "bad", bad[i]), 2,
            "--dropout %s", bad[i]);
        cr_expect(strstr(tp_err(dir), "--dropout") != NULL, "%s", tp_err(dir));
        cr_expect(!tp_exists(tp_path(dir, "bad")),
                  "--dropout %s wrote the run dir", bad[i]);
    }
    tp_rmdir(dir);
}

// Suite python: python/clefpkg.py (numpy alone) writes packages clef accepts
// and reads what clef writes. Skipped, with the reason, when /usr/bin/python3
// or its numpy is missing.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "package.h"
#include "util_package.h"

#define PYTHON "/usr/bin/python3"
#define CLEFPKG CLEF_TEST_DATA "/../python/clefpkg.py"

static void need_numpy(void)
{
    if (!tp_exists(PYTHON))
        cr_skip_test("%s is missing", PYTHON);
    int st = system(PYTHON " -c 'import numpy' >/dev/null 2>&1");
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        cr_skip_test("%s has no numpy", PYTHON);
}

// A file's text in a static buffer (for failure messages).
static const char *err_text(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

static int py(const char *dir, const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), PYTHON " " CLEFPKG " %s >%s/out 2>%s/err", args,
             dir, dir);
    int st = system(cmd);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

Test(python, selftest_package_validates_and_trains, .timeout = 60)
{
    need_numpy();
    char *dir = tp_tmpdir();
    char args[4200];
    snprintf(args, sizeof(args), "--selftest %s/pkg", dir);
    int rc = py(dir, args);
    char errp[4200];
    snprintf(errp, sizeof(errp), "%s/err", dir);
    cr_assert_eq(rc, 0, "clefpkg.py --selftest: %s", err_text(errp));
    rc = tp_clef(dir, "validate --package %s/pkg/package.json", dir);
    cr_assert_eq(rc, 0, "%s", err_text(errp));
    char outp[4200];
    snprintf(outp, sizeof(outp), "%s/out", dir);
    char *out = tp_slurp(outp, NULL);
    cr_expect(strstr(out, "records: 6 (train 4, validation 1, test 1)"), "%s",
              out);
    cr_expect(strstr(out, "noul 4, choice 4, score 3"), "%s", out);
    free(out);
    rc = tp_clef(dir,
                 "train --quiet --package %s/pkg/package.json --run-dir "
                 "%s/run --epochs 2 --batch 2",
                 dir, dir);
    cr_expect_eq(rc, 0, "%s", err_text(errp));
    // and Python reads the weights clef exported
    snprintf(args, sizeof(args), "--inspect %s/run/weights.safetensors", dir);
    cr_assert_eq(py(dir, args), 0, "%s", err_text(errp));
    json_t *j = json_load_file(outp, 0, NULL);
    cr_assert_not_null(j);
    cr_expect_eq(json_object_size(json_object_get(j, "tensors")),
                 (size_t)(22 + 14 * 1 + 18 * 1));
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_object_get(j, "metadata"), "format")),
                     "clef-head/1");
    json_decref(j);
    tp_rmdir(dir);
}

Test(python, reads_clef_fixture, .timeout = 60)
{
    need_numpy();
    char *dir = tp_tmpdir();
    char pkg[1024], args[4200], outp[1100], errp[1100], man[1100];
    snprintf(pkg, sizeof(pkg), "%s/pkg", dir);
    snprintf(outp, sizeof(outp), "%s/out", dir);
    snprintf(errp, sizeof(errp), "%s/err", dir);
    snprintf(man, sizeof(man), "%s/package.json", pkg);
    cr_assert_eq(tp_fixture(pkg), 0);
    snprintf(args, sizeof(args), "--read %s", man);
    cr_assert_eq(py(dir, args), 0, "%s", err_text(errp));
    json_t *j = json_load_file(outp, 0, NULL);
    cr_assert_not_null(j);
    clef_package p;
    clef_err err = {0};
    cr_assert_eq(clef_package_read(man, NULL, &p, &err), 0, "%s", err.msg);
    cr_expect_str_eq(json_string_value(json_object_get(j, "sha256")), p.sha256);
    json_t *recs = json_object_get(j, "records");
    cr_assert_eq(json_array_size(recs), (size_t)p.nrecords);
    for (int i = 0; i < p.nrecords; i++) {
        json_t *r = json_array_get(recs, i);
        const clef_record *c = &p.records[i];
        cr_expect_str_eq(json_string_value(json_object_get(r, "id")), c->id);
        cr_expect_eq(json_integer_value(json_object_get(r, "T")), c->T);
        double sum = 0;
        for (int k = 0; k < c->T * c->d; k++)
            sum += c->H[k];
        // both sum the same float32 values in double, in the same order
        // except numpy's pairwise summation: a few ulp of double
        double got = json_number_value(json_object_get(r, "hidden_sum"));
        cr_expect(fabs(got - sum) <=
                      64 * DBL_EPSILON * (fabs(sum) + c->T * c->d),
                  "%s: %.17g vs %.17g", c->id, got, sum);
    }
    clef_package_free(&p);
    json_decref(j);
    tp_rmdir(dir);
}

// Suite precision, held-out accuracy (issue 20, item 3): on a fixture whose
// labels can be learned, `clef train --precision bf16` ends within half a
// point of `--precision fp32` on 2,000 held-out records.
//
//   heldout_accuracy_within_half_a_point: `clef fixture` writes random hidden
//       states and labels independent of them; the test then adds a fixed
//       pattern (+μ, −μ, +μ, ... over d) to the hidden state of each
//       record's correct option token, so the head can learn which option
//       is right, though not always (μ leaves the fp32 run near 80 %, where
//       a drift in the decision boundary would show). Widths d = 256,
//       w = 128 put the memory products above CLEF_MM_BF16_SMALL_FLOPS: the
//       bf16 run goes through the bf16 GEMM kernels, not only the rounded
//       operands of the small products. Both runs start from the package's
//       weights, on the same records in the same order.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_package.h"

#define NTRAIN 128
#define NHELD 2000
#define DIM 256
#define PATTERN 0.15f // μ: the fp32 run reaches 0.79-0.83 (seeds 0-3)
#define MAX_POINTS 0.5

// Adds the pattern to row (1 + label) of every record's hidden state (the
// fixture's option o of question 0 spans token 1 + o), then rewrites the
// manifest's hashes.
static void plant_labels(const char *dir)
{
    json_t *m = tp_manifest_load(dir);
    json_t *recs = json_object_get(m, "records"), *shards;
    shards = json_object_get(m, "shards");
    for (size_t s = 0; s < json_array_size(shards); s++) {
        const char *file = json_string_value(
            json_object_get(json_array_get(shards, s), "file"));
        char *path = tp_path(dir, file);
        size_t n;
        uint8_t *bytes = (uint8_t *)tp_slurp(path, &n);
        cr_assert_not_null(bytes, "%s", path);
        // the header once (tp_st_locate would parse it per record)
        uint64_t hl;
        cr_assert_geq(n, 8);
        memcpy(&hl, bytes, 8);
        cr_assert_leq(hl, n - 8);
        json_t *hdr = json_loadb((const char *)bytes + 8, hl, 0, NULL);
        cr_assert_not_null(hdr, "%s: header", file);
        int planted = 0;
        for (size_t i = 0; i < json_array_size(recs); i++) {
            json_t *r = json_array_get(recs, i);
            if (json_integer_value(json_object_get(r, "shard")) !=
                (json_int_t)s)
                continue;
            char name[128];
            snprintf(name, sizeof name, "%s/hidden",
                     json_string_value(json_object_get(r, "id")));
            json_t *off =
                json_object_get(json_object_get(hdr, name), "data_offsets");
            cr_assert_not_null(off, "%s", name);
            const size_t b = 8 + hl +
                             json_integer_value(json_array_get(off, 0)),
                         e = 8 + hl +
                             json_integer_value(json_array_get(off, 1));
            cr_assert_leq(e, n, "%s", name);
            cr_assert_geq(e - b, sizeof(float) * 3 * DIM, "%s: T < 3", name);
            json_t *q = json_array_get(json_object_get(r, "questions"), 0);
            const int label =
                (int)json_integer_value(json_object_get(q, "label"));
            float row[DIM];
            uint8_t *at = bytes + b + sizeof(float) * (size_t)(1 + label) * DIM;
            memcpy(row, at, sizeof row);
            for (int j = 0; j < DIM; j++)
                row[j] += j % 2 ? -PATTERN : PATTERN;
            memcpy(at, row, sizeof row);
            planted++;
        }
        json_decref(hdr);
        cr_assert_gt(planted, 0, "%s: no record", file);
        cr_assert_eq(tp_write(path, bytes, n), 0);
        free(bytes);
    }
    cr_assert_eq(tp_manifest_save(dir, m), 0);
    json_decref(m);
}

typedef struct heldout {
    double acc, loss;
} heldout;

// Trains the package in dir in precision prec into dir/prec; the
// validation split's accuracy and loss after training.
static heldout train(const char *dir, const char *prec)
{
    cr_assert_eq(tp_clef(dir,
                         "train --quiet --threads 2 --epochs 10 --lr 1e-3 "
                         "--batch 8 --precision %s --package %s/pkg/"
                         "package.json --run-dir %s/%s",
                         prec, dir, dir, prec),
                 0, "%s", tp_err(dir));
    char name[32];
    snprintf(name, sizeof name, "%s/result.json", prec);
    json_t *res = tp_load_json(tp_path(dir, name));
    json_t *m = json_object_get(res, "metrics");
    heldout h = {
        json_real_value(json_object_get(m, "validation_accuracy_after")),
        json_real_value(json_object_get(m, "validation_loss_after"))};
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(res, "train"), "precision")),
                     prec);
    json_decref(res);
    return h;
}

Test(precision, heldout_accuracy_within_half_a_point, .timeout = 120)
{
    char *dir = tp_tmpdir();
    cr_assert_eq(tp_clef(dir,
                         "fixture --out %s/pkg --records %d --validation %d "
                         "--questions 1 --options 2 --hidden %d --width 128 "
                         "--heads 2 --feedforward 256 --positions 6 "
                         "--layers 1 --routing-layers 1 --seed 0",
                         dir, NTRAIN, NHELD, DIM),
                 0, "%s", tp_err(dir));
    char pkg[4200];
    snprintf(pkg, sizeof pkg, "%s/pkg", dir);
    plant_labels(pkg);
    const heldout f = train(dir, "fp32"), b = train(dir, "bf16");
    const double points = 100.0 * (b.acc - f.acc);
    fprintf(stderr,
            "[precision] held-out (n = %d): fp32 accuracy %.4f loss %.4f, "
            "bf16 accuracy %.4f loss %.4f: %+.2f points\n",
            NHELD, f.acc, f.loss, b.acc, b.loss, points);
    // the comparison means something only if fp32 learned the pattern
    cr_expect_gt(f.acc, 0.7, "fp32 did not learn: %.4f", f.acc);
    cr_expect_leq(fabs(points), MAX_POINTS,
                  "bf16 %.4f against fp32 %.4f: %+.2f points", b.acc, f.acc,
                  points);
    tp_rmdir(dir);
}

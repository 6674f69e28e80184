// A separate implementation of the head: bench/torch_head.py builds it from
// PyTorch's own modules (LayerNorm, MultiheadAttention, norm-first
// TransformerDecoderLayer) and loads clef's exported weights with a strict
// load_state_dict. After clef trains a mixed-geometry package (every question
// type, soft targets, F16/BF16 hidden states, ragged spans), PyTorch in
// float64 and `clef score` must give the same logits for every record.
// Needs Debian's python3-torch; skipped with the reason when it is missing.
#include <criterion/criterion.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_package.h"

#define PY "/usr/bin/python3"
#define TORCH_HEAD CLEF_TEST_DATA "/../bench/torch_head.py"

static int have_torch(void)
{
    return system(PY " -c 'import torch, numpy' >/dev/null 2>&1") == 0;
}

// logits of every record from `clef score` replies: {record: [z...]}
static json_t *clef_logits(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/out", dir);
    char *text = tp_slurp(path, NULL);
    cr_assert_not_null(text);
    json_t *out = json_object();
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *reply = json_loads(line, 0, &e);
        cr_assert_not_null(reply, "score reply is not JSON: %s", e.text);
        const char *rec = json_string_value(json_object_get(reply, "record"));
        json_t *z = json_object_get(out, rec);
        if (!z) {
            z = json_array();
            json_object_set_new(out, rec, z);
        }
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(reply, "scores"), i, s)
            json_array_append(z, json_object_get(s, "logit"));
        json_decref(reply);
    }
    free(text);
    return out;
}

Test(torch_parity, exported_weights_give_pytorch_logits, .timeout = 120)
{
    if (!have_torch())
        cr_skip_test(PY " cannot import torch and numpy (apt-get install "
                        "python3-torch python3-numpy): no PyTorch to compare with");
    char *dir = tp_tmpdir();
    char pkg[1024], run[1024], weights[2048], cmd[8192];
    snprintf(pkg, sizeof(pkg), "%s/pkg", dir);
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(weights, sizeof(weights), "%s/weights.safetensors", run);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", pkg);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(tp_write_mixed_package(pkg), 0);
    cr_assert_eq(tp_clef(dir, "train --package %s/package.json --run-dir %s "
                              "--epochs 3 --lr 0.01 --quiet", pkg, run), 0);
    snprintf(cmd, sizeof(cmd), PY " %s logits --weights %s --package %s/package.json"
             " > %s/torch.json 2> %s/torch.err", TORCH_HEAD, weights, pkg, dir, dir);
    cr_assert_eq(system(cmd), 0, "torch_head.py failed (see %s/torch.err)", dir);
    snprintf(cmd, sizeof(cmd), "%s/torch.json", dir);
    json_error_t e;
    json_t *theirs = json_load_file(cmd, 0, &e);
    cr_assert_not_null(theirs, "%s", e.text);

    // clef score with the memory attentions in each form (core/memattn.h)
    static const char *const modes[] = {"project", "absorb"};
    for (int m = 0; m < 2; m++) {
        setenv("CLEF_MEMORY_ATTENTION", modes[m], 1);
        cr_assert_eq(tp_clef(dir, "score --weights %s --package %s/package.json",
                             weights, pkg), 0);
        unsetenv("CLEF_MEMORY_ATTENTION");
        json_t *ours = clef_logits(dir);
        cr_assert_eq(json_object_size(ours), json_object_size(theirs));
        const char *rec;
        json_t *zt;
        double worst = 0;
        json_object_foreach(theirs, rec, zt) {
            json_t *zo = json_object_get(ours, rec);
            cr_assert_not_null(zo, "clef score has no record %s", rec);
            cr_assert_eq(json_array_size(zo), json_array_size(zt), "record %s", rec);
            double scale = 1.0;
            for (size_t i = 0; i < json_array_size(zt); i++)
                scale = fmax(scale, fabs(json_number_value(json_array_get(zt, i))));
            for (size_t i = 0; i < json_array_size(zt); i++) {
                double a = json_number_value(json_array_get(zo, i));
                double b = json_number_value(json_array_get(zt, i));
                // float32 forward against float64: a few hundred FLT_EPSILON of
                // the logits' scale covers the head's depth of rounding
                double err = fabs(a - b) / (FLT_EPSILON * scale);
                worst = fmax(worst, err);
                cr_expect(err <= 256, "%s: record %s logit %zu: clef %.9g, "
                          "PyTorch %.9g (%.0f eps)", modes[m], rec, i, a, b, err);
            }
        }
        fprintf(stderr, "[torch_parity] %s: worst logit difference: %.1f "
                        "FLT_EPSILON\n", modes[m], worst);
        json_decref(ours);
    }
    json_decref(theirs);
    free(dir);
}

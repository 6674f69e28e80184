// Head weights and checkpoints (core/weights.c, FORMATS.md).
//
// Files are built by a small raw writer in this file (any dtype, any shape,
// any subset of tensors), so every loading rule is tested against bytes the
// library did not write. Round trips must be bit-exact: nothing is computed.
#include <criterion/criterion.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weights.h"
#include "util_package.h"

#define GOLDEN CLEF_TEST_DATA "/golden/tiny/weights.safetensors"

// ---- folders ----

static char *tmpdir_new(void)
{
    char *d = tp_tmpdir(); // util_package.c
    cr_assert_not_null(d);
    return d;
}

static int dir_count(const char *d)
{
    DIR *dp = opendir(d);
    cr_assert_not_null(dp);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(dp);
    return n;
}

static char *path_in(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

// ---- a raw writer: a list of tensors with any dtype and shape ----

typedef struct raw_tensor {
    char name[128];
    const char *dtype; // "F32", "F16", "BF16", "F64", "I32"
    int ndim;
    long shape[3];
    uint8_t *bytes; // owned
    size_t nbytes;
} raw_tensor;

typedef struct raw_file {
    raw_tensor t[400];
    int n;
    char meta[1024]; // the __metadata__ object's inside, or ""
} raw_file;

static raw_tensor *raw_add(raw_file *rf, const char *name, const char *dtype,
                           int ndim, const long *shape, const void *data,
                           size_t nbytes)
{
    cr_assert_lt(rf->n, 400);
    raw_tensor *t = &rf->t[rf->n++];
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->bytes = malloc(nbytes ? nbytes : 1);
    memcpy(t->bytes, data, nbytes);
    t->nbytes = nbytes;
    return t;
}

// Every tensor of a head as F32, with a head's own shapes (scalars as [1]).
static void raw_from_head(raw_file *rf, const clef_head *hd, const char *prefix,
                          const float *base)
{
    for (int i = 0; i < hd->ntensors; i++) {
        const clef_tensor_info *ti = &hd->tensors[i];
        char name[160];
        snprintf(name, sizeof(name), "%s%s", prefix, ti->name);
        long shape[2] = {ti->shape[0], ti->shape[1]};
        raw_add(rf, name, "F32", ti->ndim, shape, base + ti->offset,
                ti->numel * 4);
    }
}

static raw_tensor *raw_find(raw_file *rf, const char *name)
{
    for (int i = 0; i < rf->n; i++)
        if (strcmp(rf->t[i].name, name) == 0)
            return &rf->t[i];
    cr_assert_fail("no tensor %s in the raw file", name);
    return NULL;
}

static void raw_remove(raw_file *rf, const char *name)
{
    raw_tensor *t = raw_find(rf, name);
    free(t->bytes);
    int i = (int)(t - rf->t);
    memmove(&rf->t[i], &rf->t[i + 1], sizeof(*t) * (size_t)(rf->n - i - 1));
    rf->n--;
}

static void raw_write(const raw_file *rf, const char *path)
{
    size_t cap = 64 + strlen(rf->meta) + (size_t)rf->n * 256;
    char *h = malloc(cap);
    size_t k = (size_t)snprintf(h, cap, "{");
    if (rf->meta[0])
        k +=
            (size_t)snprintf(h + k, cap - k, "\"__metadata__\":{%s}", rf->meta);
    size_t off = 0;
    for (int i = 0; i < rf->n; i++) {
        const raw_tensor *t = &rf->t[i];
        k += (size_t)snprintf(h + k, cap - k,
                              "%s\"%s\":{\"dtype\":\"%s\","
                              "\"shape\":[",
                              (i || rf->meta[0]) ? "," : "", t->name, t->dtype);
        for (int d = 0; d < t->ndim; d++)
            k += (size_t)snprintf(h + k, cap - k, "%s%ld", d ? "," : "",
                                  t->shape[d]);
        k += (size_t)snprintf(h + k, cap - k, "],\"data_offsets\":[%zu,%zu]}",
                              off, off + t->nbytes);
        off += t->nbytes;
    }
    k += (size_t)snprintf(h + k, cap - k, "}");
    cr_assert_lt(k, cap);
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp);
    uint64_t n = k;
    fwrite(&n, 8, 1, fp); // little-endian host
    fwrite(h, 1, k, fp);
    for (int i = 0; i < rf->n; i++)
        fwrite(rf->t[i].bytes, 1, rf->t[i].nbytes, fp);
    fclose(fp);
    free(h);
}

static void raw_free(raw_file *rf)
{
    for (int i = 0; i < rf->n; i++)
        free(rf->t[i].bytes);
    rf->n = 0;
}

// ---- heads ----

static const clef_config SMALL = {
    .d = 6, .w = 4, .h = 2, .f = 5, .R = 1, .L = 2};

static void head_random(clef_head *hd, const clef_config *c, uint64_t seed)
{
    clef_err err = {0};
    cr_assert_eq(clef_head_alloc(hd, c, &err), 0, "%s", err.msg);
    clef_head_init_random(hd, seed);
    // make every tensor non-zero so a lost tensor shows
    for (size_t i = 0; i < hd->nparams; i++)
        hd->params[i] += (float)(i % 13) * 0.0625f;
}

static int config_eq(const clef_config *a, const clef_config *b)
{
    return a->d == b->d && a->w == b->w && a->h == b->h && a->f == b->f &&
           a->R == b->R && a->L == b->L;
}

// Loading must fail with an input error naming path and both fragments.
static void expect_load_fails(const char *path, int default_heads,
                              const char *frag1, const char *frag2)
{
    clef_head hd;
    clef_err err = {0};
    int rc = clef_weights_load(path, default_heads, &hd, &err);
    cr_assert_eq(rc, CLEF_ERR_INPUT, "expected rejection, got %d (%s)", rc,
                 err.msg);
    cr_assert_not_null(strstr(err.msg, path), "no path in: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, frag1), "no '%s' in: %s", frag1,
                       err.msg);
    if (frag2)
        cr_assert_not_null(strstr(err.msg, frag2), "no '%s' in: %s", frag2,
                           err.msg);
    cr_assert_null(hd.params, "a failed load must leave no head");
}

// ---- the golden weights ----

Test(weights, golden_loads_with_its_config)
{
    clef_head hd;
    clef_err err = {0};
    cr_assert_eq(clef_weights_load(GOLDEN, 16, &hd, &err), 0, "%s", err.msg);
    clef_config want = {.d = 8, .w = 8, .h = 2, .f = 16, .R = 2, .L = 4};
    cr_assert(config_eq(&hd.cfg, &want), "config %d %d %d %d %d %d", hd.cfg.d,
              hd.cfg.w, hd.cfg.h, hd.cfg.f, hd.cfg.R, hd.cfg.L);
    cr_assert_eq(hd.ntensors, 122);
    cr_assert_eq(hd.nparams, 5596);
    // every value equals the stored float, tensor by tensor
    clef_st_file f;
    cr_assert_eq(clef_st_open(GOLDEN, &f, &err), 0, "%s", err.msg);
    float *buf = malloc(sizeof(float) * hd.nparams);
    for (int i = 0; i < hd.ntensors; i++) {
        const clef_tensor_info *ti = &hd.tensors[i];
        const clef_st_tensor *t = clef_st_find(&f, ti->name);
        cr_assert_not_null(t, "%s", ti->name);
        cr_assert_eq(t->numel, ti->numel, "%s", ti->name);
        cr_assert_eq(clef_st_read_f32(&f, t, buf, 1, &err), 0);
        cr_assert_eq(memcmp(buf, hd.params + ti->offset, 4 * ti->numel), 0,
                     "%s differs", ti->name);
    }
    free(buf);
    clef_st_close(&f);
    clef_head_free(&hd);
}

Test(weights, golden_config_inferred_without_metadata)
{
    clef_head g;
    clef_err err = {0};
    cr_assert_eq(clef_weights_load(GOLDEN, 1, &g, &err), 0, "%s", err.msg);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "nometa.safetensors");
    raw_file *rf = calloc(1, sizeof(*rf));
    raw_from_head(rf, &g, "", g.params);
    raw_write(rf, p);
    for (int heads = 1; heads <= 8; heads *= 2) {
        clef_head hd;
        cr_assert_eq(clef_weights_load(p, heads, &hd, &err), 0, "%s", err.msg);
        clef_config want = {
            .d = 8, .w = 8, .h = heads, .f = 16, .R = 2, .L = 4};
        cr_assert(config_eq(&hd.cfg, &want), "inferred %d %d %d %d %d %d",
                  hd.cfg.d, hd.cfg.w, hd.cfg.h, hd.cfg.f, hd.cfg.R, hd.cfg.L);
        cr_assert_eq(hd.nparams, 5596);
        cr_assert_eq(memcmp(hd.params, g.params, 4 * g.nparams), 0);
        clef_head_free(&hd);
    }
    // heads must divide the width
    expect_load_fails(p, 3, "width 8 must be divisible by heads 3", NULL);
    raw_free(rf);
    free(rf);
    free(p);
    clef_head_free(&g);
    tp_rmdir(dir);
}

// ---- save and load ----

Test(weights, save_load_round_trip_bit_exact)
{
    clef_head a, b;
    head_random(&a, &SMALL, 7);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "w.safetensors");
    clef_err err = {0};
    clef_st_meta extra[1] = {{"note", "round trip"}};
    cr_assert_eq(clef_weights_save(p, &a, extra, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dir_count(dir), 1, "temporary file left behind");
    // heads comes from the metadata, not from the default
    cr_assert_eq(clef_weights_load(p, 1, &b, &err), 0, "%s", err.msg);
    cr_assert(config_eq(&a.cfg, &b.cfg));
    cr_assert_eq(memcmp(a.params, b.params, 4 * a.nparams), 0);

    clef_st_file f;
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_str_eq(clef_st_meta_get(&f, "format"), "clef-head/1");
    char *json = clef_config_to_json(&a.cfg);
    cr_assert_str_eq(clef_st_meta_get(&f, "head"), json);
    cr_assert_str_eq(json, "{\"hidden_size\": 6, \"width\": 4, \"heads\": 2, "
                           "\"feedforward\": 5, \"routing_layers\": 1, "
                           "\"layers\": 2}");
    free(json);
    cr_assert_str_eq(clef_st_meta_get(&f, "note"), "round trip");
    cr_assert_eq(f.ntensors, a.ntensors);
    for (int i = 0; i < f.ntensors; i++) { // state-dict order, F32
        cr_assert_str_eq(f.tensors[i].name, a.tensors[i].name);
        cr_assert_eq(f.tensors[i].dtype, CLEF_DT_F32);
        cr_assert_eq(f.tensors[i].ndim, a.tensors[i].ndim);
    }
    clef_st_close(&f);
    clef_head_free(&a);
    clef_head_free(&b);
    free(p);
    tp_rmdir(dir);
}

Test(weights, golden_save_load_round_trip_bit_exact)
{
    clef_head a, b;
    clef_err err = {0};
    cr_assert_eq(clef_weights_load(GOLDEN, 1, &a, &err), 0, "%s", err.msg);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "golden-copy.safetensors");
    cr_assert_eq(clef_weights_save(p, &a, NULL, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_weights_load(p, 1, &b, &err), 0, "%s", err.msg);
    cr_assert(config_eq(&a.cfg, &b.cfg));
    cr_assert_eq(memcmp(a.params, b.params, 4 * a.nparams), 0);
    clef_head_free(&a);
    clef_head_free(&b);
    free(p);
    tp_rmdir(dir);
}

Test(weights, half_precision_weights_load)
{
    clef_head a;
    head_random(&a, &SMALL, 3);
    raw_file *rf = calloc(1, sizeof(*rf));
    // BF16: the top half of each float; F16 for one tensor: set bit patterns
    for (int i = 0; i < a.ntensors; i++) {
        const clef_tensor_info *ti = &a.tensors[i];
        uint16_t *h = malloc(2 * ti->numel);
        int f16 = strcmp(ti->name, "type_embedding.weight") == 0;
        for (size_t k = 0; k < ti->numel; k++) {
            uint32_t bits;
            memcpy(&bits, &a.params[ti->offset + k], 4);
            // f16: finite patterns across the range, subnormals included
            h[k] = f16 ? (uint16_t)((k * 2654435761u) % 0x7c00u)
                       : (uint16_t)(bits >> 16);
        }
        long shape[2] = {ti->shape[0], ti->shape[1]};
        raw_add(rf, ti->name, f16 ? "F16" : "BF16", ti->ndim, shape, h,
                2 * ti->numel);
        free(h);
    }
    char *dir = tmpdir_new();
    char *p = path_in(dir, "half.safetensors");
    raw_write(rf, p);
    clef_head b;
    clef_err err = {0};
    cr_assert_eq(clef_weights_load(p, 2, &b, &err), 0, "%s", err.msg);
    cr_assert(config_eq(&b.cfg, &SMALL));
    for (int i = 0; i < rf->n; i++) {
        const clef_tensor_info *ti = &b.tensors[i];
        const uint16_t *h = (const uint16_t *)rf->t[i].bytes;
        int f16 = strcmp(rf->t[i].dtype, "F16") == 0;
        for (size_t k = 0; k < ti->numel; k++) {
            float want = f16 ? clef_f16_to_f32(h[k]) : clef_bf16_to_f32(h[k]);
            cr_assert_eq(b.params[ti->offset + k], want, "%s[%zu]", ti->name,
                         k);
        }
    }
    raw_free(rf);
    free(rf);
    clef_head_free(&a);
    clef_head_free(&b);
    free(p);
    tp_rmdir(dir);
}

// ---- the catalogue of bad weights ----

// A SMALL head written raw with a "head" metadata, then changed by `edit`.
typedef void (*edit_fn)(raw_file *rf);

static void bad_weights(edit_fn edit, int with_meta, const char *frag1,
                        const char *frag2)
{
    clef_head a;
    head_random(&a, &SMALL, 11);
    raw_file *rf = calloc(1, sizeof(*rf));
    raw_from_head(rf, &a, "", a.params);
    if (with_meta) {
        char *json = clef_config_to_json(&SMALL);
        // the config JSON as a JSON string: escape its quotes
        size_t k = (size_t)snprintf(rf->meta, sizeof(rf->meta),
                                    "\"format\":\"clef-head/1\",\"head\":\"");
        for (const char *c = json; *c; c++) {
            if (*c == '"')
                rf->meta[k++] = '\\';
            rf->meta[k++] = *c;
        }
        snprintf(rf->meta + k, sizeof(rf->meta) - k, "\"");
        free(json);
    }
    edit(rf);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "bad.safetensors");
    raw_write(rf, p);
    expect_load_fails(p, 2, frag1, frag2);
    raw_free(rf);
    free(rf);
    clef_head_free(&a);
    free(p);
    tp_rmdir(dir);
}

static void edit_drop_gate(raw_file *rf)
{
    raw_remove(rf, "residual_gate");
}

static void edit_drop_layer_norm(raw_file *rf)
{
    raw_remove(rf, "layers.1.norm2.bias");
}

static void edit_extra(raw_file *rf)
{
    float x = 1;
    long s[1] = {1};
    raw_add(rf, "layers.9.bogus", "F32", 1, s, &x, 4);
}

static void edit_type_rows(raw_file *rf)
{
    raw_tensor *t = raw_find(rf, "type_embedding.weight");
    t->shape[0] = 2; // [2, 4] but the data of [3, 4]: fix the data too
    t->nbytes = 2 * 4 * 4;
}

static void edit_scalar_shape(raw_file *rf)
{
    raw_tensor *t = raw_find(rf, "joint_logit_scale");
    t->ndim = 2;
    t->shape[0] = 1;
    t->shape[1] = 1;
}

static void edit_scalar_as_0d(raw_file *rf)
{
    raw_find(rf, "prior_logit_scale")->ndim = 0;
}

static void edit_bias_as_scalar(raw_file *rf)
{
    raw_find(rf, "residual_scorer.3.bias")->ndim = 0;
}

static void edit_i32(raw_file *rf)
{
    raw_find(rf, "hidden_norm.bias")->dtype = "I32";
}

static void edit_f64(raw_file *rf)
{
    raw_tensor *t = raw_find(rf, "hidden_norm.bias");
    size_t n = t->nbytes / 4;
    double *d = malloc(8 * n);
    for (size_t i = 0; i < n; i++)
        d[i] = ((float *)t->bytes)[i];
    free(t->bytes);
    t->bytes = (uint8_t *)d;
    t->nbytes = 8 * n;
    t->dtype = "F64";
}

static void edit_nan(raw_file *rf)
{
    raw_tensor *t = raw_find(rf, "layers.0.linear1.weight");
    ((float *)t->bytes)[7] = NAN;
}

static void edit_inf(raw_file *rf)
{
    raw_tensor *t = raw_find(rf, "prior_logit_scale");
    ((float *)t->bytes)[0] = -INFINITY;
}

Test(weights, clean_file_loads)
{
    // the fixture itself is valid: every rejection below is the edit's
    clef_head a, b;
    head_random(&a, &SMALL, 11);
    raw_file *rf = calloc(1, sizeof(*rf));
    raw_from_head(rf, &a, "", a.params);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "ok.safetensors");
    raw_write(rf, p);
    clef_err err = {0};
    cr_assert_eq(clef_weights_load(p, 2, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(a.params, b.params, 4 * a.nparams), 0);
    clef_head_free(&b);
    edit_scalar_as_0d(rf); // [] is accepted for a scalar
    raw_write(rf, p);
    cr_assert_eq(clef_weights_load(p, 2, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(a.params, b.params, 4 * a.nparams), 0);
    clef_head_free(&b);
    raw_free(rf);
    free(rf);
    clef_head_free(&a);
    free(p);
    tp_rmdir(dir);
}

Test(weights, reject_missing_tensor)
{
    bad_weights(edit_drop_gate, 1, "tensor residual_gate", "missing");
    bad_weights(edit_drop_layer_norm, 0, "tensor layers.1.norm2.bias",
                "missing (expected shape [4])");
}

Test(weights, reject_extra_tensor)
{
    bad_weights(edit_extra, 1, "tensor layers.9.bogus", "unexpected tensor");
}

Test(weights, reject_wrong_shape)
{
    bad_weights(edit_type_rows, 1, "tensor type_embedding.weight",
                "shape [2, 4], expected [3, 4]");
    bad_weights(edit_scalar_shape, 1, "tensor joint_logit_scale",
                "shape [1, 1], expected [1] (or [])");
    bad_weights(edit_bias_as_scalar, 1, "tensor residual_scorer.3.bias",
                "shape [], expected [1]");
}

Test(weights, reject_wrong_dtype)
{
    bad_weights(edit_i32, 1, "tensor hidden_norm.bias",
                "dtype must be F32, F16 or BF16");
    bad_weights(edit_f64, 1, "tensor hidden_norm.bias",
                "dtype must be F32, F16 or BF16");
}

Test(weights, reject_non_finite)
{
    bad_weights(edit_nan, 1, "tensor layers.0.linear1.weight",
                "element 7 is NaN");
    bad_weights(edit_inf, 0, "tensor prior_logit_scale", "element 0 is Inf");
}

Test(weights, reject_bad_head_metadata)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "meta.safetensors");
    clef_head a;
    head_random(&a, &SMALL, 5);
    raw_file *rf = calloc(1, sizeof(*rf));
    raw_from_head(rf, &a, "", a.params);
    snprintf(rf->meta, sizeof(rf->meta), "\"head\":\"[1, 2]\"");
    raw_write(rf, p);
    expect_load_fails(p, 2, "field __metadata__.head", "JSON object");
    // a config that disagrees with the shapes: the shapes are checked
    snprintf(rf->meta, sizeof(rf->meta),
             "\"head\":\"{\\\"hidden_size\\\": 6, \\\"width\\\": 4, "
             "\\\"heads\\\": 2, \\\"feedforward\\\": 7, "
             "\\\"routing_layers\\\": 1, \\\"layers\\\": 2}\"");
    raw_write(rf, p);
    expect_load_fails(p, 2, "tensor evidence_layers.0.feedforward.0.weight",
                      "shape [5, 4], expected [7, 4]");
    raw_free(rf);
    free(rf);
    clef_head_free(&a);
    free(p);
    tp_rmdir(dir);
}

// ---- checkpoints ----

static void head_with_moments(clef_head *hd, uint64_t seed)
{
    head_random(hd, &SMALL, seed);
    for (size_t i = 0; i < hd->nparams; i++) {
        hd->m[i] = (float)((long)(i % 17) - 8) * 0.001f;
        hd->v[i] = (float)(i % 11) * 1e-6f;
    }
    hd->step = 17;
}

Test(weights, checkpoint_round_trip)
{
    clef_head a, b, c;
    head_with_moments(&a, 21);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "checkpoint-17.safetensors");
    clef_err err = {0};
    clef_st_meta extra[2] = {{"epoch", "3"}, {"train", "{\"lr\": 0.001}"}};
    cr_assert_eq(clef_checkpoint_save(p, &a, extra, 2, &err), 0, "%s", err.msg);
    cr_assert_eq(dir_count(dir), 1, "temporary file left behind");

    // into a zeroed head: allocated from the checkpoint
    memset(&b, 0, sizeof(b));
    cr_assert_eq(clef_checkpoint_load(p, &b, &err), 0, "%s", err.msg);
    cr_assert(config_eq(&a.cfg, &b.cfg));
    cr_assert_eq(b.step, 17);
    cr_assert_eq(memcmp(a.params, b.params, 4 * a.nparams), 0);
    cr_assert_eq(memcmp(a.m, b.m, 4 * a.nparams), 0);
    cr_assert_eq(memcmp(a.v, b.v, 4 * a.nparams), 0);

    // into an allocated head of the same config (the resume path)
    cr_assert_eq(clef_head_alloc(&c, &SMALL, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_checkpoint_load(p, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(c.step, 17);
    cr_assert_eq(memcmp(a.v, c.v, 4 * a.nparams), 0);

    clef_st_file f;
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.ntensors, 3 * a.ntensors);
    cr_assert_str_eq(clef_st_meta_get(&f, "format"), "clef-checkpoint/1");
    cr_assert_str_eq(clef_st_meta_get(&f, "step"), "17");
    cr_assert_str_eq(clef_st_meta_get(&f, "epoch"), "3");
    cr_assert_str_eq(clef_st_meta_get(&f, "train"), "{\"lr\": 0.001}");
    cr_assert_not_null(clef_st_find(&f, "adamw.m/residual_gate"));
    cr_assert_not_null(clef_st_find(&f, "adamw.v/layers.1.norm3.bias"));
    clef_st_close(&f);

    // weights can be read out of a checkpoint (its adamw.* are skipped)
    clef_head d;
    cr_assert_eq(clef_weights_load(p, 1, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(a.params, d.params, 4 * a.nparams), 0);
    clef_head_free(&d);

    clef_head_free(&a);
    clef_head_free(&b);
    clef_head_free(&c);
    free(p);
    tp_rmdir(dir);
}

// The end-of-run check: a checkpoint matches its head bit for bit, and one
// flipped bit in params, m or v, another step, or a plain weights file does not.
Test(weights, checkpoint_matches_exactly)
{
    clef_head a;
    head_with_moments(&a, 22);
    char *dir = tmpdir_new();
    char *p = path_in(dir, "checkpoint-17.safetensors");
    char *w = path_in(dir, "weights.safetensors");
    clef_err err = {0};
    cr_assert_eq(clef_checkpoint_save(p, &a, NULL, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_weights_save(w, &a, NULL, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_checkpoint_matches(p, &a, &err), 1);
    cr_assert_eq(clef_checkpoint_matches(w, &a, &err), 0,
                 "weights file matched");
    float *sets[3] = {a.params, a.m, a.v};
    size_t last = a.nparams - 1;
    for (int s = 0; s < 3; s++) {
        uint32_t bits;
        memcpy(&bits, &sets[s][last], 4);
        bits ^= 1u;
        memcpy(&sets[s][last], &bits, 4);
        cr_assert_eq(clef_checkpoint_matches(p, &a, &err), 0,
                     "set %d: one flipped bit matched", s);
        bits ^= 1u;
        memcpy(&sets[s][last], &bits, 4);
    }
    a.step = 18;
    cr_assert_eq(clef_checkpoint_matches(p, &a, &err), 0,
                 "another step matched");
    a.step = 17;
    cr_assert_eq(clef_checkpoint_matches(p, &a, &err), 1);
    clef_head_free(&a);
    free(p);
    free(w);
    tp_rmdir(dir);
}

Test(weights, checkpoint_rejections)
{
    clef_head a;
    head_with_moments(&a, 4);
    char *dir = tmpdir_new();
    char *w = path_in(dir, "weights.safetensors");
    char *p = path_in(dir, "ckpt.safetensors");
    clef_err err = {0};

    // a weights file is not a checkpoint
    cr_assert_eq(clef_weights_save(w, &a, NULL, 0, &err), 0, "%s", err.msg);
    clef_head b;
    memset(&b, 0, sizeof(b));
    cr_assert_eq(clef_checkpoint_load(w, &b, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "__metadata__.format"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "clef-head/1"), "%s", err.msg);
    cr_assert_null(b.params);

    // adamw.* tensors in a weights file are extras
    raw_file *rf = calloc(1, sizeof(*rf));
    raw_from_head(rf, &a, "", a.params);
    raw_from_head(rf, &a, "adamw.m/", a.m);
    raw_write(rf, w);
    expect_load_fails(w, 2, "tensor adamw.m/prior_logit_scale",
                      "unexpected tensor");

    // a checkpoint whose configuration differs from the head's
    cr_assert_eq(clef_checkpoint_save(p, &a, NULL, 0, &err), 0, "%s", err.msg);
    clef_config other = SMALL;
    other.h = 4;
    cr_assert_eq(clef_head_alloc(&b, &other, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_checkpoint_load(p, &b, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "does not match"), "%s", err.msg);
    clef_head_free(&b);

    // a missing moment, a negative second moment, a bad step
    raw_free(rf);
    raw_from_head(rf, &a, "", a.params);
    raw_from_head(rf, &a, "adamw.m/", a.m);
    raw_from_head(rf, &a, "adamw.v/", a.v);
    snprintf(rf->meta, sizeof(rf->meta),
             "\"format\":\"clef-checkpoint/1\",\"step\":\"17\"");
    raw_write(rf, p);
    memset(&b, 0, sizeof(b));
    cr_assert_eq(clef_checkpoint_load(p, &b, &err), 0, "%s", err.msg);
    clef_head_free(&b);

    ((float *)raw_find(rf, "adamw.v/hidden_norm.weight")->bytes)[2] = -1e-9f;
    raw_write(rf, p);
    memset(&b, 0, sizeof(b));
    cr_assert_eq(clef_checkpoint_load(p, &b, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor adamw.v/hidden_norm.weight"),
                       "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "element 2 is negative"), "%s", err.msg);
    cr_assert_null(b.params);

    raw_remove(rf, "adamw.m/type_embedding.weight");
    raw_write(rf, p);
    cr_assert_eq(clef_checkpoint_load(p, &b, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor adamw.m/type_embedding.weight"),
                       "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "missing"), "%s", err.msg);

    snprintf(rf->meta, sizeof(rf->meta),
             "\"format\":\"clef-checkpoint/1\",\"step\":\"-3\"");
    raw_write(rf, p);
    cr_assert_eq(clef_checkpoint_load(p, &b, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "__metadata__.step"), "%s", err.msg);

    raw_free(rf);
    free(rf);
    clef_head_free(&a);
    free(w);
    free(p);
    tp_rmdir(dir);
}

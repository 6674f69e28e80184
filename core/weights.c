// Head weights and checkpoints as safetensors (FORMATS.md, HEAD.md §2).
//
// weights.safetensors: the 122 tensors under their state-dict names, F32,
//   __metadata__ {"format": "clef-head/1", "head": "<config JSON>", ...}.
// checkpoint-<step>.safetensors: the weights, then "adamw.m/<name>" and
//   "adamw.v/<name>" for every tensor, __metadata__ {"format":
//   "clef-checkpoint/1", "step", "head", ...}.
//
// Loading is strict: every tensor present with its exact shape, F32, F16 or
// BF16, finite; no tensor the head does not have. Scalars (s_p, s_j, γ) are
// accepted as shape [] or [1] (the golden file stores them as [1]).
#include "weights.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_HEAD "clef-head/1"
#define FORMAT_CKPT "clef-checkpoint/1"
#define PREFIX_M "adamw.m/"
#define PREFIX_V "adamw.v/"

// ---- configuration JSON ----

char *clef_config_to_json(const clef_config *c)
{
    char buf[256];
    int n = snprintf(buf, sizeof(buf),
                     "{\"hidden_size\": %d, \"width\": %d, \"heads\": %d, "
                     "\"feedforward\": %d, \"routing_layers\": %d, "
                     "\"layers\": %d}",
                     c->d, c->w, c->h, c->f, c->R, c->L);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        memcpy(s, buf, (size_t)n + 1);
    return s;
}

// Reads one positive integer key of the "head" object; absent keys leave
// *out unchanged.
static int config_key(const char *path, json_t *obj, const char *key, int *out,
                      clef_err *err)
{
    json_t *j = json_object_get(obj, key);
    if (!j)
        return 0;
    json_int_t v = json_is_integer(j) ? json_integer_value(j) : -1;
    if (v < 0 || v > INT32_MAX)
        return clef_err_input(err, path, NULL, "__metadata__.head",
                              "\"%s\" must be an integer >= 0", key);
    *out = (int)v;
    return 0;
}

// Parses __metadata__ "head" into c (keys present override c's values).
static int config_from_meta(const char *path, const char *text, clef_config *c,
                            clef_err *err)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return clef_err_input(err, path, NULL, "__metadata__.head",
                              "must be a JSON object (%s)",
                              root ? "not an object" : jerr.text);
    }
    int rc = config_key(path, root, "hidden_size", &c->d, err);
    if (!rc)
        rc = config_key(path, root, "width", &c->w, err);
    if (!rc)
        rc = config_key(path, root, "heads", &c->h, err);
    if (!rc)
        rc = config_key(path, root, "feedforward", &c->f, err);
    if (!rc)
        rc = config_key(path, root, "routing_layers", &c->R, err);
    if (!rc)
        rc = config_key(path, root, "layers", &c->L, err);
    json_decref(root);
    return rc;
}

// Layer count from names "<prefix><i>.…": the largest i + 1.
static int count_layers(const clef_st_file *f, const char *prefix)
{
    size_t n = strlen(prefix);
    long max = -1;
    for (int i = 0; i < f->ntensors; i++) {
        const char *name = f->tensors[i].name;
        if (strncmp(name, prefix, n) != 0)
            continue;
        char *end;
        errno = 0;
        long idx = strtol(name + n, &end, 10);
        if (end != name + n && *end == '.' && errno == 0 && idx >= 0 &&
            idx < 1000000 && idx > max)
            max = idx;
    }
    return (int)(max + 1);
}

// A 2-D tensor's shape, or an error naming it.
static int shape2(const clef_st_file *f, const char *name, int64_t *rows,
                  int64_t *cols, clef_err *err)
{
    char field[160];
    snprintf(field, sizeof(field), "tensor %s", name);
    const clef_st_tensor *t = clef_st_find(f, name);
    if (!t)
        return clef_err_input(err, f->path, NULL, field,
                              "missing: needed to infer the head "
                              "configuration");
    if (t->ndim != 2 || t->shape[0] > INT32_MAX || t->shape[1] > INT32_MAX)
        return clef_err_input(err, f->path, NULL, field,
                              "must be a 2-D tensor to infer the head "
                              "configuration (has %d dims)",
                              t->ndim);
    *rows = t->shape[0];
    *cols = t->shape[1];
    return 0;
}

// The configuration of a file: from __metadata__ "head" when present, else
// inferred from the shapes (heads from default_heads).
static int config_of_file(const clef_st_file *f, int default_heads,
                          clef_config *c, clef_err *err)
{
    memset(c, 0, sizeof(*c));
    c->h = default_heads;
    const char *meta = clef_st_meta_get(f, "head");
    if (meta) {
        c->d = c->w = c->f = -1;
        c->R = c->L = -1;
        int rc = config_from_meta(f->path, meta, c, err);
        if (rc)
            return rc;
        if (c->d >= 0 && c->w >= 0 && c->f >= 0 && c->R >= 0 && c->L >= 0)
            return clef_config_check(c, f->path, err);
        // an incomplete "head": infer the missing sizes below
    }
    int64_t w, d, ff, x;
    int rc = shape2(f, "memory_projection.weight", &w, &d, err);
    if (rc)
        return rc;
    int R = count_layers(f, "evidence_layers.");
    int L = count_layers(f, "layers.");
    if (R > 0)
        rc = shape2(f, "evidence_layers.0.feedforward.0.weight", &ff, &x, err);
    else if (L > 0)
        rc = shape2(f, "layers.0.linear1.weight", &ff, &x, err);
    else
        rc = clef_err_input(err, f->path, NULL, "header",
                            "cannot infer feedforward: no evidence_layers.* "
                            "or layers.* tensors");
    if (rc)
        return rc;
    if (!meta || c->d < 0)
        c->d = (int)d;
    if (!meta || c->w < 0)
        c->w = (int)w;
    if (!meta || c->f < 0)
        c->f = (int)ff;
    if (!meta || c->R < 0)
        c->R = R;
    if (!meta || c->L < 0)
        c->L = L;
    return clef_config_check(c, f->path, err);
}

// ---- reading tensors ----

static void shape_text(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "",
                              shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

// Checks one stored tensor against the head's expected shape and dtype.
static int check_tensor(const clef_st_file *f, const clef_tensor_info *ti,
                        const char *name, const clef_st_tensor **out,
                        clef_err *err)
{
    char field[160], want[64], got[128];
    snprintf(field, sizeof(field), "tensor %s", name);
    int64_t ws[2] = {ti->shape[0], ti->shape[1]};
    shape_text(want, sizeof(want), ti->ndim, ws);
    const clef_st_tensor *t = clef_st_find(f, name);
    if (!t)
        return clef_err_input(err, f->path, NULL, field,
                              "missing (expected shape %s)", want);
    if (t->dtype != CLEF_DT_F32 && t->dtype != CLEF_DT_F16 &&
        t->dtype != CLEF_DT_BF16)
        return clef_err_input(err, f->path, NULL, field,
                              "dtype must be F32, F16 or BF16");
    // The three head scalars (the first three tensors) are stored [1] by the
    // reference module; [] is accepted for them too.
    const int scalar = ti->offset < 3;
    int ok;
    if (scalar)
        ok = t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1);
    else
        ok = t->ndim == ti->ndim && t->shape[0] == ti->shape[0] &&
             (ti->ndim < 2 || t->shape[1] == ti->shape[1]);
    if (!ok) {
        shape_text(got, sizeof(got), t->ndim, t->shape);
        return clef_err_input(err, f->path, NULL, field,
                              "shape %s, expected %s%s", got, want,
                              scalar ? " (or [])" : "");
    }
    *out = t;
    return 0;
}

// Reads every head tensor named "<prefix><name>" into dst (a flat buffer in
// the head's layout). Checks all shapes first, then converts.
static int read_set(const clef_st_file *f, const clef_head *hd,
                    const char *prefix, float *dst, clef_err *err)
{
    char name[CLEF_NAME_MAX + 16];
    const clef_st_tensor **found = calloc((size_t)hd->ntensors, sizeof(*found));
    if (!found)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", f->path);
    int rc = 0;
    for (int i = 0; i < hd->ntensors && !rc; i++) {
        snprintf(name, sizeof(name), "%s%s", prefix, hd->tensors[i].name);
        rc = check_tensor(f, &hd->tensors[i], name, &found[i], err);
    }
    for (int i = 0; i < hd->ntensors && !rc; i++)
        rc = clef_st_read_f32(f, found[i], dst + hd->tensors[i].offset, 1, err);
    free(found);
    return rc;
}

// Rejects any stored tensor that is not "<prefix><head tensor>" for one of
// the allowed prefixes.
static int check_extras(const clef_st_file *f, const clef_head *hd,
                        const char *const *prefixes, int nprefixes,
                        clef_err *err)
{
    for (int i = 0; i < f->ntensors; i++) {
        const char *name = f->tensors[i].name;
        int known = 0;
        for (int p = 0; p < nprefixes && !known; p++) {
            size_t n = strlen(prefixes[p]);
            known = strncmp(name, prefixes[p], n) == 0 &&
                    clef_head_find(hd, name + n) >= 0;
        }
        if (!known) {
            char field[160];
            snprintf(field, sizeof(field), "tensor %s", name);
            return clef_err_input(err, f->path, NULL, field,
                                  "unexpected tensor: not a parameter of "
                                  "the head");
        }
    }
    return 0;
}

static int is_checkpoint(const clef_st_file *f)
{
    const char *fmt = clef_st_meta_get(f, "format");
    return fmt && strcmp(fmt, FORMAT_CKPT) == 0;
}

// Weights from a weights file, or from a checkpoint (whose adamw.* tensors
// are then allowed and ignored).
int clef_weights_read_into(const clef_st_file *f, clef_head *hd, clef_err *err)
{
    static const char *const plain[] = {""};
    static const char *const ckpt[] = {"", PREFIX_M, PREFIX_V};
    int rc = is_checkpoint(f) ? check_extras(f, hd, ckpt, 3, err)
                              : check_extras(f, hd, plain, 1, err);
    if (rc)
        return rc;
    return read_set(f, hd, "", hd->params, err);
}

int clef_weights_load(const char *path, int default_heads, clef_head *hd,
                      clef_err *err)
{
    return clef_weights_load_pinned(path, NULL, NULL, default_heads, hd, err);
}

int clef_weights_load_pinned(const char *path, const char *sha256,
                             const char *field, int default_heads,
                             clef_head *hd, clef_err *err)
{
    memset(hd, 0, sizeof(*hd));
    clef_st_file f;
    int rc = clef_st_open_pinned(path, sha256, field, &f, err);
    if (rc)
        return rc;
    clef_config c;
    rc = config_of_file(&f, default_heads, &c, err);
    if (!rc)
        rc = clef_head_alloc(hd, &c, err);
    if (!rc) {
        rc = clef_weights_read_into(&f, hd, err);
        if (rc)
            clef_head_free(hd);
    }
    clef_st_close(&f);
    return rc;
}

// ---- saving ----

// Metadata: the given leading pairs, then the caller's extra pairs.
static clef_st_meta *meta_join(const clef_st_meta *lead, int nlead,
                               const clef_st_meta *extra, int nextra)
{
    clef_st_meta *m = malloc(sizeof(*m) * (size_t)(nlead + nextra));
    if (!m)
        return NULL;
    for (int i = 0; i < nlead; i++)
        m[i] = lead[i];
    for (int i = 0; i < nextra; i++)
        m[nlead + i] = extra[i];
    return m;
}

static void entry_of(const clef_tensor_info *ti, const char *name,
                     const float *base, clef_st_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->name = name;
    e->dtype = CLEF_DT_F32;
    e->ndim = ti->ndim;
    e->shape[0] = ti->shape[0];
    e->shape[1] = ti->shape[1];
    e->data = base + ti->offset;
}

int clef_weights_save(const char *path, const clef_head *hd,
                      const clef_st_meta *extra, int nextra, clef_err *err)
{
    return clef_weights_save_as(path, hd, CLEF_DT_F32, extra, nextra, err);
}

int clef_weights_save_as(const char *path, const clef_head *hd,
                         clef_dtype dtype, const clef_st_meta *extra,
                         int nextra, clef_err *err)
{
    int n = hd->ntensors, rc;
    const int bf16 = dtype == CLEF_DT_BF16;
    char *head = clef_config_to_json(&hd->cfg);
    clef_st_entry *e = malloc(sizeof(*e) * (size_t)n);
    clef_st_meta lead[2] = {{"format", FORMAT_HEAD}, {"head", head}};
    clef_st_meta *meta = meta_join(lead, 2, extra, nextra);
    uint16_t *b16 = bf16 ? malloc(sizeof(uint16_t) * hd->nparams + 2) : NULL;
    if (dtype != CLEF_DT_F32 && !bf16) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: weights are F32 or BF16",
                          path);
        goto cleanup;
    }
    if (!head || !e || !meta || (bf16 && !b16)) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
        goto cleanup;
    }
    if (bf16) // the reference conversion: round to nearest even
        clef_scalar_kernels.cvt_f32_bf16(hd->nparams, hd->params, b16);
    for (int i = 0; i < n; i++) {
        entry_of(&hd->tensors[i], hd->tensors[i].name, hd->params, &e[i]);
        if (bf16) {
            e[i].dtype = CLEF_DT_BF16;
            e[i].data = b16 + hd->tensors[i].offset;
        }
    }
    rc = clef_st_write(path, e, n, meta, 2 + nextra, err);
cleanup:
    free(b16);
    free(meta);
    free(e);
    free(head);
    return rc;
}

// ---- checkpoints ----

int clef_checkpoint_save(const char *path, const clef_head *hd,
                         const clef_st_meta *extra, int nextra, clef_err *err)
{
    int n = hd->ntensors, rc;
    char step[32];
    snprintf(step, sizeof(step), "%ld", hd->step);
    char *head = clef_config_to_json(&hd->cfg);
    clef_st_entry *e = malloc(sizeof(*e) * 3 * (size_t)n);
    // names of the moments: "adamw.m/<name>", "adamw.v/<name>"
    char(*names)[CLEF_NAME_MAX + 16] = malloc(sizeof(*names) * 2 * (size_t)n);
    clef_st_meta lead[3] = {
        {"format", FORMAT_CKPT}, {"step", step}, {"head", head}};
    clef_st_meta *meta = meta_join(lead, 3, extra, nextra);
    if (!head || !e || !names || !meta) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        const clef_tensor_info *ti = &hd->tensors[i];
        snprintf(names[i], sizeof(names[i]), PREFIX_M "%s", ti->name);
        snprintf(names[n + i], sizeof(names[i]), PREFIX_V "%s", ti->name);
        entry_of(ti, ti->name, hd->params, &e[i]);
        entry_of(ti, names[i], hd->m, &e[n + i]);
        entry_of(ti, names[n + i], hd->v, &e[2 * n + i]);
    }
    rc = clef_st_write(path, e, 3 * n, meta, 3 + nextra, err);
cleanup:
    free(meta);
    free(names);
    free(e);
    free(head);
    return rc;
}

static int parse_step(const clef_st_file *f, long *step, clef_err *err)
{
    const char *s = clef_st_meta_get(f, "step");
    if (!s)
        return clef_err_input(err, f->path, NULL, "__metadata__.step",
                              "missing");
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0)
        return clef_err_input(err, f->path, NULL, "__metadata__.step",
                              "\"%s\" is not an integer >= 0", s);
    *step = v;
    return 0;
}

static int config_equal(const clef_config *a, const clef_config *b)
{
    return a->d == b->d && a->w == b->w && a->h == b->h && a->f == b->f &&
           a->R == b->R && a->L == b->L;
}

// v must be >= 0: it is a running mean of squares.
static int check_v(const clef_st_file *f, const clef_head *hd, clef_err *err)
{
    for (int i = 0; i < hd->ntensors; i++) {
        const clef_tensor_info *ti = &hd->tensors[i];
        for (size_t k = 0; k < ti->numel; k++) {
            if (hd->v[ti->offset + k] < 0.f) {
                char field[160];
                snprintf(field, sizeof(field), "tensor " PREFIX_V "%s",
                         ti->name);
                return clef_err_input(err, f->path, NULL, field,
                                      "element %zu is negative: a second "
                                      "moment must be >= 0",
                                      k);
            }
        }
    }
    return 0;
}

// Restores params, m, v and step. hd may be allocated (its configuration
// must then match the checkpoint's) or zeroed (allocated here from the
// checkpoint's "head" metadata or shapes).
int clef_checkpoint_load(const char *path, clef_head *hd, clef_err *err)
{
    clef_st_file f;
    int rc = clef_st_open(path, &f, err);
    if (rc)
        return rc;
    rc = clef_checkpoint_read(&f, hd, err);
    clef_st_close(&f);
    return rc;
}

int clef_checkpoint_read(const clef_st_file *f, clef_head *hd, clef_err *err)
{
    const char *path = f->path;
    int rc = 0;
    int allocated_here = 0;
    const char *fmt = clef_st_meta_get(f, "format");
    long step = 0;
    if (!is_checkpoint(f)) {
        rc = clef_err_input(err, path, NULL, "__metadata__.format",
                            "is %s%s%s, expected \"" FORMAT_CKPT "\"",
                            fmt ? "\"" : "", fmt ? fmt : "missing",
                            fmt ? "\"" : "");
        goto cleanup;
    }
    if ((rc = parse_step(f, &step, err)) != 0)
        goto cleanup;
    clef_config c;
    int default_heads = hd->tensors ? hd->cfg.h : 1;
    if ((rc = config_of_file(f, default_heads, &c, err)) != 0)
        goto cleanup;
    if (!hd->tensors) {
        if ((rc = clef_head_alloc(hd, &c, err)) != 0)
            goto cleanup;
        allocated_here = 1;
    } else if (!config_equal(&c, &hd->cfg)) {
        char *want = clef_config_to_json(&hd->cfg);
        char *got = clef_config_to_json(&c);
        rc = clef_err_input(err, path, NULL, "__metadata__.head",
                            "checkpoint head %s does not match %s",
                            got ? got : "?", want ? want : "?");
        free(want);
        free(got);
        goto cleanup;
    }
    static const char *const prefixes[] = {"", PREFIX_M, PREFIX_V};
    if ((rc = check_extras(f, hd, prefixes, 3, err)) != 0 ||
        (rc = read_set(f, hd, "", hd->params, err)) != 0 ||
        (rc = read_set(f, hd, PREFIX_M, hd->m, err)) != 0 ||
        (rc = read_set(f, hd, PREFIX_V, hd->v, err)) != 0 ||
        (rc = check_v(f, hd, err)) != 0)
        goto cleanup;
    hd->step = step;
cleanup:
    if (rc && allocated_here)
        clef_head_free(hd);
    return rc;
}

int clef_checkpoint_matches(const char *path, const clef_head *hd,
                            clef_err *err)
{
    clef_st_file f;
    if (clef_st_open(path, &f, err))
        return 0;
    int same = 0;
    long step = 0;
    clef_config c;
    float *buf = NULL;
    if (!is_checkpoint(&f) || parse_step(&f, &step, err) || step != hd->step ||
        config_of_file(&f, hd->cfg.h, &c, err) || !config_equal(&c, &hd->cfg))
        goto out;
    size_t maxn = 1;
    for (int i = 0; i < hd->ntensors; i++)
        if (hd->tensors[i].numel > maxn)
            maxn = hd->tensors[i].numel;
    if (!(buf = malloc(maxn * sizeof(float))))
        goto out;
    static const char *const prefixes[] = {"", PREFIX_M, PREFIX_V};
    const float *const sets[] = {hd->params, hd->m, hd->v};
    char name[CLEF_NAME_MAX + 16];
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < hd->ntensors; i++) {
            const clef_tensor_info *ti = &hd->tensors[i];
            const clef_st_tensor *t;
            snprintf(name, sizeof(name), "%s%s", prefixes[p], ti->name);
            if (check_tensor(&f, ti, name, &t, err) ||
                clef_st_read_f32(&f, t, buf, 1, err) ||
                memcmp(buf, sets[p] + ti->offset, ti->numel * sizeof(float)))
                goto out;
        }
    same = f.ntensors == 3 * hd->ntensors;
out:
    free(buf);
    clef_st_close(&f);
    return same;
}

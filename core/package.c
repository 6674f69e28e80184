// Package reading (FORMATS.md): manifest, hashes, shards, lexical table and
// every rule, checked before a single record is handed to training; then,
// apart, the records' per-record constants (clef_package_prepare).
#include "package.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "file.h"
#include "safetensors.h"
#include "weights.h"

// The manifest is JSON of a few hundred bytes per record: 1 GiB is far past
// any real package and keeps a runaway file from filling memory.
#define CLEF_MANIFEST_MAX ((uint64_t)1 << 30)

// ---------------------------------------------------------------- helpers --

const char *clef_split_name(int split)
{
    switch (split) {
    case CLEF_SPLIT_TRAIN:
        return "train";
    case CLEF_SPLIT_VALIDATION:
        return "validation";
    case CLEF_SPLIT_TEST:
        return "test";
    default:
        return "?";
    }
}

const char *clef_qtype_name(int qtype)
{
    switch (qtype) {
    case CLEF_QTYPE_NOUL:
        return "noul";
    case CLEF_QTYPE_CHOICE:
        return "choice";
    case CLEF_QTYPE_SCORE:
        return "score";
    default:
        return "?";
    }
}

static const char *dtype_name(clef_dtype dt)
{
    switch (dt) {
    case CLEF_DT_F32:
        return "F32";
    case CLEF_DT_F16:
        return "F16";
    case CLEF_DT_BF16:
        return "BF16";
    case CLEF_DT_F64:
        return "F64";
    case CLEF_DT_I32:
        return "I32";
    case CLEF_DT_I64:
        return "I64";
    default:
        return "?";
    }
}

int clef_package_path_ok(const char *name)
{
    if (!name || !name[0] || name[0] == '/')
        return 0;
    const char *s = name;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        if (!e)
            break;
        s = e + 1;
    }
    return 1;
}

int clef_package_id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n < 1 || n > CLEF_RECORD_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)id[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return 0;
    }
    return 1;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xstrdup(".");
    if (slash == path)
        return xstrdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

static int oom(clef_err *err)
{
    return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
}

int clef_package_find(const clef_package *pkg, const char *id)
{
    for (int i = 0; i < pkg->nrecords; i++)
        if (strcmp(pkg->records[i].id, id) == 0)
            return i;
    return -1;
}

int clef_package_add_bf16(clef_package *pkg, const clef_kernels *k,
                          clef_err *err)
{
    for (int i = 0; i < pkg->nrecords; i++)
        if (clef_record_add_bf16(k, &pkg->records[i]))
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    return 0;
}

void clef_package_free(clef_package *pkg)
{
    if (!pkg)
        return;
    free(pkg->manifest);
    free(pkg->dir);
    free(pkg->provenance);
    free(pkg->lexical_path);
    free(pkg->E);
    free(pkg->init_path);
    for (int i = 0; i < pkg->nshards; i++)
        free(pkg->shard_paths ? pkg->shard_paths[i] : NULL);
    free(pkg->shard_paths);
    free(pkg->shard_sha256);
    for (int i = 0; i < pkg->nrecords; i++)
        clef_record_free(&pkg->records[i]);
    free(pkg->records);
    free(pkg->record_shard);
    memset(pkg, 0, sizeof(*pkg));
}

// ------------------------------------------------------- manifest: files --

// A {"file", "sha256"} entry: path rule, hex digest, and the file, resolved
// with its symlinks, inside the package's folder. *out = joined path, sha =
// the digest (lowercase), checked later on the bytes that are parsed.
static int check_file_entry(const clef_package *pkg, json_t *entry,
                            const char *field, char **out,
                            char sha[CLEF_SHA256_HEX], clef_err *err)
{
    char f[96];
    if (!json_is_object(entry))
        return clef_err_input(err, pkg->manifest, NULL, field,
                              "must be an object {\"file\", \"sha256\"}");
    json_t *jf = json_object_get(entry, "file");
    json_t *js = json_object_get(entry, "sha256");
    snprintf(f, sizeof(f), "%s.file", field);
    if (!json_is_string(jf))
        return clef_err_input(err, pkg->manifest, NULL, f,
                              "missing or not a string");
    const char *name = json_string_value(jf);
    if (!clef_package_path_ok(name))
        return clef_err_input(err, pkg->manifest, NULL, f,
                              "\"%s\" leaves the package folder (file names "
                              "are relative, without \"..\" or a leading /)",
                              name);
    char fs[96];
    snprintf(fs, sizeof(fs), "%s.sha256", field);
    if (!json_is_string(js) || !clef_sha256_is_hex(json_string_value(js)))
        return clef_err_input(err, pkg->manifest, NULL, fs,
                              "must be 64 hexadecimal digits");
    char *path = join_path(pkg->dir, name);
    if (!path)
        return oom(err);
    int in = clef_path_inside(pkg->dir, path);
    if (in != 1) {
        if (in < 0)
            clef_err_input(err, pkg->manifest, NULL, f, "%s: cannot open: %s",
                           path, strerror(errno));
        else
            clef_err_input(err, pkg->manifest, NULL, f,
                           "\"%s\" resolves (through a symbolic link) to a "
                           "file outside the package folder",
                           name);
        free(path);
        return CLEF_ERR_INPUT;
    }
    const char *hex = json_string_value(js);
    for (int i = 0; i < 64; i++)
        sha[i] = (char)tolower((unsigned char)hex[i]);
    sha[64] = '\0';
    *out = path;
    return 0;
}

// ------------------------------------------------------- manifest: head --

static int parse_head(clef_package *pkg, json_t *head, clef_err *err)
{
    static const char *keys[6] = {"hidden_size", "width",          "heads",
                                  "feedforward", "routing_layers", "layers"};
    int v[6];
    if (!json_is_object(head))
        return clef_err_input(err, pkg->manifest, NULL, "head",
                              "missing or not an object");
    for (int i = 0; i < 6; i++) {
        char f[48];
        snprintf(f, sizeof(f), "head.%s", keys[i]);
        json_t *j = json_object_get(head, keys[i]);
        if (!json_is_integer(j))
            return clef_err_input(err, pkg->manifest, NULL, f,
                                  "missing or not an integer");
        json_int_t x = json_integer_value(j);
        if (x < 1 || x > (1 << 24))
            return clef_err_input(err, pkg->manifest, NULL, f,
                                  "%lld is out of range [1, 2^24]",
                                  (long long)x);
        v[i] = (int)x;
    }
    pkg->cfg = (clef_config){
        .d = v[0], .w = v[1], .h = v[2], .f = v[3], .R = v[4], .L = v[5]};
    json_t *jd =
        json_object_get(head, "dropout"); // optional, as the reference's
    if (jd && !json_is_number(jd))
        return clef_err_input(err, pkg->manifest, NULL, "head.dropout",
                              "not a number");
    pkg->dropout = jd ? json_number_value(jd) : 0.0;
    if (!(pkg->dropout >= 0.0 && pkg->dropout < 1.0))
        return clef_err_input(err, pkg->manifest, NULL, "head.dropout",
                              "%g is out of range [0, 1)", pkg->dropout);
    return clef_config_check(&pkg->cfg, pkg->manifest, err);
}

// ---------------------------------------------------- manifest: records --

static int parse_split(const char *s)
{
    if (!strcmp(s, "train"))
        return CLEF_SPLIT_TRAIN;
    if (!strcmp(s, "validation"))
        return CLEF_SPLIT_VALIDATION;
    if (!strcmp(s, "test"))
        return CLEF_SPLIT_TEST;
    return -1;
}

static int parse_qtype(const char *s)
{
    if (!strcmp(s, "noul"))
        return CLEF_QTYPE_NOUL;
    if (!strcmp(s, "choice"))
        return CLEF_QTYPE_CHOICE;
    if (!strcmp(s, "score"))
        return CLEF_QTYPE_SCORE;
    return -1;
}

// First pass over one question: type, options, label/target; counts options.
static int check_question(const clef_package *pkg, const char *rid, int split,
                          int qi, json_t *jq, int *nopt, clef_err *err)
{
    const char *m = pkg->manifest;
    char f[96];
    snprintf(f, sizeof(f), "questions[%d]", qi);
    if (!json_is_object(jq))
        return clef_err_input(err, m, rid, f, "must be an object");
    json_t *jid = json_object_get(jq, "id");
    snprintf(f, sizeof(f), "questions[%d].id", qi);
    if (!json_is_string(jid) || !json_string_length(jid))
        return clef_err_input(err, m, rid, f, "missing, empty or not a string");
    snprintf(f, sizeof(f), "questions[%d].type", qi);
    json_t *jt = json_object_get(jq, "type");
    if (!json_is_string(jt))
        return clef_err_input(err, m, rid, f, "missing or not a string");
    int qt = parse_qtype(json_string_value(jt));
    if (qt < 0)
        return clef_err_input(err, m, rid, f,
                              "unknown question type \"%s\" (noul, choice or "
                              "score)",
                              json_string_value(jt));
    snprintf(f, sizeof(f), "questions[%d].options", qi);
    json_t *jo = json_object_get(jq, "options");
    if (!json_is_array(jo) || json_array_size(jo) == 0)
        return clef_err_input(err, m, rid, f,
                              "must be a non-empty list of option ids");
    int n = (int)json_array_size(jo);
    if (n > (1 << 20))
        return clef_err_input(err, m, rid, f, "too many options (%d)", n);
    for (int i = 0; i < n; i++) {
        json_t *a = json_array_get(jo, i);
        if (!json_is_string(a) || !json_string_length(a))
            return clef_err_input(err, m, rid, f,
                                  "option %d is not a non-empty string", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(json_string_value(a),
                        json_string_value(json_array_get(jo, j))))
                return clef_err_input(err, m, rid, f,
                                      "option id \"%s\" appears twice "
                                      "(option ids are unique)",
                                      json_string_value(a));
    }
    if (qt == CLEF_QTYPE_NOUL && n != 2)
        return clef_err_input(err, m, rid, f,
                              "a noul question has exactly two options, "
                              "this one has %d",
                              n);
    json_t *jl = json_object_get(jq, "label");
    json_t *jy = json_object_get(jq, "target");
    if (jl && jy) {
        snprintf(f, sizeof(f), "questions[%d]", qi);
        return clef_err_input(err, m, rid, f,
                              "has both label and target (give one)");
    }
    if (!jl && !jy && split != CLEF_SPLIT_TEST) {
        snprintf(f, sizeof(f), "questions[%d]", qi);
        return clef_err_input(err, m, rid, f,
                              "has neither label nor target (only a test "
                              "record may omit both)");
    }
    if (jl) {
        snprintf(f, sizeof(f), "questions[%d].label", qi);
        if (!json_is_integer(jl))
            return clef_err_input(err, m, rid, f,
                                  "must be an integer option index");
        json_int_t l = json_integer_value(jl);
        if (l < 0 || l >= n)
            return clef_err_input(err, m, rid, f,
                                  "label %lld is out of range [0, %d)",
                                  (long long)l, n);
    }
    if (jy) {
        snprintf(f, sizeof(f), "questions[%d].target", qi);
        if (!json_is_array(jy))
            return clef_err_input(err, m, rid, f, "must be a list of numbers");
        if ((int)json_array_size(jy) != n)
            return clef_err_input(err, m, rid, f,
                                  "has %d probabilities for %d options",
                                  (int)json_array_size(jy), n);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            json_t *a = json_array_get(jy, i);
            if (!json_is_number(a))
                return clef_err_input(err, m, rid, f,
                                      "entry %d is not a number", i);
            double y = json_number_value(a);
            if (!isfinite(y) || y < 0)
                return clef_err_input(err, m, rid, f,
                                      "entry %d is %g (probabilities are "
                                      "finite and >= 0)",
                                      i, y);
            sum += y;
        }
        if (fabs(sum - 1.0) > 1e-6)
            return clef_err_input(err, m, rid, f,
                                  "sums to %.9g, not 1 within 1e-6", sum);
    }
    *nopt = n;
    return 0;
}

// Fills the manifest half of record r (everything but the tensors).
static int parse_record(clef_package *pkg, int ri, json_t *jr, clef_record *r,
                        int *shard, clef_err *err)
{
    const char *m = pkg->manifest;
    char f[64];
    snprintf(f, sizeof(f), "records[%d]", ri);
    if (!json_is_object(jr))
        return clef_err_input(err, m, NULL, f, "must be an object");
    json_t *jid = json_object_get(jr, "id");
    snprintf(f, sizeof(f), "records[%d].id", ri);
    if (!json_is_string(jid))
        return clef_err_input(err, m, NULL, f, "missing or not a string");
    const char *rid = json_string_value(jid);
    if (!clef_package_id_ok(rid))
        return clef_err_input(err, m, NULL, f,
                              "\"%.160s\" does not match [A-Za-z0-9._-]{1,128}",
                              rid);
    if (!(r->id = xstrdup(rid)))
        return oom(err);
    json_t *js = json_object_get(jr, "split");
    if (!json_is_string(js))
        return clef_err_input(err, m, rid, "split", "missing or not a string");
    r->split = parse_split(json_string_value(js));
    if (r->split < 0)
        return clef_err_input(err, m, rid, "split",
                              "\"%s\" is not train, validation or test",
                              json_string_value(js));
    json_t *jsh = json_object_get(jr, "shard");
    if (!json_is_integer(jsh))
        return clef_err_input(err, m, rid, "shard",
                              "missing or not an integer");
    json_int_t sh = json_integer_value(jsh);
    if (sh < 0 || sh >= pkg->nshards)
        return clef_err_input(err, m, rid, "shard",
                              "shard index %lld is out of range [0, %d)",
                              (long long)sh, pkg->nshards);
    *shard = (int)sh;
    json_t *jqs = json_object_get(jr, "questions");
    if (!json_is_array(jqs) || json_array_size(jqs) == 0)
        return clef_err_input(err, m, rid, "questions",
                              "must be a non-empty list");
    int Q = (int)json_array_size(jqs);
    if (Q > (1 << 20))
        return clef_err_input(err, m, rid, "questions", "too many (%d)", Q);
    r->Q = Q;
    r->qtype = calloc((size_t)Q, sizeof(int));
    r->qspan = calloc((size_t)Q * 2, sizeof(int));
    r->opt_off = calloc((size_t)Q + 1, sizeof(int));
    r->has_target = calloc((size_t)Q, sizeof(int));
    r->label = calloc((size_t)Q, sizeof(int));
    r->qid = calloc((size_t)Q, sizeof(char *));
    if (!r->qtype || !r->qspan || !r->opt_off || !r->has_target || !r->label ||
        !r->qid)
        return oom(err);
    for (int q = 0; q < Q; q++) {
        json_t *jq = json_array_get(jqs, q);
        int n = 0;
        int rc = check_question(pkg, rid, r->split, q, jq, &n, err);
        if (rc)
            return rc;
        const char *qid = json_string_value(json_object_get(jq, "id"));
        for (int p = 0; p < q; p++)
            if (!strcmp(r->qid[p], qid)) {
                snprintf(f, sizeof(f), "questions[%d].id", q);
                return clef_err_input(err, m, rid, f,
                                      "question id \"%s\" appears twice in "
                                      "the record",
                                      qid);
            }
        if (!(r->qid[q] = xstrdup(qid)))
            return oom(err);
        r->qtype[q] =
            parse_qtype(json_string_value(json_object_get(jq, "type")));
        r->opt_off[q + 1] = r->opt_off[q] + n;
    }
    int O = r->opt_off[Q];
    r->O = O;
    r->ospan = calloc((size_t)O * 2, sizeof(int));
    r->target = calloc((size_t)O, sizeof(float));
    r->oid = calloc((size_t)O, sizeof(char *));
    if (!r->ospan || !r->target || !r->oid)
        return oom(err);
    for (int q = 0; q < Q; q++) {
        json_t *jq = json_array_get(jqs, q);
        json_t *jo = json_object_get(jq, "options");
        json_t *jl = json_object_get(jq, "label");
        json_t *jy = json_object_get(jq, "target");
        int o0 = r->opt_off[q], n = r->opt_off[q + 1] - o0;
        for (int i = 0; i < n; i++)
            if (!(r->oid[o0 + i] =
                      xstrdup(json_string_value(json_array_get(jo, i)))))
                return oom(err);
        r->label[q] = -1;
        r->has_target[q] = jl || jy;
        if (jl) {
            r->label[q] = (int)json_integer_value(jl);
            r->target[o0 + r->label[q]] = 1.0f;
        } else if (jy) {
            for (int i = 0; i < n; i++)
                r->target[o0 + i] =
                    (float)json_number_value(json_array_get(jy, i));
        }
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_unique_ids(clef_package *pkg, clef_err *err)
{
    int n = pkg->nrecords;
    const char **ids = malloc((size_t)n * sizeof(char *));
    if (!ids)
        return oom(err);
    for (int i = 0; i < n; i++)
        ids[i] = pkg->records[i].id;
    qsort(ids, (size_t)n, sizeof(char *), cmp_str);
    int rc = 0;
    for (int i = 1; i < n; i++)
        if (!strcmp(ids[i - 1], ids[i])) {
            rc = clef_err_input(err, pkg->manifest, ids[i], "id",
                                "record id appears more than once (record "
                                "ids are unique)");
            break;
        }
    free(ids);
    return rc;
}

// ------------------------------------------------------------ tensors --

static int check_finite(const char *file, const char *rid, const char *field,
                        const float *x, size_t rows, size_t cols, clef_err *err)
{
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(x[i]))
            return clef_err_input(err, file, rid, field,
                                  "non-finite value %g at [%zu, %zu] (every "
                                  "float must be finite)",
                                  x[i], i / cols, i % cols);
    return 0;
}

static int load_lexical(clef_package *pkg, clef_err *err)
{
    clef_st_file f;
    int rc = clef_st_open_pinned(pkg->lexical_path, pkg->lexical_sha256,
                                 "lexical.sha256", &f, err);
    if (rc)
        return rc;
    const char *p = pkg->lexical_path;
    const clef_st_tensor *t = clef_st_find(&f, "lexical");
    if (!t) {
        rc = clef_err_input(err, p, NULL, "lexical", "tensor is missing");
        goto done;
    }
    if (t->dtype != CLEF_DT_F32 && t->dtype != CLEF_DT_F16 &&
        t->dtype != CLEF_DT_BF16 && t->dtype != CLEF_DT_F64) {
        rc = clef_err_input(err, p, NULL, "lexical",
                            "dtype %s is not a float type",
                            dtype_name(t->dtype));
        goto done;
    }
    if (t->ndim != 2 || t->shape[0] < 1 || t->shape[1] != pkg->cfg.d) {
        rc = clef_err_input(err, p, NULL, "lexical",
                            "shape must be [V, %d] with V >= 1 (d = "
                            "head.hidden_size)",
                            pkg->cfg.d);
        goto done;
    }
    if (t->shape[0] > INT32_MAX) {
        rc = clef_err_input(err, p, NULL, "lexical", "too many rows");
        goto done;
    }
    pkg->V = (int)t->shape[0];
    pkg->E = malloc(t->numel * sizeof(float));
    if (!pkg->E) {
        rc = oom(err);
        goto done;
    }
    rc = clef_st_read_f32(&f, t, pkg->E, 0, err);
    if (!rc)
        rc = check_finite(p, NULL, "lexical", pkg->E, (size_t)pkg->V,
                          (size_t)pkg->cfg.d, err);
done:
    clef_st_close(&f);
    return rc;
}

// Finds <id>/<name>, checks dtype (I32) and shape [rows, cols] (cols 0: 1-D).
static int get_int_tensor(const clef_st_file *f, const char *rid,
                          const char *name, int64_t rows, int64_t cols,
                          int **out, clef_err *err)
{
    char full[CLEF_RECORD_ID_MAX + 32];
    snprintf(full, sizeof(full), "%s/%s", rid, name);
    const clef_st_tensor *t = clef_st_find(f, full);
    if (!t)
        return clef_err_input(err, f->path, rid, name,
                              "tensor %s is missing from the shard", full);
    if (t->dtype != CLEF_DT_I32)
        return clef_err_input(err, f->path, rid, name, "dtype %s, must be I32",
                              dtype_name(t->dtype));
    int ok = cols ? (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols)
                  : (t->ndim == 1 && t->shape[0] == rows);
    if (!ok) {
        char shp[96] = "";
        size_t n = 0;
        for (int i = 0; i < t->ndim && n < sizeof(shp); i++)
            n += snprintf(shp + n, sizeof(shp) - n, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        if (cols)
            return clef_err_input(err, f->path, rid, name,
                                  "shape [%s], must be [%lld, %lld]", shp,
                                  (long long)rows, (long long)cols);
        return clef_err_input(err, f->path, rid, name,
                              "shape [%s], must be [%lld] (T)", shp,
                              (long long)rows);
    }
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    *out = malloc((n ? n : 1) * sizeof(int));
    if (!*out)
        return oom(err);
    return clef_st_read_i32(f, t, (int32_t *)*out, err);
}

static int check_spans(const char *file, const char *rid, const char *field,
                       const int *s, int n, int T, clef_err *err)
{
    for (int i = 0; i < n; i++) {
        int a = s[2 * i], b = s[2 * i + 1];
        if (a < 0 || b > T)
            return clef_err_input(err, file, rid, field,
                                  "row %d [%d, %d) is out of range "
                                  "(0 <= start < end <= T = %d)",
                                  i, a, b, T);
        if (a >= b)
            return clef_err_input(err, file, rid, field,
                                  "row %d [%d, %d): start >= end (spans are "
                                  "half-open, start < end)",
                                  i, a, b);
    }
    return 0;
}

// Record r's hidden states t (T, d) into r->H as float, every value finite.
static int load_f32_hidden(const clef_st_file *f, const clef_st_tensor *t,
                           clef_record *r, clef_err *err)
{
    r->H = malloc((size_t)r->T * r->d * sizeof(float));
    if (!r->H)
        return oom(err);
    int rc = clef_st_read_f32(f, t, r->H, 0, err);
    if (rc)
        return rc;
    return check_finite(f->path, r->id, "hidden", r->H, (size_t)r->T,
                        (size_t)r->d, err);
}

// The same kept as the file's F16 or BF16 bits in r->Hh: a value is
// finite unless its exponent bits are all ones.
static int load_half_hidden(const clef_st_file *f, const clef_st_tensor *t,
                            clef_record *r, clef_err *err)
{
    const size_t n = (size_t)r->T * r->d;
    const int f16 = t->dtype == CLEF_DT_F16;
    const uint16_t emask = f16 ? 0x7c00 : 0x7f80;
    r->Hh = malloc(sizeof(uint16_t) * n);
    if (!r->Hh)
        return oom(err);
    r->Hh_f16 = f16;
    memcpy(r->Hh, f->bytes + f->data_start + t->begin, sizeof(uint16_t) * n);
    for (size_t i = 0; i < n; i++)
        if ((r->Hh[i] & emask) == emask)
            return clef_err_input(err, f->path, r->id, "hidden",
                                  "non-finite value %g at [%zu, %zu] (every "
                                  "float must be finite)",
                                  f16 ? clef_f16_to_f32(r->Hh[i])
                                      : clef_bf16_to_f32(r->Hh[i]),
                                  i / r->d, i % r->d);
    return 0;
}

static int load_record_tensors(clef_package *pkg, const clef_st_file *f,
                               clef_record *r, clef_err *err)
{
    const char *rid = r->id;
    const int d = pkg->cfg.d;
    char full[CLEF_RECORD_ID_MAX + 32];
    snprintf(full, sizeof(full), "%s/hidden", rid);
    const clef_st_tensor *t = clef_st_find(f, full);
    if (!t)
        return clef_err_input(err, f->path, rid, "hidden",
                              "tensor %s is missing from the shard", full);
    if (t->dtype != CLEF_DT_F32 && t->dtype != CLEF_DT_F16 &&
        t->dtype != CLEF_DT_BF16)
        return clef_err_input(err, f->path, rid, "hidden",
                              "dtype %s, must be F32, F16 or BF16",
                              dtype_name(t->dtype));
    if (t->ndim != 2)
        return clef_err_input(err, f->path, rid, "hidden",
                              "has %d dimensions, must be [T, d]", t->ndim);
    if (t->shape[1] != d)
        return clef_err_input(err, f->path, rid, "hidden",
                              "width %lld, must be d = head.hidden_size = %d",
                              (long long)t->shape[1], d);
    if (t->shape[0] < 1 || t->shape[0] > (1 << 24))
        return clef_err_input(err, f->path, rid, "hidden",
                              "T = %lld is out of range [1, 2^24]",
                              (long long)t->shape[0]);
    int T = (int)t->shape[0];
    r->T = T;
    r->d = d;
    int rc;
    if (pkg->half_hidden && t->dtype != CLEF_DT_F32)
        rc = load_half_hidden(f, t, r, err);
    else
        rc = load_f32_hidden(f, t, r, err);
    if (rc)
        return rc;

    rc = get_int_tensor(f, rid, "input_ids", T, 0, &r->ids, err);
    if (rc)
        return rc;
    for (int i = 0; i < T; i++)
        if (r->ids[i] < 0 || r->ids[i] >= pkg->V)
            return clef_err_input(err, f->path, rid, "input_ids",
                                  "id %d at position %d is out of range "
                                  "[0, V = %d) of the lexical table",
                                  r->ids[i], i, pkg->V);
    int *qs = NULL, *os = NULL;
    rc = get_int_tensor(f, rid, "question_spans", r->Q, 2, &qs, err);
    if (!rc)
        rc = check_spans(f->path, rid, "question_spans", qs, r->Q, T, err);
    if (!rc)
        memcpy(r->qspan, qs, (size_t)r->Q * 2 * sizeof(int));
    free(qs);
    if (rc)
        return rc;
    rc = get_int_tensor(f, rid, "option_spans", r->O, 2, &os, err);
    if (!rc)
        rc = check_spans(f->path, rid, "option_spans", os, r->O, T, err);
    if (!rc)
        memcpy(r->ospan, os, (size_t)r->O * 2 * sizeof(int));
    free(os);
    return rc;
}

// ----------------------------------------------------------- the loader --

static int check_init_weights(clef_package *pkg, clef_err *err)
{
    clef_head hd;
    memset(&hd, 0, sizeof(hd));
    int rc = clef_weights_load_pinned(pkg->init_path, pkg->init_sha256,
                                      "initial_weights.sha256", pkg->cfg.h, &hd,
                                      err);
    if (rc)
        return rc;
    if (memcmp(&hd.cfg, &pkg->cfg, sizeof(clef_config)) != 0)
        rc = clef_err_input(err, pkg->init_path, NULL, "head",
                            "configuration (d %d, w %d, h %d, f %d, R %d, "
                            "L %d) differs from the manifest's head (d %d, "
                            "w %d, h %d, f %d, R %d, L %d)",
                            hd.cfg.d, hd.cfg.w, hd.cfg.h, hd.cfg.f, hd.cfg.R,
                            hd.cfg.L, pkg->cfg.d, pkg->cfg.w, pkg->cfg.h,
                            pkg->cfg.f, pkg->cfg.R, pkg->cfg.L);
    clef_head_free(&hd);
    return rc;
}

static int load_manifest(clef_package *pkg, json_t *root, clef_err *err)
{
    const char *m = pkg->manifest;
    if (!json_is_object(root))
        return clef_err_input(err, m, NULL, NULL,
                              "the manifest is not a JSON "
                              "object");
    json_t *jf = json_object_get(root, "format");
    if (!json_is_string(jf) ||
        strcmp(json_string_value(jf), CLEF_PACKAGE_FORMAT) != 0)
        return clef_err_input(err, m, NULL, "format",
                              "must be \"" CLEF_PACKAGE_FORMAT "\"");
    int rc = parse_head(pkg, json_object_get(root, "head"), err);
    if (rc)
        return rc;
    json_t *jp = json_object_get(root, "provenance");
    if (jp) {
        if (!json_is_object(jp))
            return clef_err_input(err, m, NULL, "provenance",
                                  "must be an object of strings");
        const char *key;
        json_t *val;
        json_object_foreach (jp, key, val)
            if (!json_is_string(val))
                return clef_err_input(err, m, NULL, "provenance",
                                      "\"%s\" is not a string", key);
        pkg->provenance = json_dumps(jp, JSON_COMPACT | JSON_SORT_KEYS);
        if (!pkg->provenance)
            return oom(err);
    }
    // shards first: records refer to them by index
    json_t *jsh = json_object_get(root, "shards");
    if (!json_is_array(jsh) || json_array_size(jsh) == 0)
        return clef_err_input(err, m, NULL, "shards",
                              "must be a non-empty list");
    pkg->nshards = (int)json_array_size(jsh);
    pkg->shard_paths = calloc((size_t)pkg->nshards, sizeof(char *));
    pkg->shard_sha256 = calloc((size_t)pkg->nshards, CLEF_SHA256_HEX);
    if (!pkg->shard_paths || !pkg->shard_sha256)
        return oom(err);
    json_t *jr = json_object_get(root, "records");
    if (!json_is_array(jr) || json_array_size(jr) == 0)
        return clef_err_input(err, m, NULL, "records",
                              "must be a non-empty list");
    int n = (int)json_array_size(jr);
    pkg->records = calloc((size_t)n, sizeof(clef_record));
    pkg->record_shard = calloc((size_t)n, sizeof(int));
    if (!pkg->records || !pkg->record_shard)
        return oom(err);
    for (int i = 0; i < n; i++) {
        pkg->nrecords = i + 1;
        rc = parse_record(pkg, i, json_array_get(jr, i), &pkg->records[i],
                          &pkg->record_shard[i], err);
        if (rc)
            return rc;
        pkg->nsplit[pkg->records[i].split]++;
    }
    rc = check_unique_ids(pkg, err);
    if (rc)
        return rc;
    // files: path rule and SHA-256 of each
    rc = check_file_entry(pkg, json_object_get(root, "lexical"), "lexical",
                          &pkg->lexical_path, pkg->lexical_sha256, err);
    if (rc)
        return rc;
    json_t *ji = json_object_get(root, "initial_weights");
    if (ji && !json_is_null(ji)) {
        rc = check_file_entry(pkg, ji, "initial_weights", &pkg->init_path,
                              pkg->init_sha256, err);
        if (rc)
            return rc;
    }
    for (int s = 0; s < pkg->nshards; s++) {
        char f[32];
        snprintf(f, sizeof(f), "shards[%d]", s);
        rc = check_file_entry(pkg, json_array_get(jsh, s), f,
                              &pkg->shard_paths[s], pkg->shard_sha256[s], err);
        if (rc)
            return rc;
    }
    return 0;
}

static int load_shards(clef_package *pkg, clef_err *err)
{
    for (int s = 0; s < pkg->nshards; s++) {
        clef_st_file f;
        char field[48];
        snprintf(field, sizeof(field), "shards[%d].sha256", s);
        int rc = clef_st_open_pinned(pkg->shard_paths[s], pkg->shard_sha256[s],
                                     field, &f, err);
        if (rc)
            return rc;
        for (int i = 0; i < pkg->nrecords && !rc; i++)
            if (pkg->record_shard[i] == s)
                rc = load_record_tensors(pkg, &f, &pkg->records[i], err);
        clef_st_close(&f);
        if (rc)
            return rc;
    }
    return 0;
}

// Largest T, Q and O over the records: workspaces are sized from them.
static void record_geometry(clef_package *pkg)
{
    for (int i = 0; i < pkg->nrecords; i++) {
        const clef_record *r = &pkg->records[i];
        if (r->T > pkg->Tmax)
            pkg->Tmax = r->T;
        if (r->Q > pkg->Qmax)
            pkg->Qmax = r->Q;
        if (r->O > pkg->Omax)
            pkg->Omax = r->O;
    }
}

static int package_read(const char *manifest_path, const char *pin_sha256,
                        int half, clef_package *pkg, clef_err *err)
{
    memset(pkg, 0, sizeof(*pkg));
    pkg->half_hidden = half;
    uint8_t *bytes = NULL;
    size_t size = 0;
    json_t *root = NULL;
    int rc;
    pkg->manifest = xstrdup(manifest_path);
    pkg->dir = dir_of(manifest_path);
    if (!pkg->manifest || !pkg->dir) {
        rc = oom(err);
        goto fail;
    }
    rc = clef_file_read(manifest_path, CLEF_MANIFEST_MAX, &bytes, &size, err);
    if (rc)
        goto fail;
    if (clef_sha256_hex(bytes, size, pkg->sha256)) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "SHA-256 failed");
        goto fail;
    }
    if (pin_sha256 && !clef_sha256_equal(pin_sha256, pkg->sha256)) {
        rc = clef_err_input(err, manifest_path, NULL, "--package-sha256",
                            "the manifest's SHA-256 is %s, not the pinned %s",
                            pkg->sha256, pin_sha256);
        goto fail;
    }
    json_error_t je;
    root = json_loadb((const char *)bytes, size, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        rc = clef_err_input(err, manifest_path, NULL, NULL,
                            "invalid JSON at line %d column %d: %s", je.line,
                            je.column, je.text);
        goto fail;
    }
    rc = load_manifest(pkg, root, err);
    if (rc)
        goto fail;
    rc = load_lexical(pkg, err);
    if (rc)
        goto fail;
    if (pkg->init_path && (rc = check_init_weights(pkg, err)))
        goto fail;
    rc = load_shards(pkg, err);
    if (rc)
        goto fail;
    record_geometry(pkg);
    json_decref(root);
    free(bytes);
    return 0;
fail:
    if (root)
        json_decref(root);
    free(bytes);
    clef_package_free(pkg);
    return rc ? rc : CLEF_ERR_INPUT;
}

int clef_package_read(const char *manifest_path, const char *pin_sha256,
                      clef_package *pkg, clef_err *err)
{
    return package_read(manifest_path, pin_sha256, 0, pkg, err);
}

int clef_package_read_half(const char *manifest_path, const char *pin_sha256,
                           clef_package *pkg, clef_err *err)
{
    return package_read(manifest_path, pin_sha256, 1, pkg, err);
}

int clef_package_prepare_bf16(clef_package *pkg, const clef_kernels *k,
                              clef_err *err)
{
    pkg->prepared = 0;
    for (int i = 0; i < pkg->nrecords; i++) {
        clef_record *r = &pkg->records[i];
        int rc = clef_record_prepare(k, r, pkg->E, pkg->V, err);
        if (rc)
            return rc;
        if (clef_record_keep_bf16(k, r))
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    }
    pkg->prepared = 1;
    return 0;
}

int clef_package_prepare(clef_package *pkg, const clef_kernels *k,
                         clef_err *err)
{
    pkg->prepared = 0;
    for (int i = 0; i < pkg->nrecords; i++) {
        int rc = clef_record_prepare(k, &pkg->records[i], pkg->E, pkg->V, err);
        if (rc)
            return rc;
    }
    pkg->prepared = 1;
    return 0;
}

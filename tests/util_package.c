// Test helpers for packages and the clef binary: see util_package.h.
#define _XOPEN_SOURCE 700
#include "util_package.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "sha256.h"

char *tp_tmpdir(void)
{
    char tmpl[] = "/tmp/clef-test-XXXXXX";
    if (!mkdtemp(tmpl))
        return NULL;
    return strdup(tmpl);
}

void tp_rmdir(char *dir)
{
    if (dir && !strncmp(dir, "/tmp/clef-test-", 15) && !strchr(dir, '\'')) {
        char cmd[1100];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", dir);
    }
    free(dir);
}

int tp_clef(const char *dir, const char *fmt, ...)
{
    char args[3072], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "%s/clef %s >%s/out 2>%s/err", CLEF_BIN_DIR,
             args, dir, dir);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

const char *tp_err(const char *dir)
{
    static char buf[8192];
    char path[1100];
    snprintf(path, sizeof(path), "%s/err", dir);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

int tp_same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = tp_slurp(a, &na), *y = tp_slurp(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

json_t *tp_load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

char *tp_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[sz] = '\0';
        if (n)
            *n = (size_t)sz;
    }
    return b;
}

int tp_write(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(bytes, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

int tp_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int write_with_header(const char *path, json_t *hdr, const uint8_t *data,
                             size_t ndata)
{
    char *h = json_dumps(hdr, JSON_COMPACT);
    if (!h)
        return -1;
    uint64_t hn = strlen(h);
    size_t total = 8 + hn + ndata;
    uint8_t *buf = malloc(total);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(hn >> (8 * i));
    memcpy(buf + 8, h, hn);
    if (ndata)
        memcpy(buf + 8 + hn, data, ndata);
    int rc = tp_write(path, buf, total);
    free(buf);
    free(h);
    return rc;
}

int tp_st_write(const char *path, const tp_tensor *t, int n)
{
    json_t *hdr = json_object();
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        json_t *shape = json_array();
        for (int j = 0; j < t[i].ndim; j++)
            json_array_append_new(shape, json_integer(t[i].shape[j]));
        json_object_set_new(hdr, t[i].name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype",
                                      t[i].dtype, "shape", shape,
                                      "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + t[i].nbytes)));
        off += t[i].nbytes;
    }
    uint8_t *data = malloc(off ? off : 1);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        memcpy(data + k, t[i].data, t[i].nbytes);
        k += t[i].nbytes;
    }
    int rc = write_with_header(path, hdr, data, off);
    free(data);
    json_decref(hdr);
    return rc;
}

static json_t *read_header(const uint8_t *b, size_t n, size_t *data_start)
{
    if (n < 8)
        return NULL;
    uint64_t hn = 0;
    for (int i = 0; i < 8; i++)
        hn |= (uint64_t)b[i] << (8 * i);
    if (hn > n - 8)
        return NULL;
    *data_start = 8 + hn;
    return json_loadb((const char *)b + 8, hn, 0, NULL);
}

int tp_st_locate(const uint8_t *bytes, size_t n, const char *name,
                 size_t *begin, size_t *end)
{
    size_t ds;
    json_t *h = read_header(bytes, n, &ds);
    json_t *off =
        h ? json_object_get(json_object_get(h, name), "data_offsets") : NULL;
    int rc = -1;
    if (off) {
        *begin = ds + (size_t)json_integer_value(json_array_get(off, 0));
        *end = ds + (size_t)json_integer_value(json_array_get(off, 1));
        rc = 0;
    }
    json_decref(h);
    return rc;
}

int tp_st_edit_header(const char *path, void (*edit)(json_t *hdr))
{
    size_t n, ds;
    uint8_t *b = (uint8_t *)tp_slurp(path, &n);
    if (!b)
        return -1;
    json_t *h = read_header(b, n, &ds);
    int rc = -1;
    if (h) {
        edit(h);
        rc = write_with_header(path, h, b + ds, n - ds);
        json_decref(h);
    }
    free(b);
    return rc;
}

json_t *tp_manifest_load(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/package.json", dir);
    return json_load_file(path, 0, NULL);
}

static void rehash(const char *dir, json_t *entry)
{
    const char *f = json_string_value(json_object_get(entry, "file"));
    char path[4096], hex[CLEF_SHA256_HEX];
    if (!f)
        return;
    snprintf(path, sizeof(path), "%s/%s", dir, f);
    if (clef_sha256_file(path, hex, NULL) == 0)
        json_object_set_new(entry, "sha256", json_string(hex));
}

int tp_manifest_save(const char *dir, json_t *m)
{
    rehash(dir, json_object_get(m, "lexical"));
    if (json_object_get(m, "initial_weights"))
        rehash(dir, json_object_get(m, "initial_weights"));
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(m, "shards"), i, e)
        rehash(dir, e);
    char path[4096];
    snprintf(path, sizeof(path), "%s/package.json", dir);
    return json_dump_file(m, path, JSON_INDENT(1));
}

uint16_t tp_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

uint16_t tp_f32_to_f16(float f)
{
    // test data stays in the normal range: |f| in [2^-14, 65504] or 0
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int e = (int)((u >> 23) & 0xFF) - 127 + 15;
    uint32_t m = u & 0x7FFFFF;
    if (e <= 0)
        return (uint16_t)sign;
    uint32_t h = ((uint32_t)e << 10) | (m >> 13);
    uint32_t rest = m & 0x1FFF;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

// ---- the mixed package ----

typedef struct mix_rec {
    const char *id, *split;
    int shard, T, Q;
    int nopt[3];
    const char *dtype; // hidden
} mix_rec;

static const mix_rec MIX[6] = {
    {"m-0", "train", 0, 5, 1, {2}, "F32"},
    {"m-1", "train", 0, 9, 3, {2, 3, 2}, "F16"},
    {"m-2", "train", 1, 12, 2, {4, 1}, "BF16"},
    {"m-3", "train", 1, 5, 1, {2}, "F32"},
    {"m-4", "validation", 0, 7, 2, {3, 2}, "F32"},
    {"m-5", "test", 1, 6, 2, {2, 2}, "F32"},
};

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static float unit_normalish(uint64_t *s)
{
    // sum of 4 uniforms, centred: a cheap bell shape in (-2, 2)
    float x = 0;
    for (int i = 0; i < 4; i++)
        x += (float)(lcg(s) % 100000) / 100000.0f;
    return x - 2.0f;
}

static json_t *mix_questions(const mix_rec *r, int k)
{
    static const char *types[3] = {"noul", "score", "choice"};
    json_t *qs = json_array();
    for (int q = 0; q < r->Q; q++) {
        int n = r->nopt[q];
        const char *type = n == 2 && q == 0 ? types[0]
                           : n >= 3         ? types[1]
                                            : types[2];
        json_t *opts = json_array();
        for (int i = 0; i < n; i++) {
            char id[16];
            snprintf(id, sizeof(id), "opt%d", i);
            json_array_append_new(opts, json_string(id));
        }
        json_t *jq = json_pack("{s:s, s:s, s:o}", "id", q ? "later" : "first",
                               "type", type, "options", opts);
        if (q == 2)
            json_object_set_new(jq, "id", json_string("third"));
        if (!strcmp(r->split, "test") && q == 1) {
            // a test question without label or target
        } else if (n == 2 && q == 1) {
            json_object_set_new(jq, "target", json_pack("[f, f]", 0.25, 0.75));
        } else {
            json_object_set_new(jq, "label", json_integer((k + q) % n));
        }
        json_array_append_new(qs, jq);
    }
    return qs;
}

int tp_write_mixed_package(const char *dir)
{
    const int d = 8, V = 10;
    uint64_t s = 12345;
    char path[4096];
    float E[10 * 8];
    for (int i = 0; i < V * d; i++)
        E[i] = unit_normalish(&s);
    tp_tensor lex = {"lexical", "F32", 2, {V, d}, E, sizeof(E)};
    snprintf(path, sizeof(path), "%s/lexical.safetensors", dir);
    if (tp_st_write(path, &lex, 1))
        return -1;
    json_t *records = json_array();
    for (int shard = 0; shard < 2; shard++) {
        tp_tensor t[6 * 4];
        void *bufs[6 * 4];
        char names[6 * 4][64];
        int nt = 0;
        for (int k = 0; k < 6; k++) {
            const mix_rec *r = &MIX[k];
            if (r->shard != shard)
                continue;
            int T = r->T, O = 0;
            for (int q = 0; q < r->Q; q++)
                O += r->nopt[q];
            int hsize = !strcmp(r->dtype, "F32") ? 4 : 2;
            uint8_t *H = malloc((size_t)T * d * hsize);
            for (int i = 0; i < T * d; i++) {
                float x = unit_normalish(&s);
                if (hsize == 4) {
                    memcpy(H + 4 * i, &x, 4);
                } else {
                    uint16_t h = !strcmp(r->dtype, "F16") ? tp_f32_to_f16(x)
                                                          : tp_f32_to_bf16(x);
                    memcpy(H + 2 * i, &h, 2);
                }
            }
            int32_t *ids = malloc((size_t)T * 4);
            for (int i = 0; i < T; i++)
                ids[i] = (int32_t)(lcg(&s) % V);
            int32_t *qs = malloc((size_t)r->Q * 8), *os = malloc((size_t)O * 8);
            for (int q = 0; q < r->Q; q++) {
                qs[2 * q] = q % T;
                qs[2 * q + 1] = q % T + 1 + (q == 0 && T > 3);
            }
            for (int o = 0; o < O; o++) {
                os[2 * o] = (r->Q + o) % (T - 1);
                os[2 * o + 1] = os[2 * o] + 1;
            }
            void *data[4] = {H, ids, qs, os};
            const char *suffix[4] = {"hidden", "input_ids", "question_spans",
                                     "option_spans"};
            size_t nbytes[4] = {(size_t)T * d * hsize, (size_t)T * 4,
                                (size_t)r->Q * 8, (size_t)O * 8};
            for (int j = 0; j < 4; j++) {
                snprintf(names[nt], sizeof(names[nt]), "%s/%s", r->id,
                         suffix[j]);
                t[nt] = (tp_tensor){names[nt],      j ? "I32" : r->dtype,
                                    j == 1 ? 1 : 2, {0},
                                    data[j],        nbytes[j]};
                t[nt].shape[0] = j == 0 ? T : j == 1 ? T : j == 2 ? r->Q : O;
                t[nt].shape[1] = j == 0 ? d : 2;
                bufs[nt] = data[j];
                nt++;
            }
        }
        snprintf(path, sizeof(path), "%s/records-%03d.safetensors", dir, shard);
        int rc = tp_st_write(path, t, nt);
        for (int i = 0; i < nt; i++)
            free(bufs[i]);
        if (rc)
            return -1;
    }
    for (int k = 0; k < 6; k++)
        json_array_append_new(
            records, json_pack("{s:s, s:s, s:i, s:o}", "id", MIX[k].id, "split",
                               MIX[k].split, "shard", MIX[k].shard, "questions",
                               mix_questions(&MIX[k], k)));
    json_t *m = json_pack(
        "{s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i}, s:{s:s}, s:{s:s, s:s},"
        " s:[{s:s, s:s}, {s:s, s:s}], s:o}",
        "format", "clef-package/1", "head", "hidden_size", d, "width", 8,
        "heads", 2, "feedforward", 16, "routing_layers", 1, "layers", 1,
        "provenance", "backbone", "test: mixed geometry", "lexical", "file",
        "lexical.safetensors", "sha256", "", "shards", "file",
        "records-000.safetensors", "sha256", "", "file",
        "records-001.safetensors", "sha256", "", "records", records);
    int rc = tp_manifest_save(dir, m);
    json_decref(m);
    return rc;
}

// ---- the broken catalogue ----

int tp_fixture(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "%s/clef fixture --out %s >/dev/null",
             CLEF_BIN_DIR, dir);
    return system(cmd) == 0 ? 0 : -1;
}

char *tp_path(const char *dir, const char *name)
{
    static char pool[64][1100];
    static int used;
    cr_assert_lt(used, 64, "tp_path pool exhausted");
    int n = snprintf(pool[used], sizeof(pool[0]), "%s/%s", dir, name);
    cr_assert_lt(n, (int)sizeof(pool[0]), "path too long");
    return pool[used++];
}

char *tp_fixture_in(const char *dir)
{
    char *pkg = tp_path(dir, "pkg");
    cr_assert_eq(tp_fixture(pkg), 0, "clef fixture --out %s failed", pkg);
    return pkg;
}

int tp_copy_dir(const char *src, const char *dst)
{
    char cmd[8400];
    snprintf(cmd, sizeof(cmd), "cp -R '%s' '%s'", src, dst);
    return system(cmd) == 0 ? 0 : -1;
}

// Manifest edits: load, change, save with fresh hashes.
#define MANIFEST_EDIT(fn, body)                                                \
    static int fn(const char *dir)                                             \
    {                                                                          \
        json_t *m = tp_manifest_load(dir);                                     \
        if (!m)                                                                \
            return -1;                                                         \
        json_t *recs = json_object_get(m, "records");                          \
        (void)recs;                                                            \
        body;                                                                  \
        int rc = tp_manifest_save(dir, m);                                     \
        json_decref(m);                                                        \
        return rc;                                                             \
    }
#define Q(r, q)                                                                \
    json_array_get(json_object_get(json_array_get(recs, r), "questions"), q)

MANIFEST_EDIT(mk_dotdot, json_object_set_new(
                             json_array_get(json_object_get(m, "shards"), 0),
                             "file", json_string("../records-000.safetensors")))
MANIFEST_EDIT(mk_absolute,
              json_object_set_new(json_object_get(m, "lexical"), "file",
                                  json_string("/etc/hostname")))
MANIFEST_EDIT(mk_label_range,
              json_object_set_new(Q(1, 0), "label", json_integer(2)))
MANIFEST_EDIT(mk_target_sum, json_object_del(Q(0, 0), "label");
              json_object_set_new(Q(0, 0), "target",
                                  json_pack("[f, f]", 0.5, 0.6)))
MANIFEST_EDIT(mk_target_negative, json_object_del(Q(0, 0), "label");
              json_object_set_new(Q(0, 0), "target",
                                  json_pack("[f, f]", 1.5, -0.5)))
MANIFEST_EDIT(mk_target_length, json_object_del(Q(0, 0), "label");
              json_object_set_new(Q(0, 0), "target", json_pack("[f]", 1.0)))
MANIFEST_EDIT(mk_both, json_object_set_new(Q(0, 0), "target",
                                           json_pack("[f, f]", 0.5, 0.5)))
MANIFEST_EDIT(mk_dup_id, json_object_set_new(json_array_get(recs, 2), "id",
                                             json_string("record-0")))
MANIFEST_EDIT(mk_bad_id, json_object_set_new(json_array_get(recs, 1), "id",
                                             json_string("record 1")))
MANIFEST_EDIT(mk_qtype,
              json_object_set_new(Q(0, 0), "type", json_string("multiple")))
MANIFEST_EDIT(mk_noul,
              json_object_set_new(Q(2, 1), "type", json_string("noul")))
MANIFEST_EDIT(mk_format,
              json_object_set_new(m, "format", json_string("clef-package/2")))
MANIFEST_EDIT(mk_split, json_object_set_new(json_array_get(recs, 1), "split",
                                            json_string("dev")))
MANIFEST_EDIT(mk_shard_index, json_object_set_new(json_array_get(recs, 0),
                                                  "shard", json_integer(3)))
MANIFEST_EDIT(mk_no_label, json_object_del(Q(1, 1), "label"))
MANIFEST_EDIT(mk_empty_options,
              json_object_set_new(Q(0, 1), "options", json_array()))
MANIFEST_EDIT(mk_dup_option,
              json_object_set_new(Q(0, 0), "options",
                                  json_pack("[s, s]", "read", "read")))
MANIFEST_EDIT(mk_extra_option,
              json_object_set_new(Q(0, 1), "options",
                                  json_pack("[s, s]", "normal", "fast")))
MANIFEST_EDIT(mk_heads, json_object_set_new(json_object_get(m, "head"), "heads",
                                            json_integer(3)))
MANIFEST_EDIT(mk_init_mismatch,
              json_object_set_new(json_object_get(m, "head"), "feedforward",
                                  json_integer(32)))
// Writes the manifest as it is (no re-hashing).
static int dump_manifest(const char *dir, json_t *m)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/package.json", dir);
    int rc = json_dump_file(m, path, JSON_INDENT(1));
    json_decref(m);
    return rc;
}
MANIFEST_EDIT(mk_dropout_range, json_object_set_new(json_object_get(m, "head"),
                                                    "dropout", json_real(1.0)))
MANIFEST_EDIT(mk_dropout_type,
              json_object_set_new(json_object_get(m, "head"), "dropout",
                                  json_string("0.1")))

static int mk_bad_json_hash(const char *dir)
{
    json_t *m = tp_manifest_load(dir);
    json_object_set_new(json_object_get(m, "lexical"), "sha256",
                        json_string("xyz"));
    return dump_manifest(dir, m);
}

static int mk_shard_hash(const char *dir)
{
    json_t *m = tp_manifest_load(dir);
    json_object_set_new(json_array_get(json_object_get(m, "shards"), 0),
                        "sha256",
                        json_string("00000000000000000000000000000000"
                                    "00000000000000000000000000000000"));
    return dump_manifest(dir, m);
}

static int resave(const char *dir)
{
    json_t *m = tp_manifest_load(dir);
    int rc = m ? tp_manifest_save(dir, m) : -1;
    json_decref(m);
    return rc;
}

static int mk_missing_shard(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/records-000.safetensors", dir);
    return unlink(path);
}

// Overwrites bytes of tensor `name` at element index i (elem bytes each).
static int poke(const char *dir, const char *file, const char *name, size_t i,
                const void *val, size_t elem)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    size_t n, b, e;
    uint8_t *bytes = (uint8_t *)tp_slurp(path, &n);
    if (!bytes || tp_st_locate(bytes, n, name, &b, &e) ||
        b + (i + 1) * elem > e) {
        free(bytes);
        return -1;
    }
    memcpy(bytes + b + i * elem, val, elem);
    int rc = tp_write(path, bytes, n);
    free(bytes);
    return rc ? rc : resave(dir);
}

static int poke_i32(const char *dir, const char *name, size_t i, int32_t v)
{
    return poke(dir, "records-000.safetensors", name, i, &v, 4);
}

static int mk_span_range(const char *dir)
{
    return poke_i32(dir, "record-0/option_spans", 1, 7);
}
static int mk_span_order(const char *dir)
{
    return poke_i32(dir, "record-0/question_spans", 2, 3) ||
           poke_i32(dir, "record-0/question_spans", 3, 3);
}
static int mk_span_negative(const char *dir)
{
    return poke_i32(dir, "record-1/question_spans", 0, -1);
}
static int mk_id_range(const char *dir)
{
    return poke_i32(dir, "record-0/input_ids", 2, 16);
}
static int mk_nan(const char *dir)
{
    float v = NAN;
    return poke(dir, "records-000.safetensors", "record-1/hidden", 3, &v, 4);
}
static int mk_inf(const char *dir)
{
    float v = INFINITY;
    return poke(dir, "records-000.safetensors", "record-2/hidden", 47, &v, 4);
}
static int mk_lexical_nan(const char *dir)
{
    float v = NAN;
    return poke(dir, "lexical.safetensors", "lexical", 0, &v, 4);
}

static const char *edit_name; // the tensor a header edit targets
static void ed_width(json_t *h)
{
    json_object_set_new(json_object_get(h, edit_name), "shape",
                        json_pack("[i, i]", 12, 4));
}
static void ed_dtype(json_t *h)
{
    json_object_set_new(json_object_get(h, edit_name), "dtype",
                        json_string("F32"));
}
static void ed_rename(json_t *h)
{
    json_t *t = json_object_get(h, edit_name);
    json_object_set(h, "record-9/option_spans", t);
    json_object_del(h, edit_name);
}
static void ed_overlap(json_t *h)
{
    // input_ids (24 bytes) moved onto the first bytes of hidden
    json_t *hid =
        json_object_get(json_object_get(h, "record-0/hidden"), "data_offsets");
    json_int_t b = json_integer_value(json_array_get(hid, 0));
    json_object_set_new(json_object_get(h, "record-0/input_ids"),
                        "data_offsets", json_pack("[I, I]", b, b + 24));
}
static void ed_lex_shape(json_t *h)
{
    json_object_set_new(json_object_get(h, "lexical"), "shape",
                        json_pack("[i, i]", 32, 4));
}

static int header_edit(const char *dir, const char *file, const char *name,
                       void (*edit)(json_t *))
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    edit_name = name;
    return tp_st_edit_header(path, edit) || resave(dir);
}

static int mk_width(const char *dir)
{
    return header_edit(dir, "records-000.safetensors", "record-0/hidden",
                       ed_width);
}
static int mk_ids_dtype(const char *dir)
{
    return header_edit(dir, "records-000.safetensors", "record-1/input_ids",
                       ed_dtype);
}
static int mk_missing_tensor(const char *dir)
{
    return header_edit(dir, "records-000.safetensors", "record-2/option_spans",
                       ed_rename);
}
static int mk_overlap(const char *dir)
{
    return header_edit(dir, "records-000.safetensors", "record-0/input_ids",
                       ed_overlap);
}
static int mk_lex_shape(const char *dir)
{
    return header_edit(dir, "lexical.safetensors", "lexical", ed_lex_shape);
}

static int mk_truncated(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/records-000.safetensors", dir);
    size_t n;
    char *b = tp_slurp(path, &n);
    int rc = b ? tp_write(path, b, n - 12) : -1;
    free(b);
    return rc ? rc : resave(dir);
}

static int mk_header_past_end(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/records-000.safetensors", dir);
    size_t n;
    uint8_t *b = (uint8_t *)tp_slurp(path, &n);
    if (!b)
        return -1;
    uint64_t hn = (uint64_t)n + 100;
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(hn >> (8 * i));
    int rc = tp_write(path, b, n);
    free(b);
    return rc ? rc : resave(dir);
}

static int mk_nothing(const char *dir)
{
    (void)dir;
    return 0;
}

#define SH "records-000.safetensors"
#define PJ "package.json"
const tp_broken tp_broken_cases[] = {
    {"bad manifest hash",
     mk_nothing,
     "1111111111111111111111111111111111111111111111111111111111111111",
     {PJ, "--package-sha256", "SHA-256"}},
    {"bad shard hash",
     mk_shard_hash,
     NULL,
     {SH, "shards[0].sha256", "SHA-256"}},
    {"missing shard",
     mk_missing_shard,
     NULL,
     {PJ, "shards[0].file", "cannot open"}},
    {"path with ..", mk_dotdot, NULL, {PJ, "shards[0].file", "leaves"}},
    {"absolute path", mk_absolute, NULL, {PJ, "lexical.file", "leaves"}},
    {"malformed sha256",
     mk_bad_json_hash,
     NULL,
     {PJ, "lexical.sha256", "64 hexadecimal"}},
    {"span out of range",
     mk_span_range,
     NULL,
     {SH, "record record-0", "field option_spans", "out of range"}},
    {"span start >= end",
     mk_span_order,
     NULL,
     {SH, "record record-0", "field question_spans", "start >= end"}},
    {"span start < 0",
     mk_span_negative,
     NULL,
     {SH, "record record-1", "field question_spans", "out of range"}},
    {"label out of range",
     mk_label_range,
     NULL,
     {PJ, "record record-1", "questions[0].label", "out of range"}},
    {"target not summing to 1",
     mk_target_sum,
     NULL,
     {PJ, "record record-0", "questions[0].target", "sums to"}},
    {"target negative",
     mk_target_negative,
     NULL,
     {PJ, "record record-0", "questions[0].target", ">= 0"}},
    {"target length",
     mk_target_length,
     NULL,
     {PJ, "record record-0", "questions[0].target", "for 2 options"}},
    {"label and target",
     mk_both,
     NULL,
     {PJ, "record record-0", "questions[0]", "both label and target"}},
    {"NaN in hidden",
     mk_nan,
     NULL,
     {SH, "record record-1", "field hidden", "non-finite"}},
    {"Inf in hidden",
     mk_inf,
     NULL,
     {SH, "record record-2", "field hidden", "non-finite"}},
    {"NaN in lexical",
     mk_lexical_nan,
     NULL,
     {"lexical.safetensors", "field lexical", "non-finite"}},
    {"input id out of range",
     mk_id_range,
     NULL,
     {SH, "record record-0", "field input_ids", "out of range"}},
    {"duplicate record id",
     mk_dup_id,
     NULL,
     {PJ, "record record-0", "field id", "more than once"}},
    {"bad record id",
     mk_bad_id,
     NULL,
     {PJ, "records[1].id", "[A-Za-z0-9._-]{1,128}"}},
    {"wrong hidden width",
     mk_width,
     NULL,
     {SH, "record record-0", "field hidden", "head.hidden_size"}},
    {"input_ids dtype",
     mk_ids_dtype,
     NULL,
     {SH, "record record-1", "field input_ids", "must be I32"}},
    {"missing tensor",
     mk_missing_tensor,
     NULL,
     {SH, "record record-2", "field option_spans", "missing"}},
    {"option_spans rows != options",
     mk_extra_option,
     NULL,
     {SH, "record record-0", "field option_spans", "shape"}},
    {"lexical width",
     mk_lex_shape,
     NULL,
     {"lexical.safetensors", "field lexical", "[V, 8]"}},
    {"truncated safetensors", mk_truncated, NULL, {SH, "past"}},
    {"overlapping data offsets", mk_overlap, NULL, {SH, "overlap"}},
    {"header length past the end", mk_header_past_end, NULL, {SH, "header"}},
    {"unknown question type",
     mk_qtype,
     NULL,
     {PJ, "record record-0", "questions[0].type", "unknown question type"}},
    {"noul without two options",
     mk_noul,
     NULL,
     {PJ, "record record-2", "questions[1].options", "exactly two options"}},
    {"format string", mk_format, NULL, {PJ, "field format", "clef-package/1"}},
    {"unknown split",
     mk_split,
     NULL,
     {PJ, "record record-1", "field split", "train, validation or test"}},
    {"shard index out of range",
     mk_shard_index,
     NULL,
     {PJ, "record record-0", "field shard", "out of range"}},
    {"train question without label",
     mk_no_label,
     NULL,
     {PJ, "record record-1", "questions[1]", "neither label nor target"}},
    {"empty options",
     mk_empty_options,
     NULL,
     {PJ, "record record-0", "questions[1].options", "non-empty"}},
    {"duplicate option id",
     mk_dup_option,
     NULL,
     {PJ, "record record-0", "questions[0].options", "appears twice"}},
    {"heads not dividing width", mk_heads, NULL, {PJ, "head"}},
    {"dropout of 1",
     mk_dropout_range,
     NULL,
     {PJ, "head.dropout", "out of range [0, 1)"}},
    {"dropout not a number",
     mk_dropout_type,
     NULL,
     {PJ, "head.dropout", "not a number"}},
    {"initial weights of another head",
     mk_init_mismatch,
     NULL,
     {"init.safetensors", "differs"}},
};
const int tp_nbroken = sizeof(tp_broken_cases) / sizeof(tp_broken_cases[0]);

// safetensors read and write (FORMATS.md).
//
// File layout: u64 LE header length N | N bytes of JSON | data section.
// The JSON maps each tensor name to {"dtype", "shape", "data_offsets"} with
// offsets relative to the start of the data section, plus an optional
// "__metadata__" object of string -> string.
//
// Reading loads the whole file (size_t everywhere: files can be GBs) and
// validates every rule before anyone sees a tensor. Writing is atomic: a
// temporary file in the same folder, flushed and fsynced, then renamed.
#include "safetensors.h"

#include "file.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the format is LE)"
#endif

#define ST_MAX_HEADER ((uint64_t)100000000) // 100 MB

// ---- dtypes ----

static const struct {
    const char *name;
    clef_dtype dt;
    size_t size;
} st_dtypes[] = {
    {"F32", CLEF_DT_F32, 4}, {"F16", CLEF_DT_F16, 2}, {"BF16", CLEF_DT_BF16, 2},
    {"F64", CLEF_DT_F64, 8}, {"I32", CLEF_DT_I32, 4}, {"I64", CLEF_DT_I64, 8},
};
#define ST_NDTYPES ((int)(sizeof(st_dtypes) / sizeof(st_dtypes[0])))

static int st_dtype_parse(const char *s, clef_dtype *dt)
{
    for (int i = 0; i < ST_NDTYPES; i++) {
        if (strcmp(s, st_dtypes[i].name) == 0) {
            *dt = st_dtypes[i].dt;
            return 0;
        }
    }
    return -1;
}

static size_t st_dtype_size(clef_dtype dt)
{
    for (int i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dt == dt)
            return st_dtypes[i].size;
    return 0;
}

static const char *st_dtype_name(clef_dtype dt)
{
    for (int i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dt == dt)
            return st_dtypes[i].name;
    return "?";
}

// ---- half precision ----

// Exact: every f16 value is a float32 value (subnormals, Inf and NaN
// payloads included).
float clef_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) { // Inf or NaN: keep the payload
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) { // normal: rebias 15 -> 127
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) { // signed zero
        bits = sign;
    } else { // subnormal: mant * 2^-24, normalise
        int e = -1;
        do {
            mant <<= 1;
            e++;
        } while ((mant & 0x400u) == 0);
        mant &= 0x3ffu;
        bits = sign | ((uint32_t)(112 - e) << 23) | (mant << 13);
    }
    float x;
    memcpy(&x, &bits, sizeof(x));
    return x;
}

// ---- reading ----

static char *st_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

// Reads the whole file into f->bytes / f->size (once: file.h); with pin,
// its SHA-256 must be pin (the manifest's digest), checked on these bytes.
static int st_read_file(const char *path, const char *pin,
                        const char *pin_field, clef_st_file *f, clef_err *err)
{
    int rc = clef_file_read(path, 0, &f->bytes, &f->size, err);
    if (rc || !pin)
        return rc;
    char hex[CLEF_SHA256_HEX];
    if (clef_sha256_hex(f->bytes, f->size, hex))
        return clef_err_set(err, CLEF_ERR_RUN, "%s: SHA-256 failed", path);
    if (!clef_sha256_equal(hex, pin))
        return clef_err_input(err, path, NULL, pin_field ? pin_field : "sha256",
                              "SHA-256 of the file is %s but the manifest "
                              "says %s",
                              hex, pin);
    return 0;
}

// A JSON integer in [0, max], else -1 (jansson integers are long long).
static int st_json_uint(const json_t *j, uint64_t max, uint64_t *out)
{
    if (!json_is_integer(j))
        return -1;
    json_int_t v = json_integer_value(j);
    if (v < 0 || (uint64_t)v > max)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

// Parses one tensor entry {"dtype", "shape", "data_offsets"}; checks every
// rule that concerns this tensor alone.
static int st_parse_tensor(const char *path, const char *name, json_t *j,
                           size_t data_size, clef_st_tensor *t, clef_err *err)
{
    char field[160];
    snprintf(field, sizeof(field), "tensor %s", name);
    if (!json_is_object(j))
        return clef_err_input(err, path, NULL, field,
                              "entry must be an object with dtype, shape and "
                              "data_offsets");

    json_t *jdt = json_object_get(j, "dtype");
    json_t *jsh = json_object_get(j, "shape");
    json_t *joff = json_object_get(j, "data_offsets");
    if (!jdt || !jsh || !joff)
        return clef_err_input(err, path, NULL, field, "missing %s",
                              !jdt   ? "dtype"
                              : !jsh ? "shape"
                                     : "data_offsets");
    if (!json_is_string(jdt) ||
        st_dtype_parse(json_string_value(jdt), &t->dtype) != 0)
        return clef_err_input(err, path, NULL, field,
                              "unknown dtype %s (expected F32, F16, BF16, F64, "
                              "I32 or I64)",
                              json_is_string(jdt) ? json_string_value(jdt)
                                                  : "(not a string)");

    if (!json_is_array(jsh))
        return clef_err_input(err, path, NULL, field,
                              "shape must be an array of integers");
    size_t nd = json_array_size(jsh);
    if (nd > CLEF_ST_MAX_DIMS)
        return clef_err_input(err, path, NULL, field,
                              "shape has %zu dims (at most %d)", nd,
                              CLEF_ST_MAX_DIMS);
    t->ndim = (int)nd;
    size_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        uint64_t dim;
        if (st_json_uint(json_array_get(jsh, i), INT64_MAX, &dim) != 0)
            return clef_err_input(err, path, NULL, field,
                                  "shape[%zu] must be an integer >= 0", i);
        t->shape[i] = (int64_t)dim;
        if (dim > SIZE_MAX ||
            __builtin_mul_overflow(numel, (size_t)dim, &numel))
            return clef_err_input(err, path, NULL, field,
                                  "shape overflows the element count");
    }
    for (size_t i = nd; i < CLEF_ST_MAX_DIMS; i++)
        t->shape[i] = 0;
    t->numel = numel;

    uint64_t begin, end;
    if (!json_is_array(joff) || json_array_size(joff) != 2 ||
        st_json_uint(json_array_get(joff, 0), INT64_MAX, &begin) != 0 ||
        st_json_uint(json_array_get(joff, 1), INT64_MAX, &end) != 0)
        return clef_err_input(err, path, NULL, field,
                              "data_offsets must be [begin, end], integers "
                              ">= 0");
    if (begin > end)
        return clef_err_input(
            err, path, NULL, field,
            "data_offsets [%" PRIu64 ", %" PRIu64 "]: begin > end", begin, end);
    if (end > data_size)
        return clef_err_input(err, path, NULL, field,
                              "data_offsets [%" PRIu64 ", %" PRIu64
                              "] end past the data section (%zu bytes)",
                              begin, end, data_size);
    size_t nbytes;
    if (__builtin_mul_overflow(numel, st_dtype_size(t->dtype), &nbytes))
        return clef_err_input(err, path, NULL, field,
                              "size overflow: %s x %zu elements exceeds the "
                              "addressable bytes",
                              st_dtype_name(t->dtype), numel);
    if (end - begin != nbytes)
        return clef_err_input(err, path, NULL, field,
                              "size mismatch: data_offsets span %" PRIu64
                              " bytes but %s x %zu elements needs %zu",
                              end - begin, st_dtype_name(t->dtype), numel,
                              nbytes);
    t->begin = (size_t)begin;
    t->end = (size_t)end;
    return 0;
}

static int st_parse_metadata(const char *path, json_t *j, clef_st_file *f,
                             clef_err *err)
{
    if (!json_is_object(j))
        return clef_err_input(err, path, NULL, "header",
                              "__metadata__ must be an object of strings");
    size_t n = json_object_size(j);
    f->meta = calloc(n ? n : 1, sizeof(*f->meta));
    if (!f->meta)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
    const char *key;
    json_t *val;
    json_object_foreach (j, key, val) {
        if (!json_is_string(val))
            return clef_err_input(err, path, NULL, "header",
                                  "__metadata__ value of \"%s\" must be a "
                                  "string",
                                  key);
        clef_st_meta *m = &f->meta[f->nmeta];
        m->key = st_strdup(key);
        m->value = st_strdup(json_string_value(val));
        f->nmeta++;
        if (!m->key || !m->value)
            return clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
    }
    return 0;
}

// qsort context is not portable: sort index arrays with a file-local pointer
// passed through a small struct array instead.
typedef struct st_key {
    const clef_st_tensor *t;
    int idx;
} st_key;

static int st_cmp_begin(const void *a, const void *b)
{
    const st_key *x = a, *y = b;
    if (x->t->begin != y->t->begin)
        return x->t->begin < y->t->begin ? -1 : 1;
    if (x->t->end != y->t->end)
        return x->t->end < y->t->end ? -1 : 1;
    return x->idx - y->idx;
}

static int st_cmp_name(const void *a, const void *b)
{
    const st_key *x = a, *y = b;
    return strcmp(x->t->name, y->t->name);
}

// No two tensors share a byte. Zero-size tensors occupy no byte.
static int st_check_overlap(const char *path, clef_st_file *f, clef_err *err)
{
    int n = f->ntensors;
    st_key *k = malloc(sizeof(*k) * (size_t)(n ? n : 1));
    if (!k)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
    for (int i = 0; i < n; i++)
        k[i] = (st_key){&f->tensors[i], i};
    qsort(k, (size_t)n, sizeof(*k), st_cmp_begin);
    int rc = 0;
    const clef_st_tensor *prev = NULL;
    for (int i = 0; i < n; i++) {
        const clef_st_tensor *t = k[i].t;
        if (t->begin == t->end)
            continue;
        if (prev && prev->end > t->begin) {
            char field[160];
            snprintf(field, sizeof(field), "tensor %s", t->name);
            rc = clef_err_input(err, path, NULL, field,
                                "data_offsets [%zu, %zu] overlap tensor %s "
                                "[%zu, %zu]",
                                t->begin, t->end, prev->name, prev->begin,
                                prev->end);
            break;
        }
        prev = t;
    }
    free(k);
    return rc;
}

// Sorted name index for clef_st_find (names are unique: checked by jansson).
static int st_build_index(const char *path, clef_st_file *f, clef_err *err)
{
    int n = f->ntensors;
    st_key *k = malloc(sizeof(*k) * (size_t)(n ? n : 1));
    f->by_name = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!k || !f->by_name) {
        free(k);
        return clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
    }
    for (int i = 0; i < n; i++)
        k[i] = (st_key){&f->tensors[i], i};
    qsort(k, (size_t)n, sizeof(*k), st_cmp_name);
    for (int i = 0; i < n; i++)
        f->by_name[i] = k[i].idx;
    free(k);
    return 0;
}

static int st_parse_header(const char *path, clef_st_file *f, size_t hlen,
                           clef_err *err)
{
    json_error_t jerr;
    json_t *root = json_loadb((const char *)f->bytes + 8, hlen,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return clef_err_input(err, path, NULL, "header",
                              "invalid JSON at byte %d: %s", jerr.position,
                              jerr.text);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = clef_err_input(err, path, NULL, "header",
                            "header must be a JSON object");
        goto cleanup;
    }
    size_t n = json_object_size(root);
    if (n > INT32_MAX) {
        rc = clef_err_input(err, path, NULL, "header", "too many tensors");
        goto cleanup;
    }
    f->tensors = calloc(n ? n : 1, sizeof(*f->tensors));
    if (!f->tensors) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
        goto cleanup;
    }
    size_t data_size = f->size - f->data_start;
    const char *key;
    json_t *val;
    json_object_foreach (root, key, val) { // insertion (header) order
        if (strcmp(key, "__metadata__") == 0) {
            if ((rc = st_parse_metadata(path, val, f, err)) != 0)
                goto cleanup;
            continue;
        }
        clef_st_tensor *t = &f->tensors[f->ntensors];
        if (!(t->name = st_strdup(key))) {
            rc = clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
            goto cleanup;
        }
        f->ntensors++;
        if ((rc = st_parse_tensor(path, key, val, data_size, t, err)) != 0)
            goto cleanup;
    }
    if ((rc = st_check_overlap(path, f, err)) != 0)
        goto cleanup;
    rc = st_build_index(path, f, err);
cleanup:
    json_decref(root);
    return rc;
}

int clef_st_open(const char *path, clef_st_file *f, clef_err *err)
{
    return clef_st_open_pinned(path, NULL, NULL, f, err);
}

int clef_st_open_pinned(const char *path, const char *sha256, const char *field,
                        clef_st_file *f, clef_err *err)
{
    memset(f, 0, sizeof(*f));
    int rc;
    if (!(f->path = st_strdup(path))) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
        goto fail;
    }
    if ((rc = st_read_file(path, sha256, field, f, err)) != 0)
        goto fail;
    if (f->size < 8) {
        rc = clef_err_input(err, path, NULL, "header",
                            "file is %zu bytes: shorter than the 8-byte "
                            "header length",
                            f->size);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | f->bytes[i];
    if (hlen > ST_MAX_HEADER) {
        rc = clef_err_input(err, path, NULL, "header",
                            "header length %" PRIu64
                            " exceeds the 100 MB limit (%" PRIu64 ")",
                            hlen, ST_MAX_HEADER);
        goto fail;
    }
    if (hlen > f->size - 8) {
        rc = clef_err_input(err, path, NULL, "header",
                            "header length %" PRIu64
                            " runs past the end of the file (%zu bytes)",
                            hlen, f->size);
        goto fail;
    }
    f->data_start = 8 + (size_t)hlen;
    if ((rc = st_parse_header(path, f, (size_t)hlen, err)) != 0)
        goto fail;
    return 0;
fail:
    clef_st_close(f);
    return rc;
}

void clef_st_close(clef_st_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->ntensors; i++)
        free(f->tensors[i].name);
    for (int i = 0; i < f->nmeta; i++) {
        free((char *)f->meta[i].key);
        free((char *)f->meta[i].value);
    }
    free(f->tensors);
    free(f->meta);
    free(f->by_name);
    free(f->bytes);
    free(f->path);
    memset(f, 0, sizeof(*f));
}

const clef_st_tensor *clef_st_find(const clef_st_file *f, const char *name)
{
    if (!f->by_name)
        return NULL;
    int lo = 0, hi = f->ntensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const clef_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *clef_st_meta_get(const clef_st_file *f, const char *key)
{
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, key) == 0)
            return f->meta[i].value;
    return NULL;
}

// ---- conversion ----

int clef_st_read_f32(const clef_st_file *f, const clef_st_tensor *t, float *out,
                     int require_finite, clef_err *err)
{
    char field[160];
    snprintf(field, sizeof(field), "tensor %s", t->name);
    const uint8_t *src = f->bytes + f->data_start + t->begin;
    size_t n = t->numel;
    switch (t->dtype) {
    case CLEF_DT_F32:
        memcpy(out, src, n * sizeof(float));
        break;
    case CLEF_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            out[i] = clef_f16_to_f32(h);
        }
        break;
    case CLEF_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            out[i] = clef_bf16_to_f32(h);
        }
        break;
    case CLEF_DT_F64:
        for (size_t i = 0; i < n; i++) {
            double x;
            memcpy(&x, src + 8 * i, 8);
            out[i] = (float)x; // round to nearest even
        }
        break;
    default:
        return clef_err_input(err, f->path, NULL, field,
                              "dtype %s is not a float dtype (F32, F16, BF16 "
                              "or F64)",
                              st_dtype_name(t->dtype));
    }
    if (require_finite) {
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(out[i]))
                return clef_err_input(
                    err, f->path, NULL, field,
                    "element %zu is %s%s: values must be finite", i,
                    isnan(out[i]) ? "NaN" : "Inf",
                    t->dtype == CLEF_DT_F64 && !isnan(out[i])
                        ? " (out of float32 range)"
                        : "");
        }
    }
    return 0;
}

int clef_st_read_i32(const clef_st_file *f, const clef_st_tensor *t,
                     int32_t *out, clef_err *err)
{
    char field[160];
    snprintf(field, sizeof(field), "tensor %s", t->name);
    const uint8_t *src = f->bytes + f->data_start + t->begin;
    size_t n = t->numel;
    switch (t->dtype) {
    case CLEF_DT_I32:
        memcpy(out, src, n * sizeof(int32_t));
        return 0;
    case CLEF_DT_I64:
        for (size_t i = 0; i < n; i++) {
            int64_t x;
            memcpy(&x, src + 8 * i, 8);
            if (x < INT32_MIN || x > INT32_MAX)
                return clef_err_input(
                    err, f->path, NULL, field,
                    "element %zu = %" PRId64 " does not fit in int32", i, x);
            out[i] = (int32_t)x;
        }
        return 0;
    default:
        return clef_err_input(err, f->path, NULL, field,
                              "dtype %s is not an integer dtype (I32 or I64)",
                              st_dtype_name(t->dtype));
    }
}

// ---- writing ----

// Checks the entries before anything touches the disk.
static int st_check_entries(const char *path, const clef_st_entry *e, int n,
                            const clef_st_meta *meta, int nmeta, clef_err *err)
{
    for (int i = 0; i < n; i++) {
        if (!e[i].name || !e[i].name[0] ||
            strcmp(e[i].name, "__metadata__") == 0)
            return clef_err_input(err, path, NULL, "header",
                                  "entry %d: invalid tensor name", i);
        char field[160];
        snprintf(field, sizeof(field), "tensor %s", e[i].name);
        if (e[i].dtype != CLEF_DT_F32 && e[i].dtype != CLEF_DT_I32 &&
            e[i].dtype != CLEF_DT_BF16)
            return clef_err_input(err, path, NULL, field,
                                  "writer supports F32, BF16 and I32 only, "
                                  "not %s",
                                  st_dtype_name(e[i].dtype));
        if (e[i].ndim < 0 || e[i].ndim > CLEF_ST_MAX_DIMS)
            return clef_err_input(err, path, NULL, field,
                                  "ndim %d out of range [0, %d]", e[i].ndim,
                                  CLEF_ST_MAX_DIMS);
        size_t numel = 1;
        for (int d = 0; d < e[i].ndim; d++)
            if (e[i].shape[d] < 0 ||
                __builtin_mul_overflow(numel, (size_t)e[i].shape[d], &numel))
                return clef_err_input(err, path, NULL, field,
                                      "shape[%d] = %" PRId64 " is invalid", d,
                                      e[i].shape[d]);
        if (numel && !e[i].data)
            return clef_err_input(err, path, NULL, field, "no data");
    }
    for (int i = 0; i < nmeta; i++)
        if (!meta[i].key || !meta[i].value)
            return clef_err_input(err, path, NULL, "header",
                                  "metadata entry %d has no key or value", i);
    return 0;
}

static size_t st_entry_bytes(const clef_st_entry *e)
{
    size_t numel = 1;
    for (int d = 0; d < e->ndim; d++)
        numel *= (size_t)e->shape[d];
    return numel * (e->dtype == CLEF_DT_BF16 ? 2 : 4); // BF16; F32 and I32
}

// The header JSON, padded with spaces to a multiple of 8. malloc'd.
static char *st_build_header(const char *path, const clef_st_entry *e, int n,
                             const clef_st_meta *meta, int nmeta, size_t *len,
                             clef_err *err)
{
    char *text = NULL, *out = NULL;
    json_t *root = json_object();
    if (!root)
        goto oom;
    if (nmeta > 0) {
        json_t *jm = json_object();
        if (!jm || json_object_set_new(root, "__metadata__", jm) != 0)
            goto oom;
        for (int i = 0; i < nmeta; i++) {
            if (json_object_get(jm, meta[i].key)) {
                clef_err_input(err, path, NULL, "header",
                               "duplicate metadata key \"%s\"", meta[i].key);
                goto fail;
            }
            if (json_object_set_new(jm, meta[i].key,
                                    json_string(meta[i].value)) != 0) {
                clef_err_input(err, path, NULL, "header",
                               "metadata \"%s\" is not valid UTF-8",
                               meta[i].key);
                goto fail;
            }
        }
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (json_object_get(root, e[i].name)) {
            char field[160];
            snprintf(field, sizeof(field), "tensor %s", e[i].name);
            clef_err_input(err, path, NULL, field, "duplicate tensor name");
            goto fail;
        }
        size_t nbytes = st_entry_bytes(&e[i]);
        json_t *jt = json_object();
        json_t *js = json_array();
        if (!jt || !js) {
            json_decref(jt);
            json_decref(js);
            goto oom;
        }
        for (int d = 0; d < e[i].ndim; d++)
            json_array_append_new(js, json_integer(e[i].shape[d]));
        json_object_set_new(jt, "dtype",
                            json_string(st_dtype_name(e[i].dtype)));
        json_object_set_new(jt, "shape", js);
        json_object_set_new(
            jt, "data_offsets",
            json_pack("[I,I]", (json_int_t)off, (json_int_t)(off + nbytes)));
        if (json_object_set_new(root, e[i].name, jt) != 0) {
            char field[160];
            snprintf(field, sizeof(field), "tensor %s", e[i].name);
            clef_err_input(err, path, NULL, field, "name is not valid UTF-8");
            goto fail;
        }
        off += nbytes;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text)
        goto oom;
    size_t tl = strlen(text);
    size_t padded = (tl + 7) / 8 * 8;
    if ((uint64_t)padded > ST_MAX_HEADER) {
        clef_err_input(err, path, NULL, "header",
                       "header of %zu bytes exceeds the 100 MB limit", padded);
        goto fail;
    }
    out = malloc(padded + 1);
    if (!out)
        goto oom;
    memcpy(out, text, tl);
    memset(out + tl, ' ', padded - tl);
    out[padded] = '\0';
    *len = padded;
    free(text);
    json_decref(root);
    return out;
oom:
    clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory building the header",
                 path);
fail:
    free(text);
    json_decref(root);
    return NULL;
}

// fsync of the folder that holds path, so the rename is durable.
static int st_fsync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = st_strdup(".");
    } else if (slash == path) {
        dir = st_strdup("/");
    } else {
        size_t n = (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (!dir)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int st_fwrite_all(FILE *fp, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        size_t w = fwrite(b, 1, n, fp);
        if (w == 0)
            return -1;
        b += w;
        n -= w;
    }
    return 0;
}

int clef_st_write(const char *path, const clef_st_entry *e, int n,
                  const clef_st_meta *meta, int nmeta, clef_err *err)
{
    int rc = st_check_entries(path, e, n, meta, nmeta, err);
    if (rc)
        return rc;
    size_t hlen = 0;
    char *header = st_build_header(path, e, n, meta, nmeta, &hlen, err);
    if (!header)
        return err ? err->code : CLEF_ERR_INPUT;

    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    FILE *fp = NULL;
    int created = 0;
    if (!tmp) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: out of memory", path);
        goto cleanup;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: cannot create %s: %s", path,
                          tmp, strerror(errno));
        goto cleanup;
    }
    created = 1;
    if (!(fp = fdopen(fd, "wb"))) {
        close(fd);
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: fdopen: %s", path,
                          strerror(errno));
        goto cleanup;
    }
    uint8_t lenbuf[8];
    for (int i = 0; i < 8; i++)
        lenbuf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    int bad = st_fwrite_all(fp, lenbuf, 8) || st_fwrite_all(fp, header, hlen);
    for (int i = 0; i < n && !bad; i++)
        bad = st_fwrite_all(fp, e[i].data, st_entry_bytes(&e[i]));
    if (bad || fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: write failed: %s", path,
                          strerror(errno));
        goto cleanup;
    }
    int cr = fclose(fp);
    fp = NULL;
    if (cr != 0) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: close failed: %s", path,
                          strerror(errno));
        goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: rename from %s failed: %s",
                          path, tmp, strerror(errno));
        goto cleanup;
    }
    created = 0; // the file is in place
    if (st_fsync_dir(path) != 0) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: fsync of the folder: %s",
                          path, strerror(errno));
        goto cleanup;
    }
cleanup:
    if (fp)
        fclose(fp);
    if (created)
        unlink(tmp);
    free(tmp);
    free(header);
    return rc;
}

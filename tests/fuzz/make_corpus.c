// Writes the seed corpus of the fuzz harnesses: make_corpus DIR creates
// DIR/safetensors/, DIR/weights/ and DIR/package/ (tests/fuzz/corpus/ is
// this program's output, committed). Small valid files of the tiny head and
// package (fuzz_common.h) and a few invalid ones. Deterministic.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "safetensors.h"

static const char *outdir;

static void put(const char *sub, const char *name, const void *b, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", outdir, sub);
    if (mkdir(path, 0755) && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", outdir, sub, name);
    if (fz_write(path, b, n)) {
        perror(path);
        exit(1);
    }
}

static void put_buf(const char *sub, const char *name, const fz_buf *b)
{
    put(sub, name, b->p, b->n);
}

// A raw file: 8-byte length of header, header text, then data bytes.
static void put_raw(const char *sub, const char *name, const char *header,
                    const void *data, size_t ndata)
{
    fz_buf b = {0};
    uint64_t n = strlen(header);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(n >> (8 * i));
    fz_buf_put(&b, len, 8);
    fz_buf_puts(&b, header);
    fz_buf_put(&b, data, ndata);
    put_buf(sub, name, &b);
    fz_buf_free(&b);
}

static uint16_t bf16_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

// The weights file rebuilt: without metadata (meta NULL) or with meta, F32
// or every tensor as BF16.
static void rebuilt(const fz_buf *src, const char *meta, int bf16, fz_buf *out)
{
    char path[4096];
    fz_path(path, "src.safetensors");
    if (fz_write(path, src->p, src->n))
        exit(1);
    clef_st_file f;
    clef_err err = {0};
    if (clef_st_open(path, &f, &err)) {
        fprintf(stderr, "make_corpus: %s\n", err.msg);
        exit(1);
    }
    fz_tensor *t = calloc((size_t)f.ntensors, sizeof(*t));
    void **bufs = calloc((size_t)f.ntensors, sizeof(void *));
    for (int i = 0; i < f.ntensors; i++) {
        const clef_st_tensor *s = &f.tensors[i];
        float *v = malloc(s->numel * 4 + 4);
        if (clef_st_read_f32(&f, s, v, 1, &err)) {
            fprintf(stderr, "make_corpus: %s\n", err.msg);
            exit(1);
        }
        t[i].name = s->name;
        t[i].ndim = s->ndim;
        for (int j = 0; j < s->ndim; j++)
            t[i].shape[j] = s->shape[j];
        if (bf16) {
            uint16_t *h = malloc(s->numel * 2 + 2);
            for (size_t j = 0; j < s->numel; j++)
                h[j] = bf16_of(v[j]);
            free(v);
            bufs[i] = h;
            t[i].dtype = "BF16";
            t[i].nbytes = s->numel * 2;
        } else {
            bufs[i] = v;
            t[i].dtype = "F32";
            t[i].nbytes = s->numel * 4;
        }
        t[i].data = bufs[i];
    }
    fz_st_build(out, t, f.ntensors, meta);
    for (int i = 0; i < f.ntensors; i++)
        free(bufs[i]);
    free(bufs);
    free(t);
    clef_st_close(&f);
}

static void safetensors_seeds(const fz_buf *weights, const fz_buf pkg[])
{
    const char *S = "safetensors";
    put_buf(S, "tiny-weights.safetensors", weights);
    put_buf(S, "lexical.safetensors", &pkg[1]);
    put_buf(S, "records-000.safetensors", &pkg[2]);
    put_buf(S, "records-001-f16.safetensors", &pkg[3]);

    // every dtype, a scalar, an empty tensor and metadata
    float f32[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 1e-3f};
    uint16_t f16[4] = {0x3c00, 0xc000, 0x3400, 0x0001}; // 1, -2, 0.25, tiny
    uint16_t bf[4] = {0x3f80, 0xc000, 0x3e80, 0x7f7f};
    double f64[2] = {0.125, -1e30};
    int32_t i32[3] = {0, -7, 2147483647};
    int64_t i64[3] = {5, -5, 1};
    float scalar = 0.75f;
    fz_tensor t[] = {
        {"a.f32", "F32", 2, {2, 3}, f32, sizeof(f32)},
        {"b.f16", "F16", 1, {4}, f16, sizeof(f16)},
        {"c.bf16", "BF16", 2, {2, 2}, bf, sizeof(bf)},
        {"d.f64", "F64", 1, {2}, f64, sizeof(f64)},
        {"e.i32", "I32", 1, {3}, i32, sizeof(i32)},
        {"f.i64", "I64", 3, {1, 3, 1}, i64, sizeof(i64)},
        {"g.scalar", "F32", 0, {0}, &scalar, sizeof(scalar)},
        {"h.empty", "F32", 2, {0, 3}, NULL, 0},
    };
    fz_buf b = {0};
    fz_st_build(&b, t, 8, "{\"format\":\"fuzz\",\"note\":\"every dtype\"}");
    put_buf(S, "dtypes.safetensors", &b);
    fz_buf_free(&b);
    fz_st_build(&b, NULL, 0, NULL);
    put_buf(S, "no-tensors.safetensors", &b);
    fz_buf_free(&b);

    // invalid ones
    put_raw(S, "bad-overlap.safetensors",
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
            "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
            f32, 12);
    put_raw(S, "bad-size.safetensors",
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
            f32, 8);
    put_raw(S, "bad-dtype.safetensors",
            "{\"x\":{\"dtype\":\"Q8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
            f32, 2);
    put_raw(S, "bad-past-end.safetensors",
            "{\"x\":{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
            i32, 12);
    put_raw(S, "bad-json.safetensors", "{\"x\":{\"dtype\":", NULL, 0);
    put_raw(S, "bad-meta.safetensors",
            "{\"__metadata__\":{\"format\":3},\"x\":{\"dtype\":\"I32\","
            "\"shape\":[],\"data_offsets\":[0,4]}}",
            i32, 4);
    uint8_t huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff,
                        0xff, 0xff, 0x7f, '{',  '}'};
    put(S, "bad-header-length.safetensors", huge, 10);
    put(S, "bad-short.safetensors", huge, 5);
}

static void weights_seeds(const fz_buf *weights, const fz_buf *ckpt)
{
    const char *W = "weights";
    put_buf(W, "tiny-weights.safetensors", weights);
    put_buf(W, "tiny-checkpoint.safetensors", ckpt);
    fz_buf b = {0};
    rebuilt(weights, NULL, 0, &b);
    put_buf(W, "inferred-f32.safetensors", &b);
    fz_buf_free(&b);
    rebuilt(weights,
            "{\"format\":\"clef-head/1\",\"head\":\"{\\\"heads\\\": 2, "
            "\\\"width\\\": 4}\"}",
            1, &b);
    put_buf(W, "partial-head-bf16.safetensors", &b);
    fz_buf_free(&b);
    // invalid: a truncated checkpoint, a bad step, a mismatched head
    put(W, "bad-truncated.safetensors", ckpt->p, ckpt->n / 2);
    rebuilt(ckpt,
            "{\"format\":\"clef-checkpoint/1\",\"step\":\"-x\",\"head\":"
            "\"{\\\"hidden_size\\\": 4, \\\"width\\\": 4, \\\"heads\\\": 2, "
            "\\\"feedforward\\\": 8, \\\"routing_layers\\\": 1, "
            "\\\"layers\\\": 1}\"}",
            0, &b);
    put_buf(W, "bad-step.safetensors", &b);
    fz_buf_free(&b);
    rebuilt(weights,
            "{\"format\":\"clef-head/1\",\"head\":\"{\\\"hidden_size\\\": 4, "
            "\\\"width\\\": 8, \\\"heads\\\": 2, \\\"feedforward\\\": 8, "
            "\\\"routing_layers\\\": 1, \\\"layers\\\": 1}\"}",
            0, &b);
    put_buf(W, "bad-head-mismatch.safetensors", &b);
    fz_buf_free(&b);
}

// parts[0..n) joined by FZ_SEP
static void put_container(const char *name, const fz_buf *parts, int n)
{
    fz_buf b = {0};
    for (int i = 0; i < n; i++) {
        if (i)
            fz_buf_puts(&b, FZ_SEP);
        fz_buf_put(&b, parts[i].p, parts[i].n);
    }
    put_buf("package", name, &b);
    fz_buf_free(&b);
}

// The manifest with the first occurrence of from replaced by to.
static void put_edited(const char *name, const fz_buf *m, const char *from,
                       const char *to)
{
    const char *at = strstr((const char *)m->p, from);
    if (!at) {
        fprintf(stderr, "make_corpus: \"%s\" not in the manifest\n", from);
        exit(1);
    }
    fz_buf b = {0};
    fz_buf_put(&b, m->p, (size_t)(at - (const char *)m->p));
    fz_buf_puts(&b, to);
    fz_buf_puts(&b, at + strlen(from));
    put_container(name, &b, 1);
    fz_buf_free(&b);
}

static void package_seeds(const fz_buf with_init[], const fz_buf no_init[])
{
    put_container("manifest-only.txt", with_init, 1);
    put_container("manifest-no-init.txt", no_init, 1);
    put_container("all-files.txt", with_init, FZ_NPARTS);
    put_container("no-init-all-files.txt", no_init, 4);
    put_container("lexical-and-shard0.txt", no_init, 3);
    const fz_buf *m = &with_init[0];
    put_edited("bad-format.txt", m, "clef-package/1", "clef-package/2");
    put_edited("bad-label.txt", m, "\"label\": 1", "\"label\": 2");
    put_edited("bad-target.txt", m, "[0.25, 0.75]", "[0.25, 0.5]");
    put_edited("bad-id.txt", m, "\"r2\"", "\"r 2\"");
    put_edited("bad-sha.txt", m, "%SHA:lexical.safetensors%",
               "0123456789abcdef0123456789abcdef"
               "0123456789abcdef0123456789abcdef");
    put_edited("bad-path.txt", m, "\"lexical.safetensors\"",
               "\"../lexical.safetensors\"");
    put_edited("bad-heads.txt", m, "\"heads\": 2", "\"heads\": 3");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    outdir = argv[1];
    if (mkdir(outdir, 0755) && errno != EEXIST) {
        perror(outdir);
        return 1;
    }
    fz_buf weights, ckpt, with_init[FZ_NPARTS], no_init[FZ_NPARTS];
    if (fz_tiny_weights_file(&weights, 0) || fz_tiny_weights_file(&ckpt, 1) ||
        fz_tiny_package(with_init, 1) || fz_tiny_package(no_init, 0))
        return 1;
    safetensors_seeds(&weights, with_init);
    weights_seeds(&weights, &ckpt);
    package_seeds(with_init, no_init);
    fz_buf_free(&weights);
    fz_buf_free(&ckpt);
    for (int i = 0; i < FZ_NPARTS; i++) {
        fz_buf_free(&with_init[i]);
        fz_buf_free(&no_init[i]);
    }
    return 0;
}

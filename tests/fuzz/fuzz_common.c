// Shared helpers of the libFuzzer harnesses: see fuzz_common.h.
#include "fuzz_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "weights.h"

// ---- buffers ----

void fz_buf_put(fz_buf *b, const void *src, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
    b->p[b->n] = 0; // always NUL-terminated (not counted)
}

void fz_buf_puts(fz_buf *b, const char *s)
{
    fz_buf_put(b, s, strlen(s));
}

void fz_buf_printf(fz_buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        abort();
    fz_buf_put(b, tmp, (size_t)n);
}

void fz_buf_free(fz_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

int fz_verbose(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("CLEF_FUZZ_VERBOSE");
        v = e && !strcmp(e, "1");
    }
    return v;
}

// ---- the temp folder ----

static char tmpdir[4096];

void fz_clean_tmpdir(void)
{
    if (!tmpdir[0])
        return;
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096 + 256];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

void fz_release_tmpdir(void)
{
    fz_clean_tmpdir();
    if (tmpdir[0])
        rmdir(tmpdir);
    tmpdir[0] = 0;
}

static void remove_tmpdir(void)
{
    fz_release_tmpdir();
}

static int try_dir(const char *base)
{
    if (!base || !base[0] || access(base, W_OK) != 0)
        return -1;
    snprintf(tmpdir, sizeof(tmpdir), "%s/clef-fuzz-XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        tmpdir[0] = 0;
        return -1;
    }
    return 0;
}

const char *fz_tmpdir(void)
{
    if (tmpdir[0])
        return tmpdir;
    if (try_dir(getenv("CLEF_FUZZ_TMPDIR")) && try_dir("/dev/shm") &&
        try_dir(getenv("TMPDIR")) && try_dir("/tmp")) {
        fprintf(stderr, "fuzz: cannot make a temp folder\n");
        abort();
    }
    static int registered;
    if (!registered)
        atexit(remove_tmpdir);
    registered = 1;
    return tmpdir;
}

void fz_path(char out[4096], const char *name)
{
    snprintf(out, 4096, "%s/%s", fz_tmpdir(), name);
}

int fz_write(const char *path, const void *bytes, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    const uint8_t *p = bytes;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return close(fd);
}

int fz_read(const char *path, fz_buf *out)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char tmp[65536];
    size_t got;
    while ((got = fread(tmp, 1, sizeof(tmp), f)) > 0)
        fz_buf_put(out, tmp, got);
    int bad = ferror(f);
    fclose(f);
    if (bad || !out->p) {
        fz_buf_free(out);
        return -1;
    }
    return 0;
}

// ---- safetensors in memory ----

void fz_st_build(fz_buf *out, const fz_tensor *t, int n, const char *meta_json)
{
    fz_buf h = {0};
    fz_buf_puts(&h, "{");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        fz_buf_printf(&h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                      i ? "," : "", t[i].name, t[i].dtype);
        for (int j = 0; j < t[i].ndim; j++)
            fz_buf_printf(&h, "%s%lld", j ? "," : "", (long long)t[i].shape[j]);
        fz_buf_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off,
                      off + t[i].nbytes);
        off += t[i].nbytes;
    }
    if (meta_json) {
        fz_buf_printf(&h, "%s\"__metadata__\":", n ? "," : "");
        fz_buf_puts(&h, meta_json);
    }
    fz_buf_puts(&h, "}");
    while (h.n % 8)
        fz_buf_puts(&h, " ");
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    memset(out, 0, sizeof(*out));
    fz_buf_put(out, len, 8);
    fz_buf_put(out, h.p, h.n);
    for (int i = 0; i < n; i++)
        fz_buf_put(out, t[i].data, t[i].nbytes);
    fz_buf_free(&h);
}

// ---- the tiny head ----

const clef_config fz_tiny_cfg = {
    .d = 4, .w = 4, .h = 2, .f = 8, .R = 1, .L = 1};

int fz_tiny_head(clef_head *hd, int moments)
{
    clef_err err = {0};
    if (clef_head_alloc(hd, &fz_tiny_cfg, &err)) {
        fprintf(stderr, "fuzz: tiny head: %s\n", err.msg);
        return -1;
    }
    clef_head_init_random(hd, 7);
    if (moments) {
        for (size_t i = 0; i < hd->nparams; i++) {
            hd->m[i] = 0.001f * (float)((int)(i % 7) - 3);
            hd->v[i] = 0.0001f * (float)(i % 5);
        }
        hd->step = 3;
    }
    return 0;
}

int fz_tiny_weights_file(fz_buf *out, int checkpoint)
{
    clef_head hd;
    if (fz_tiny_head(&hd, checkpoint))
        return -1;
    char path[4096];
    fz_path(path, checkpoint ? "tiny-checkpoint.safetensors"
                             : "tiny-weights.safetensors");
    clef_err err = {0};
    clef_st_meta extra[3] = {{"epoch", "1"},
                             {"package_sha256", "0000000000000000000000000000"
                                                "000000000000000000000000000000"
                                                "000000"},
                             {"train", "{\"lr\": 0.001}"}};
    int rc = checkpoint ? clef_checkpoint_save(path, &hd, extra, 3, &err)
                        : clef_weights_save(path, &hd, NULL, 0, &err);
    clef_head_free(&hd);
    if (rc) {
        fprintf(stderr, "fuzz: saving the tiny head: %s\n", err.msg);
        return -1;
    }
    rc = fz_read(path, out);
    unlink(path);
    return rc;
}

// ---- the package input ----

const char *const fz_part_names[FZ_NPARTS] = {
    "package.json", "lexical.safetensors", "records-000.safetensors",
    "records-001.safetensors", "init.safetensors"};

int fz_split(const uint8_t *data, size_t n, const uint8_t *part[FZ_NPARTS],
             size_t len[FZ_NPARTS])
{
    const size_t sl = strlen(FZ_SEP);
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; k < FZ_NPARTS - 1 && i + sl <= n; i++) {
        if (memcmp(data + i, FZ_SEP, sl) == 0) {
            part[k] = data + start;
            len[k] = i - start;
            k++;
            start = i + sl;
            i = start - 1;
        }
    }
    part[k] = data + start;
    len[k] = n - start;
    return k + 1;
}

// Values that F16 and F32 both hold exactly: multiples of 1/8 in [-2, 2).
static float tiny_value(unsigned i)
{
    return (float)((int)((i * 37u + 11u) % 32u) - 16) / 8.0f;
}

static uint16_t f16_of(float x)
{
    // exact for the values of tiny_value (|x| a multiple of 1/8, < 2)
    if (x == 0)
        return 0;
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int e = (int)((u >> 23) & 0xFF) - 127 + 15;
    uint32_t m = (u & 0x7FFFFF) >> 13;
    return (uint16_t)(sign | ((uint32_t)e << 10) | m);
}

// One record's four tensors, appended to t (names into names[]).
typedef struct tiny_rec {
    const char *id;
    int T, Q, O;
    int f16;
    int32_t qs[4], os[8];
} tiny_rec;

static const tiny_rec TINY[3] = {
    // train, shard 0: a choice question and a noul question (soft target)
    {"r0", 5, 2, 4, 0, {0, 2, 1, 3}, {2, 3, 3, 4, 0, 1, 4, 5}},
    // test, shard 0: one choice question without a label
    {"r2", 3, 1, 2, 0, {0, 1}, {1, 2, 2, 3}},
    // validation, shard 1, F16 hidden: a score question of 3 options
    {"r1", 4, 1, 3, 1, {0, 4}, {0, 1, 1, 2, 2, 4}},
};

static void tiny_shard(fz_buf *out, const tiny_rec *recs, int nrec, int d,
                       int V, unsigned *seed)
{
    fz_tensor t[8];
    char names[8][32];
    void *bufs[8];
    int nt = 0;
    for (int k = 0; k < nrec; k++) {
        const tiny_rec *r = &recs[k];
        size_t hs = r->f16 ? 2 : 4;
        uint8_t *H = malloc((size_t)r->T * d * hs);
        for (int i = 0; i < r->T * d; i++) {
            float x = tiny_value((*seed)++);
            if (r->f16) {
                uint16_t h = f16_of(x);
                memcpy(H + 2 * i, &h, 2);
            } else {
                memcpy(H + 4 * i, &x, 4);
            }
        }
        int32_t *ids = malloc((size_t)r->T * 4);
        for (int i = 0; i < r->T; i++)
            ids[i] = (int32_t)((*seed)++ % (unsigned)V);
        int32_t *qs = malloc((size_t)r->Q * 8), *os = malloc((size_t)r->O * 8);
        memcpy(qs, r->qs, (size_t)r->Q * 8);
        memcpy(os, r->os, (size_t)r->O * 8);
        const char *suffix[4] = {"hidden", "input_ids", "question_spans",
                                 "option_spans"};
        void *data[4] = {H, ids, qs, os};
        size_t nbytes[4] = {(size_t)r->T * d * hs, (size_t)r->T * 4,
                            (size_t)r->Q * 8, (size_t)r->O * 8};
        int64_t rows[4] = {r->T, r->T, r->Q, r->O};
        for (int j = 0; j < 4; j++) {
            snprintf(names[nt], sizeof(names[nt]), "%s/%s", r->id, suffix[j]);
            t[nt] = (fz_tensor){
                names[nt],      j ? "I32" : (r->f16 ? "F16" : "F32"),
                j == 1 ? 1 : 2, {rows[j], j == 0 ? d : 2},
                data[j],        nbytes[j]};
            bufs[nt++] = data[j];
        }
    }
    fz_st_build(out, t, nt, NULL);
    for (int i = 0; i < nt; i++)
        free(bufs[i]);
}

int fz_tiny_package(fz_buf parts[FZ_NPARTS], int with_init)
{
    const int d = fz_tiny_cfg.d, V = 6;
    memset(parts, 0, FZ_NPARTS * sizeof(fz_buf));
    unsigned seed = 1;
    float E[6 * 4];
    for (int i = 0; i < V * d; i++)
        E[i] = tiny_value(seed++);
    fz_tensor lex = {"lexical", "F32", 2, {V, d}, E, sizeof(E)};
    fz_st_build(&parts[1], &lex, 1, NULL);
    tiny_shard(&parts[2], TINY, 2, d, V, &seed);
    tiny_shard(&parts[3], TINY + 2, 1, d, V, &seed);
    if (fz_tiny_weights_file(&parts[4], 0))
        return -1;
    fz_buf *m = &parts[0];
    fz_buf_puts(m, "{\n \"format\": \"clef-package/1\",\n");
    fz_buf_printf(m,
                  " \"head\": {\"hidden_size\": %d, \"width\": %d, \"heads\": "
                  "%d, \"feedforward\": %d, \"routing_layers\": %d, "
                  "\"layers\": %d},\n",
                  fz_tiny_cfg.d, fz_tiny_cfg.w, fz_tiny_cfg.h, fz_tiny_cfg.f,
                  fz_tiny_cfg.R, fz_tiny_cfg.L);
    fz_buf_puts(m, " \"provenance\": {\"backbone\": \"fuzz\", \"notes\": "
                   "\"tiny\"},\n");
    fz_buf_puts(m, " \"lexical\": {\"file\": \"lexical.safetensors\", "
                   "\"sha256\": \"%SHA:lexical.safetensors%\"},\n");
    if (with_init)
        fz_buf_puts(m, " \"initial_weights\": {\"file\": \"init.safetensors\","
                       " \"sha256\": \"%SHA:init.safetensors%\"},\n");
    fz_buf_puts(
        m, " \"shards\": [\n"
           "  {\"file\": \"records-000.safetensors\", \"sha256\": "
           "\"%SHA:records-000.safetensors%\"},\n"
           "  {\"file\": \"records-001.safetensors\", \"sha256\": "
           "\"%SHA:records-001.safetensors%\"}],\n"
           " \"records\": [\n"
           "  {\"id\": \"r0\", \"split\": \"train\", \"shard\": 0, "
           "\"questions\": [\n"
           "   {\"id\": \"action\", \"type\": \"choice\", \"options\": "
           "[\"read\", \"clarify\"], \"label\": 1},\n"
           "   {\"id\": \"ok\", \"type\": \"noul\", \"options\": [\"yes\", "
           "\"no\"], \"target\": [0.25, 0.75]}]},\n"
           "  {\"id\": \"r1\", \"split\": \"validation\", \"shard\": 1, "
           "\"questions\": [\n"
           "   {\"id\": \"level\", \"type\": \"score\", \"options\": [\"low\","
           " \"mid\", \"high\"], \"label\": 2}]},\n"
           "  {\"id\": \"r2\", \"split\": \"test\", \"shard\": 0, "
           "\"questions\": [\n"
           "   {\"id\": \"action\", \"type\": \"choice\", \"options\": "
           "[\"read\", \"skip\"]}]}\n"
           " ]\n}\n");
    return 0;
}

static int name_char(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int fz_subst_sha(const uint8_t *m, size_t n, const char *dir, fz_buf *out)
{
    static const char tag[] = "%SHA:";
    const size_t tl = sizeof(tag) - 1;
    memset(out, 0, sizeof(*out));
    size_t i = 0;
    while (i < n) {
        if (i + tl <= n && memcmp(m + i, tag, tl) == 0) {
            size_t j = i + tl;
            while (j < n && j - i - tl < 200 && name_char(m[j]))
                j++;
            if (j < n && m[j] == '%' && j > i + tl) {
                char name[256], path[4096 + 256];
                char hex[CLEF_SHA256_HEX];
                memcpy(name, m + i + tl, j - i - tl);
                name[j - i - tl] = 0;
                snprintf(path, sizeof(path), "%s/%s", dir, name);
                if (clef_sha256_file(path, hex, NULL) != 0)
                    memset(hex, '0', 64), hex[64] = 0;
                fz_buf_put(out, hex, 64);
                i = j + 1;
                continue;
            }
        }
        fz_buf_put(out, m + i, 1);
        i++;
    }
    if (!out->p)
        fz_buf_put(out, "", 0);
    return 0;
}

// libFuzzer harness: the safetensors reader (core/safetensors.h).
//
// The input is a whole file. It is written to the process's temp folder and
// opened with clef_st_open (the path-based API); when that succeeds, every
// tensor is looked up by name and converted (clef_st_read_f32 for float
// dtypes, clef_st_read_i32 for integer ones), every __metadata__ key is
// looked up, and the readable tensors are written back with clef_st_write
// (as F32 / I32) and reopened: the reopened file must hold the same names,
// shapes and values, else the harness aborts (a finding).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "safetensors.h"

#define MAX_ROUNDTRIP 64 // tensors written back at most

static int is_float(clef_dtype dt)
{
    return dt == CLEF_DT_F32 || dt == CLEF_DT_F16 || dt == CLEF_DT_BF16 ||
           dt == CLEF_DT_F64;
}

static void roundtrip(const clef_st_file *f, void **vals, const char *out)
{
    int n = f->ntensors < MAX_ROUNDTRIP ? f->ntensors : MAX_ROUNDTRIP;
    clef_st_entry *e = calloc((size_t)n + 1, sizeof(*e));
    int k = 0;
    for (int i = 0; i < n; i++) {
        const clef_st_tensor *t = &f->tensors[i];
        if (!vals[i])
            continue;
        e[k].name = t->name;
        e[k].dtype = is_float(t->dtype) ? CLEF_DT_F32 : CLEF_DT_I32;
        e[k].ndim = t->ndim;
        memcpy(e[k].shape, t->shape, sizeof(t->shape));
        e[k].data = vals[i];
        k++;
    }
    clef_err err = {0};
    if (clef_st_write(out, e, k, f->meta, f->nmeta, &err) != 0) {
        // names or metadata the writer refuses are fine; say nothing
        free(e);
        return;
    }
    clef_st_file g;
    if (clef_st_open(out, &g, &err) != 0) {
        fprintf(stderr,
                "fuzz: clef_st_write wrote a file clef_st_open "
                "rejects: %s\n",
                err.msg);
        abort();
    }
    if (g.ntensors != k) {
        fprintf(stderr, "fuzz: wrote %d tensors, read back %d\n", k,
                g.ntensors);
        abort();
    }
    for (int j = 0; j < k; j++) {
        const clef_st_tensor *t = clef_st_find(&g, e[j].name);
        if (!t || t->ndim != e[j].ndim ||
            memcmp(t->shape, e[j].shape, sizeof(int64_t) * (size_t)t->ndim)) {
            fprintf(stderr, "fuzz: tensor \"%s\" changed on the round trip\n",
                    e[j].name);
            abort();
        }
        size_t bytes = t->numel * 4;
        void *back = malloc(bytes ? bytes : 1);
        int rc = e[j].dtype == CLEF_DT_F32
                     ? clef_st_read_f32(&g, t, back, 0, &err)
                     : clef_st_read_i32(&g, t, back, &err);
        if (rc != 0 || memcmp(back, e[j].data, bytes) != 0) {
            fprintf(stderr,
                    "fuzz: tensor \"%s\" values changed on the round "
                    "trip (%s)\n",
                    e[j].name, rc ? err.msg : "");
            abort();
        }
        free(back);
    }
    for (int j = 0; j < f->nmeta; j++) {
        const char *v = clef_st_meta_get(&g, f->meta[j].key);
        if (!v || strcmp(v, f->meta[j].value) != 0) {
            fprintf(stderr,
                    "fuzz: metadata \"%s\" changed on the round "
                    "trip\n",
                    f->meta[j].key);
            abort();
        }
    }
    clef_st_close(&g);
    free(e);
}

static int one_input(const uint8_t *data, size_t size)
{
    char path[4096], out[4096];
    fz_path(path, "input.safetensors");
    fz_path(out, "roundtrip.safetensors");
    if (fz_write(path, data, size))
        abort();
    clef_st_file f;
    clef_err err = {0};
    int orc = clef_st_open(path, &f, &err);
    if (fz_verbose())
        fprintf(stderr, "clef_st_open: %s\n", orc ? err.msg : "ok");
    if (orc != 0) {
        if (err.code != CLEF_ERR_INPUT || !err.msg[0]) {
            fprintf(stderr,
                    "fuzz: rejected without an input error (code %d,"
                    " \"%s\")\n",
                    err.code, err.msg);
            abort();
        }
        return 0;
    }
    void **vals = calloc((size_t)f.ntensors + 1, sizeof(void *));
    for (int i = 0; i < f.ntensors; i++) {
        const clef_st_tensor *t = &f.tensors[i];
        if (clef_st_find(&f, t->name) != t) {
            fprintf(stderr, "fuzz: clef_st_find(\"%s\") is not tensor %d\n",
                    t->name, i);
            abort();
        }
        void *buf = malloc(t->numel * 4 + 1);
        int rc = is_float(t->dtype) ? clef_st_read_f32(&f, t, buf, i & 1, &err)
                                    : clef_st_read_i32(&f, t, buf, &err);
        if (rc == 0 && i < MAX_ROUNDTRIP) {
            if (is_float(t->dtype)) { // NaN payloads: compare bits later
                float *v = buf;
                for (size_t j = 0; j < t->numel; j++)
                    if (isnan(v[j]))
                        v[j] = 0;
            }
            vals[i] = buf;
        } else {
            free(buf);
        }
    }
    for (int i = 0; i < f.nmeta; i++)
        if (clef_st_meta_get(&f, f.meta[i].key) == NULL) {
            fprintf(stderr, "fuzz: metadata key \"%s\" not found\n",
                    f.meta[i].key);
            abort();
        }
    clef_st_find(&f, "");
    clef_st_meta_get(&f, "format");
    roundtrip(&f, vals, out);
    for (int i = 0; i < f.ntensors; i++)
        free(vals[i]);
    free(vals);
    clef_st_close(&f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input(data, size);
    fz_release_tmpdir();
    return 0;
}

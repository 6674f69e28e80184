// safetensors reader and writer (core/safetensors.c, FORMATS.md).
//
// Files of every dtype are made by a tiny writer in this file (the public
// writer writes F32, BF16 and I32 only), so the reader is checked against
// bytes it did not produce. Broken files each must be rejected with their own rule.
#include <criterion/criterion.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"
#include "util_package.h"

// ---- helpers ----

// A fresh temporary folder per test (tests may run in parallel processes).
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

// Writes u64 LE `claim` | header bytes | data bytes, exactly as given.
static void raw_write_claim(const char *path, uint64_t claim,
                            const char *header, const void *data, size_t ndata)
{
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(claim >> (8 * i));
    fwrite(len, 1, 8, fp);
    fwrite(header, 1, strlen(header), fp);
    if (ndata)
        fwrite(data, 1, ndata, fp);
    fclose(fp);
}

static void raw_write(const char *path, const char *header, const void *data,
                      size_t ndata)
{
    raw_write_claim(path, strlen(header), header, data, ndata);
}

// Opens a file that must be rejected; the message must name the file and
// contain every one of the given fragments.
static void expect_reject(const char *path, const char *frag1,
                          const char *frag2)
{
    clef_st_file f;
    clef_err err = {0};
    int rc = clef_st_open(path, &f, &err);
    cr_assert_eq(rc, CLEF_ERR_INPUT, "expected rejection, got rc %d", rc);
    cr_assert_eq(err.code, CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, path), "no file in: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, frag1), "no '%s' in: %s", frag1,
                       err.msg);
    if (frag2)
        cr_assert_not_null(strstr(err.msg, frag2), "no '%s' in: %s", frag2,
                           err.msg);
    cr_assert_null(f.bytes, "a rejected file must be closed");
    cr_assert_eq(f.ntensors, 0);
}

// Independent half-precision references (ldexp, not bit tricks).
static float ref_f16(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (float)(s ? -v : v);
}

static float ref_bf16(uint16_t h)
{
    int s = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
    double v;
    if (e == 0xff)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -133);
    else
        v = ldexp(128 + m, e - 134);
    return (float)(s ? -v : v);
}

static uint32_t f32_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    return b;
}

// ---- conversions ----

Test(safetensors, f16_all_values_exact)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float got = clef_f16_to_f32((uint16_t)h), want = ref_f16((uint16_t)h);
        if (isnan(want)) {
            cr_assert(isnan(got), "f16 %04x: want NaN", h);
            // the payload survives: the 10 mantissa bits sit on top
            cr_assert_eq((f32_bits(got) >> 13) & 0x3ff, h & 0x3ff,
                         "f16 %04x: NaN payload lost", h);
            cr_assert_eq(f32_bits(got) >> 31, h >> 15);
        } else {
            cr_assert_eq(f32_bits(got), f32_bits(want),
                         "f16 %04x: got %a want %a", h, got, want);
        }
    }
}

Test(safetensors, bf16_all_values_exact)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float got = clef_bf16_to_f32((uint16_t)h);
        float want = ref_bf16((uint16_t)h);
        if (isnan(want))
            cr_assert(isnan(got) && f32_bits(got) == h << 16,
                      "bf16 %04x: NaN bits", h);
        else
            cr_assert_eq(f32_bits(got), f32_bits(want),
                         "bf16 %04x: got %a want %a", h, got, want);
    }
}

// ---- reading every dtype ----

Test(safetensors, read_every_dtype)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "all.safetensors");
    // data section, tensor by tensor (offsets below)
    float f32[3] = {1.5f, -0.0f, 3.0e-40f}; // a float32 subnormal
    uint16_t f16[6] = {0x3c00, 0x0001, 0x03ff, 0x7bff, 0x8000, 0xfc00};
    uint16_t bf16[3] = {0x3f80, 0x0001, 0xc2f7};
    // 0.1 rounds; 1+2^-24 is a tie (-> 1, even); 1+3*2^-24 ties up to even
    double f64[4] = {0.1, 1.0 + ldexp(1, -24), 1.0 + 3 * ldexp(1, -24), -2.5};
    int32_t i32[2] = {-7, 2147483647};
    int64_t i64[3] = {-2147483648LL, 0, 5};
    uint8_t data[12 + 12 + 6 + 32 + 8 + 24];
    size_t o = 0;
    memcpy(data + o, f32, 12), o += 12;
    memcpy(data + o, f16, 12), o += 12;
    memcpy(data + o, bf16, 6), o += 6;
    memcpy(data + o, f64, 32), o += 32;
    memcpy(data + o, i32, 8), o += 8;
    memcpy(data + o, i64, 24), o += 24;
    cr_assert_eq(o, sizeof(data));
    raw_write(
        p,
        "{\"__metadata__\":{\"k\":\"v\"},"
        "\"f32\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
        "\"f16\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[12,24]},"
        "\"bf16\":{\"dtype\":\"BF16\",\"shape\":[3,1],\"data_offsets\":[24,30]}"
        ","
        "\"f64\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[30,62]},"
        "\"i32\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[62,70]},"
        "\"i64\":{\"dtype\":\"I64\",\"shape\":[1,3,1],\"data_offsets\":[70,94]}"
        ","
        "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[94,94]}"
        "}",
        data, sizeof(data));

    clef_st_file f;
    clef_err err = {0};
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.ntensors, 7);
    cr_assert_str_eq(f.tensors[0].name, "f32"); // header order kept
    cr_assert_str_eq(f.tensors[6].name, "empty");
    cr_assert_str_eq(clef_st_meta_get(&f, "k"), "v");
    cr_assert_null(clef_st_meta_get(&f, "nope"));
    cr_assert_null(clef_st_find(&f, "nope"));

    float out[6];
    const clef_st_tensor *t = clef_st_find(&f, "f32");
    cr_assert_eq(clef_st_read_f32(&f, t, out, 1, &err), 0, "%s", err.msg);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(f32_bits(out[i]), f32_bits(f32[i]));

    t = clef_st_find(&f, "f16");
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[0], 2);
    cr_assert_eq(t->shape[1], 3);
    cr_assert_eq(t->numel, 6);
    // -Inf is there: with require_finite it must be refused, element 5
    cr_assert_eq(clef_st_read_f32(&f, t, out, 1, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor f16"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "element 5"), "%s", err.msg);
    cr_assert_eq(clef_st_read_f32(&f, t, out, 0, &err), 0, "%s", err.msg);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(f32_bits(out[i]), f32_bits(ref_f16(f16[i])), "f16[%d]", i);
    cr_assert_eq(out[1], ldexpf(1, -24)); // smallest subnormal
    cr_assert_eq(out[3], 65504.0f);

    t = clef_st_find(&f, "bf16");
    cr_assert_eq(clef_st_read_f32(&f, t, out, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(out[0], 1.0f);
    cr_assert_eq(out[1], ldexpf(1, -133));
    cr_assert_eq(out[2], -123.5f);

    t = clef_st_find(&f, "f64");
    cr_assert_eq(clef_st_read_f32(&f, t, out, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(out[0], 0.1f);
    cr_assert_eq(out[1], 1.0f);
    cr_assert_eq(out[2], 1.0f + ldexpf(1, -22));
    cr_assert_eq(out[3], -2.5f);

    int32_t iout[3];
    t = clef_st_find(&f, "i32");
    cr_assert_eq(clef_st_read_i32(&f, t, iout, &err), 0, "%s", err.msg);
    cr_assert_eq(iout[0], -7);
    cr_assert_eq(iout[1], 2147483647);
    t = clef_st_find(&f, "i64");
    cr_assert_eq(t->ndim, 3);
    cr_assert_eq(clef_st_read_i32(&f, t, iout, &err), 0, "%s", err.msg);
    cr_assert_eq(iout[0], INT32_MIN);
    cr_assert_eq(iout[1], 0);
    cr_assert_eq(iout[2], 5);

    t = clef_st_find(&f, "empty");
    cr_assert_eq(t->numel, 0);

    // wrong kind of dtype for the call
    cr_assert_eq(clef_st_read_f32(&f, clef_st_find(&f, "i32"), out, 1, &err),
                 CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "not a float dtype"), "%s", err.msg);
    cr_assert_eq(clef_st_read_i32(&f, clef_st_find(&f, "f32"), iout, &err),
                 CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "not an integer dtype"), "%s", err.msg);
    clef_st_close(&f);
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, scalar_shape_and_i64_range)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "s.safetensors");
    uint8_t data[12];
    float s = -4.25f;
    int64_t big = 2147483648LL;
    memcpy(data, &s, 4);
    memcpy(data + 4, &big, 8);
    raw_write(
        p,
        "{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
        "\"big\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[4,12]}}",
        data, sizeof(data));
    clef_st_file f;
    clef_err err = {0};
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    const clef_st_tensor *t = clef_st_find(&f, "s");
    cr_assert_eq(t->ndim, 0);
    cr_assert_eq(t->numel, 1);
    float x = 0;
    cr_assert_eq(clef_st_read_f32(&f, t, &x, 1, &err), 0);
    cr_assert_eq(x, -4.25f);
    int32_t i;
    cr_assert_eq(clef_st_read_i32(&f, clef_st_find(&f, "big"), &i, &err),
                 CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor big"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "does not fit in int32"), "%s", err.msg);
    clef_st_close(&f);
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, find_among_many)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "many.safetensors");
    enum { N = 500 };
    static char names[N][16];
    static float vals[N];
    clef_st_entry e[N];
    for (int i = 0; i < N; i++) {
        // names deliberately not in sorted order
        snprintf(names[i], sizeof(names[i]), "t%d", (i * 7919) % N);
        vals[i] = (float)i;
        e[i] = (clef_st_entry){names[i], CLEF_DT_F32, 0, {0}, &vals[i]};
    }
    clef_err err = {0};
    cr_assert_eq(clef_st_write(p, e, N, NULL, 0, &err), 0, "%s", err.msg);
    clef_st_file f;
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.ntensors, N);
    for (int i = 0; i < N; i++) {
        const clef_st_tensor *t = clef_st_find(&f, names[i]);
        cr_assert_not_null(t, "%s not found", names[i]);
        cr_assert_str_eq(t->name, names[i]);
        cr_assert_eq(t, &f.tensors[i]);
        float x;
        clef_st_read_f32(&f, t, &x, 1, &err);
        cr_assert_eq(x, vals[i]);
    }
    clef_st_close(&f);
    free(p);
    tp_rmdir(dir);
}

// ---- the public writer ----

Test(safetensors, write_round_trip_bit_exact)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "w.safetensors");
    float a[6] = {1.0f, -2.0f, NAN, INFINITY, 1e-45f, -0.0f};
    float s = 0.125f;
    int32_t ids[4] = {3, -1, 0, 2147483647};
    clef_st_entry e[3] = {
        {"b.weight", CLEF_DT_F32, 2, {2, 3}, a},
        {"a.scalar", CLEF_DT_F32, 0, {0}, &s},
        {"ids", CLEF_DT_I32, 1, {4}, ids},
    };
    clef_st_meta meta[2] = {{"format", "clef-head/1"}, {"x", "{\"y\": 1}"}};
    clef_err err = {0};
    cr_assert_eq(clef_st_write(p, e, 3, meta, 2, &err), 0, "%s", err.msg);
    cr_assert_eq(dir_count(dir), 1, "temporary file left behind");

    clef_st_file f;
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.data_start % 8, 0, "header not padded to 8");
    cr_assert_eq(f.ntensors, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_str_eq(f.tensors[i].name, e[i].name); // given order
    // offsets contiguous from 0 to the end of the file
    cr_assert_eq(f.tensors[0].begin, 0);
    cr_assert_eq(f.tensors[1].begin, f.tensors[0].end);
    cr_assert_eq(f.tensors[2].begin, f.tensors[1].end);
    cr_assert_eq(f.data_start + f.tensors[2].end, f.size);
    cr_assert_eq(f.tensors[1].ndim, 0);
    cr_assert_eq(f.tensors[2].dtype, CLEF_DT_I32);
    cr_assert_str_eq(clef_st_meta_get(&f, "format"), "clef-head/1");
    cr_assert_str_eq(clef_st_meta_get(&f, "x"), "{\"y\": 1}");

    float out[6];
    cr_assert_eq(clef_st_read_f32(&f, &f.tensors[0], out, 0, &err), 0);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(f32_bits(out[i]), f32_bits(a[i]), "a[%d]", i);
    cr_assert_eq(clef_st_read_f32(&f, &f.tensors[1], out, 1, &err), 0);
    cr_assert_eq(out[0], s);
    int32_t iout[4];
    cr_assert_eq(clef_st_read_i32(&f, &f.tensors[2], iout, &err), 0);
    cr_assert_eq(memcmp(iout, ids, sizeof(ids)), 0);
    // the NaN is refused when finite values are required
    cr_assert_eq(clef_st_read_f32(&f, &f.tensors[0], out, 1, &err),
                 CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor b.weight"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "element 2 is NaN"), "%s", err.msg);
    clef_st_close(&f);
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, write_is_atomic_and_leaves_nothing_on_error)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "w.safetensors");
    float a[2] = {1, 2}, b[3] = {3, 4, 5};
    clef_err err = {0};
    clef_st_entry e1 = {"a", CLEF_DT_F32, 1, {2}, a};
    cr_assert_eq(clef_st_write(p, &e1, 1, NULL, 0, &err), 0, "%s", err.msg);
    // overwrite: the new file replaces the old one, no temporary remains
    clef_st_entry e2 = {"b", CLEF_DT_F32, 1, {3}, b};
    cr_assert_eq(clef_st_write(p, &e2, 1, NULL, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(dir_count(dir), 1);
    clef_st_file f;
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.ntensors, 1);
    cr_assert_str_eq(f.tensors[0].name, "b");
    clef_st_close(&f);

    // bad entries: refused before anything is created
    char *q = path_in(dir, "bad.safetensors");
    clef_st_entry bad_dt = {"h", CLEF_DT_F16, 1, {2}, a};
    cr_assert_eq(clef_st_write(q, &bad_dt, 1, NULL, 0, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor h"), "%s", err.msg);
    clef_st_entry dup[2] = {e1, e1};
    cr_assert_eq(clef_st_write(q, dup, 2, NULL, 0, &err), CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "duplicate"), "%s", err.msg);
    clef_st_entry neg = {"n", CLEF_DT_F32, 1, {-1}, a};
    cr_assert_eq(clef_st_write(q, &neg, 1, NULL, 0, &err), CLEF_ERR_INPUT);
    cr_assert_eq(dir_count(dir), 1, "a refused write left a file");

    // an unwritable target: error, no temporary left anywhere
    char *r = path_in(dir, "missing-folder/x.safetensors");
    cr_assert_eq(clef_st_write(r, &e1, 1, NULL, 0, &err), CLEF_ERR_RUN);
    cr_assert_not_null(strstr(err.msg, r), "%s", err.msg);
    cr_assert_eq(dir_count(dir), 1);
    free(r);
    free(q);
    free(p);
    tp_rmdir(dir);
}

// ---- the golden weights ----

Test(safetensors, golden_weights_open)
{
    const char *p = CLEF_TEST_DATA "/golden/tiny/weights.safetensors";
    clef_st_file f;
    clef_err err = {0};
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.ntensors, 122);
    cr_assert_str_eq(f.tensors[0].name, "prior_logit_scale");
    cr_assert_str_eq(f.tensors[121].name, "residual_scorer.3.bias");
    cr_assert_str_eq(clef_st_meta_get(&f, "format"), "clef-head/1");
    size_t total = 0;
    for (int i = 0; i < f.ntensors; i++) {
        cr_assert_eq(f.tensors[i].dtype, CLEF_DT_F32);
        total += f.tensors[i].numel;
    }
    cr_assert_eq(total, 5596);
    const clef_st_tensor *t = clef_st_find(&f, "memory_projection.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[0], 8);
    cr_assert_eq(t->shape[1], 8);
    clef_st_close(&f);
}

// ---- the catalogue of broken files ----

// One broken file per test: header JSON, data size, expected fragments.
static void broken(const char *name, const char *header, size_t ndata,
                   const char *frag1, const char *frag2)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, name);
    uint8_t *data = calloc(ndata ? ndata : 1, 1);
    raw_write(p, header, data, ndata);
    expect_reject(p, frag1, frag2);
    free(data);
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, reject_truncated_file)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "short.safetensors");
    FILE *fp = fopen(p, "wb");
    fwrite("\x10\0\0", 1, 3, fp);
    fclose(fp);
    expect_reject(p, "shorter than the 8-byte header length", "header");
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, reject_header_length_past_end)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "past.safetensors");
    raw_write_claim(p, 4096, "{}", NULL, 0);
    expect_reject(p, "runs past the end of the file", "4096");
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, reject_header_over_100mb)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "huge.safetensors");
    raw_write_claim(p, 100000001ULL, "{}", NULL, 0);
    expect_reject(p, "exceeds the 100 MB limit", "100000001");
    free(p);
    tp_rmdir(dir);
}

Test(safetensors, reject_data_cut_short)
{
    // a valid header whose data was truncated
    broken("cut.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
           12, "tensor a", "past the data section");
}

Test(safetensors, reject_offsets_out_of_data_section)
{
    broken("out.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
           8, "tensor b", "past the data section");
}

Test(safetensors, reject_overlapping_offsets)
{
    broken("overlap.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
           12, "tensor b", "overlap tensor a");
}

Test(safetensors, reject_size_mismatch)
{
    broken("size.safetensors",
           "{\"a\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,8]}}",
           8, "tensor a", "size mismatch");
}

Test(safetensors, reject_duplicate_name)
{
    broken("dup.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
           "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
           8, "duplicate object key", "\"a\"");
}

Test(safetensors, reject_unknown_dtype)
{
    broken(
        "dtype.safetensors",
        "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}",
        4, "tensor a", "unknown dtype F8_E4M3");
}

Test(safetensors, reject_begin_after_end)
{
    broken("order.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}",
           8, "tensor a", "begin > end");
}

Test(safetensors, reject_missing_field)
{
    broken("missing.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}",
           4, "tensor a", "missing data_offsets");
}

Test(safetensors, reject_negative_dim)
{
    broken("neg.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
           4, "tensor a", "shape[0] must be an integer >= 0");
}

Test(safetensors, reject_invalid_json)
{
    broken("json.safetensors", "{\"a\": [1, 2", 0, "field header",
           "invalid JSON");
}

Test(safetensors, reject_bad_metadata)
{
    broken("meta.safetensors", "{\"__metadata__\":{\"step\":3}}", 0,
           "field header", "value of \"step\" must be a string");
}

Test(safetensors, reject_nan_with_require_finite)
{
    char *dir = tmpdir_new();
    char *p = path_in(dir, "nan.safetensors");
    // F32 [1, 0, NaN] and BF16 [+Inf]
    float v[3] = {1.0f, 0.0f, NAN};
    uint16_t inf = 0x7f80;
    uint8_t data[14];
    memcpy(data, v, 12);
    memcpy(data + 12, &inf, 2);
    raw_write(
        p,
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
        "\"g\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[12,14]}}",
        data, sizeof(data));
    clef_st_file f;
    clef_err err = {0};
    cr_assert_eq(clef_st_open(p, &f, &err), 0, "%s", err.msg);
    float out[3];
    cr_assert_eq(clef_st_read_f32(&f, clef_st_find(&f, "w"), out, 1, &err),
                 CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, p), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "tensor w"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "element 2 is NaN"), "%s", err.msg);
    cr_assert_eq(clef_st_read_f32(&f, clef_st_find(&f, "g"), out, 1, &err),
                 CLEF_ERR_INPUT);
    cr_assert_not_null(strstr(err.msg, "tensor g: element 0 is Inf"), "%s",
                       err.msg);
    clef_st_close(&f);
    free(p);
    tp_rmdir(dir);
}

// Suite package: the package reader and preparation (core/package.c) and
// SHA-256 (core/sha256.c), in process.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "package.h"
#include "safetensors.h"
#include "util_package.h"

#define GOLDEN CLEF_TEST_DATA "/golden/tiny/package.json"

Test(package, sha256_known_vectors)
{
    char hex[CLEF_SHA256_HEX];
    cr_assert_eq(clef_sha256_hex("", 0, hex), 0);
    cr_expect_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb924"
                          "27ae41e4649b934ca495991b7852b855");
    cr_assert_eq(clef_sha256_hex("abc", 3, hex), 0);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223"
                          "b00361a396177a9cb410ff61f20015ad");
    cr_expect(clef_sha256_equal(hex, "BA7816BF8F01CFEA414140DE5DAE2223"
                                     "B00361A396177A9CB410FF61F20015AD"));
    cr_expect(!clef_sha256_equal(hex, "ba7816bf"));
    cr_expect(!clef_sha256_is_hex("g3b0c44298fc1c149afbf4c8996fb924"
                                  "27ae41e4649b934ca495991b7852b855"));
}

Test(package, path_rule)
{
    const char *ok[] = {
        "a.safetensors", "sub/a.safetensors", "./a", "a..b", "..a/b", "a/b.."};
    const char *bad[] = {"",       "/etc/passwd", "..",      "../a",
                         "a/../b", "a/..",        "a/./../b"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
        cr_expect(clef_package_path_ok(ok[i]), "\"%s\" should pass", ok[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        cr_expect(!clef_package_path_ok(bad[i]), "\"%s\" should fail", bad[i]);
}

Test(package, record_id_rule)
{
    char longest[130];
    memset(longest, 'a', 128);
    longest[128] = '\0';
    cr_expect(clef_package_id_ok("record-0"));
    cr_expect(clef_package_id_ok("A.b_c-9"));
    cr_expect(clef_package_id_ok(longest));
    longest[128] = 'a';
    longest[129] = '\0';
    cr_expect(!clef_package_id_ok(longest), "129 characters");
    cr_expect(!clef_package_id_ok(""));
    cr_expect(!clef_package_id_ok("a b"));
    cr_expect(!clef_package_id_ok("a/b"));
    cr_expect(!clef_package_id_ok("caf\xc3\xa9"));
}

Test(package, golden_loads)
{
    clef_package p;
    clef_err err = {0};
    int rc = clef_package_read(GOLDEN, NULL, &p, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_expect_eq(p.cfg.d, 8);
    cr_expect_eq(p.cfg.R, 2);
    cr_expect_eq(p.cfg.L, 4);
    cr_expect_eq(p.V, 16);
    cr_assert_eq(p.nrecords, 1);
    const clef_record *r = &p.records[0];
    cr_expect_str_eq(r->id, "golden-0");
    cr_expect_eq(r->split, CLEF_SPLIT_TRAIN);
    cr_expect_eq(r->T, 12);
    cr_expect_eq(r->Q, 3);
    cr_expect_eq(r->O, 7);
    int off[4] = {0, 2, 5, 7};
    for (int q = 0; q < 4; q++)
        cr_expect_eq(r->opt_off[q], off[q]);
    cr_expect_eq(r->qtype[0], CLEF_QTYPE_NOUL);
    cr_expect_eq(r->qtype[1], CLEF_QTYPE_SCORE);
    cr_expect_eq(r->qtype[2], CLEF_QTYPE_CHOICE);
    cr_expect_eq(r->label[0], 0);
    cr_expect_eq(r->label[1], 1);
    cr_expect_eq(r->label[2], -1, "soft target: no label");
    float y[7] = {1, 0, 0, 1, 0, 0.3f, 0.7f};
    for (int o = 0; o < 7; o++)
        cr_expect_eq(r->target[o], y[o], "target[%d]", o);
    cr_expect_str_eq(r->oid[6], "b");
    cr_expect_str_eq(r->qid[2], "q2");
    cr_expect_null(r->xhat, "read only: records are not prepared");
    cr_expect_eq(p.prepared, 0);
    cr_assert_eq(clef_package_prepare(&p, &clef_scalar_kernels, &err), 0, "%s",
                 err.msg);
    cr_expect_not_null(r->xhat, "records are prepared");
    cr_expect_eq(p.prepared, 1);
    cr_expect(p.provenance && strstr(p.provenance, "deterministic"));
    // the pinned manifest hash is the hash of the file's bytes
    char hex[CLEF_SHA256_HEX];
    cr_assert_eq(clef_sha256_file(GOLDEN, hex, NULL), 0);
    cr_expect_str_eq(p.sha256, hex);
    clef_package_free(&p);
    rc = clef_package_read(GOLDEN, hex, &p, &err);
    cr_expect_eq(rc, 0, "pinning the right hash reads: %s", err.msg);
    clef_package_free(&p);
}

// Decodes F16 / BF16 bits independently of core/safetensors.c.
static float f16_bits(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e ? ldexpf((float)(m | 1024), e - 25) : ldexpf((float)m, -24);
    return (h & 0x8000) ? -v : v;
}

static float bf16_bits(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

Test(package, mixed_geometry_and_half_precision)
{
    char *dir = tp_tmpdir();
    cr_assert_not_null(dir);
    cr_assert_eq(tp_write_mixed_package(dir), 0);
    char path[4096];
    snprintf(path, sizeof(path), "%s/package.json", dir);
    clef_package p;
    clef_err err = {0};
    int rc = clef_package_read(path, NULL, &p, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(p.nrecords, 6);
    cr_expect_eq(p.nsplit[0], 4);
    cr_expect_eq(p.nsplit[1], 1);
    cr_expect_eq(p.nsplit[2], 1);
    cr_expect_eq(p.Tmax, 12);
    cr_expect_eq(p.Qmax, 3);
    cr_expect_eq(p.Omax, 7);
    // F16 (m-1, shard 0) and BF16 (m-2, shard 1) hidden states, bit exact
    const char *ids[2] = {"m-1", "m-2"};
    for (int k = 0; k < 2; k++) {
        int i = clef_package_find(&p, ids[k]);
        cr_assert_geq(i, 0);
        const clef_record *r = &p.records[i];
        snprintf(path, sizeof(path), "%s/records-%03d.safetensors", dir, k);
        size_t n, b, e;
        uint8_t *bytes = (uint8_t *)tp_slurp(path, &n);
        char name[64];
        snprintf(name, sizeof(name), "%s/hidden", ids[k]);
        cr_assert_eq(tp_st_locate(bytes, n, name, &b, &e), 0);
        cr_assert_eq(e - b, (size_t)r->T * r->d * 2);
        for (int j = 0; j < r->T * r->d; j++) {
            uint16_t h;
            memcpy(&h, bytes + b + 2 * j, 2);
            float want = k == 0 ? f16_bits(h) : bf16_bits(h);
            cr_expect_eq(r->H[j], want, "%s hidden[%d]", ids[k], j);
        }
        free(bytes);
    }
    // the test record's second question has no target
    const clef_record *t = &p.records[5];
    cr_expect_eq(t->split, CLEF_SPLIT_TEST);
    cr_expect_eq(t->has_target[0], 1);
    cr_expect_eq(t->has_target[1], 0);
    clef_package_free(&p);
    tp_rmdir(dir);
}

// Every case of the catalogue fails in process with its own message.
Test(package, broken_catalogue, .timeout = 60)
{
    char *dir = tp_tmpdir();
    cr_assert_not_null(dir);
    char base[1024];
    snprintf(base, sizeof(base), "%s/base", dir);
    cr_assert_eq(tp_fixture(base), 0, "clef fixture");
    char path[4096];
    snprintf(path, sizeof(path), "%s/package.json", base);
    clef_package p;
    clef_err err = {0};
    cr_assert_eq(clef_package_read(path, NULL, &p, &err), 0,
                 "the unbroken fixture reads: %s", err.msg);
    clef_package_free(&p);
    for (int c = 0; c < tp_nbroken; c++) {
        const tp_broken *bc = &tp_broken_cases[c];
        char pdir[1100];
        snprintf(pdir, sizeof(pdir), "%s/case-%02d", dir, c);
        cr_assert_eq(tp_copy_dir(base, pdir), 0);
        cr_assert_eq(bc->make(pdir), 0, "%s: cannot build the case", bc->name);
        snprintf(path, sizeof(path), "%s/package.json", pdir);
        memset(&err, 0, sizeof(err));
        int rc = clef_package_read(path, bc->pin, &p, &err);
        cr_expect_eq(rc, CLEF_ERR_INPUT, "%s: rc %d (%s)", bc->name, rc,
                     err.msg);
        if (rc == 0)
            clef_package_free(&p);
        for (int k = 0; k < 4 && bc->expect[k]; k++)
            cr_expect(strstr(err.msg, bc->expect[k]) != NULL,
                      "%s: message \"%s\" lacks \"%s\"", bc->name, err.msg,
                      bc->expect[k]);
    }
    tp_rmdir(dir);
}

// The four kernels record preparation runs, counted: reading runs none of
// them (it takes no kernel table), preparing runs each once per record
// (span_mean three times) and gives the scalar table's bits.
static int n_layernorm, n_span_mean, n_gather, n_normalize;

static void count_layernorm(int rows, int n, const float *x, const float *g,
                            const float *b, float *y, float *xhat, float *rstd)
{
    n_layernorm++;
    clef_scalar_kernels.layernorm_fwd(rows, n, x, g, b, y, xhat, rstd);
}

static void count_span_mean(int nspan, const int *spans, int n, const float *X,
                            float *Y)
{
    n_span_mean++;
    clef_scalar_kernels.span_mean(nspan, spans, n, X, Y);
}

static void count_gather(int nidx, const int *idx, int n, const float *X,
                         float *Y)
{
    n_gather++;
    clef_scalar_kernels.gather_rows(nidx, idx, n, X, Y);
}

static void count_normalize(int rows, int n, float eps, const float *x,
                            float *y, float *nrm)
{
    n_normalize++;
    clef_scalar_kernels.normalize_fwd(rows, n, eps, x, y, nrm);
}

static void expect_unprepared(const clef_package *p)
{
    cr_expect_eq(p->prepared, 0);
    for (int i = 0; i < p->nrecords; i++) {
        const clef_record *r = &p->records[i];
        cr_expect(!r->xhat && !r->qvhat && !r->ctxhat && !r->lex && !r->lhat &&
                      !r->is_score,
                  "%s: read computed a per-record constant", r->id);
        cr_expect_not_null(r->H, "%s: hidden states are read", r->id);
    }
}

static int same_floats(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

Test(package, read_runs_no_kernel)
{
    char *dir = tp_tmpdir();
    cr_assert_not_null(dir);
    cr_assert_eq(tp_write_mixed_package(dir), 0);
    char path[4096];
    snprintf(path, sizeof(path), "%s/package.json", dir);
    clef_kernels k = clef_scalar_kernels;
    k.layernorm_fwd = count_layernorm;
    k.span_mean = count_span_mean;
    k.gather_rows = count_gather;
    k.normalize_fwd = count_normalize;
    clef_package p, ref;
    clef_err err = {0};
    cr_assert_eq(clef_package_read(path, NULL, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_package_read(path, NULL, &ref, &err), 0, "%s", err.msg);
    expect_unprepared(&p);
    cr_expect_eq(n_layernorm + n_span_mean + n_gather + n_normalize, 0);
    cr_assert_eq(clef_package_prepare(&p, &k, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_package_prepare(&ref, &clef_scalar_kernels, &err), 0,
                 "%s", err.msg);
    cr_expect_eq(p.prepared, 1);
    cr_expect_eq(n_layernorm, p.nrecords);
    cr_expect_eq(n_span_mean, 3 * p.nrecords);
    cr_expect_eq(n_gather, p.nrecords);
    cr_expect_eq(n_normalize, p.nrecords);
    for (int i = 0; i < p.nrecords; i++) {
        const clef_record *a = &p.records[i], *b = &ref.records[i];
        size_t d = (size_t)a->d;
        cr_expect(same_floats(a->xhat, b->xhat, (size_t)a->T * d), "%s", a->id);
        cr_expect(same_floats(a->qvhat, b->qvhat, (size_t)a->Q * d));
        cr_expect(same_floats(a->ctxhat, b->ctxhat, (size_t)a->O * d));
        cr_expect(same_floats(a->lhat, b->lhat, (size_t)a->O * d));
    }
    clef_package_free(&p);
    clef_package_free(&ref);
    tp_rmdir(dir);
}

// Auto selection (scheduler/tune.h): shape classes, the tuning file (round
// trip, atomic write, every rejection names its field), and the choices auto
// makes with and without one: built-in order, ISA cap, a generic BLIS, a file
// from another CPU, a tuned backend that cannot run, per-class trampolines.
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/onednn/onednn.h"
#include "scheduler/registry.h"
#include "backends/scalar/scalar.h"
#include "cpu/cpu.h"
#include "scheduler/tune.h"
#include "util.h"

// A fresh directory under /tmp for one test.
static void tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/clef-tune-test-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

static void rmtree(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static clef_auto_facts facts_here(void)
{
    clef_auto_facts f;
    clef_auto_facts_detect(&f);
    return f;
}

// ---- shape classes ----
Test(tune, shape_classes_split_at_their_thresholds)
{
    cr_expect_eq(clef_shape_class_of(CLEF_OP_gemm_nt, 2097151),
                 CLEF_CLASS_SMALL);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_gemm_nt, 2097152),
                 CLEF_CLASS_MEDIUM);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_gemm_nt, 1073741823.0),
                 CLEF_CLASS_MEDIUM);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_gemm_nt, 1073741824.0),
                 CLEF_CLASS_LARGE);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_bias_add, 16383),
                 CLEF_CLASS_SMALL);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_bias_add, 16384),
                 CLEF_CLASS_MEDIUM);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_adamw, 1048576), CLEF_CLASS_LARGE);
    // the mid and released GEMMs of the issue
    cr_expect_eq(clef_shape_class_of(CLEF_OP_gemm_nt, 2.0 * 256 * 512 * 1024),
                 CLEF_CLASS_MEDIUM);
    cr_expect_eq(clef_shape_class_of(CLEF_OP_gemm_nt, 2.0 * 512 * 1024 * 5120),
                 CLEF_CLASS_LARGE);
    for (int c = 0; c < CLEF_CLASS_COUNT; c++)
        cr_expect_eq(
            clef_shape_class_parse(clef_shape_class_name((clef_shape_class)c)),
            c);
    cr_expect_eq(clef_shape_class_parse("huge"), -1);
}

// ---- the tuning file ----
static clef_tuning sample_tuning(void)
{
    clef_tuning t;
    memset(&t, 0, sizeof t);
    snprintf(t.cpu, sizeof t.cpu, "%s", clef_cpu_get()->model);
    clef_tune_cpu_hash(t.cpu_hash);
    snprintf(t.blis_arch, sizeof t.blis_arch, "zen3");
    t.threads = 2;
    t.e[CLEF_OP_gemm_nt][CLEF_CLASS_SMALL] =
        (clef_tune_entry){1, "scalar", 1.5e-6};
    t.e[CLEF_OP_gemm_nt][CLEF_CLASS_LARGE] =
        (clef_tune_entry){1, "onednn", 0.03125};
    t.e[CLEF_OP_adamw][CLEF_CLASS_MEDIUM] = (clef_tune_entry){1, "avx2", 0.25};
    return t;
}

Test(tune, tuning_file_round_trip_creates_directories_atomically)
{
    char dir[64], path[160], err[512];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/a/b/tune.json", dir);
    clef_tuning t = sample_tuning(), u;
    cr_assert_eq(clef_tune_save(path, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(clef_tune_load(path, &u, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(u.cpu, t.cpu);
    cr_expect_str_eq(u.cpu_hash, t.cpu_hash);
    cr_expect_str_eq(u.blis_arch, "zen3");
    cr_expect_eq(u.threads, 2);
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        for (int c = 0; c < CLEF_CLASS_COUNT; c++) {
            cr_expect_eq(u.e[op][c].set, t.e[op][c].set, "%s %d",
                         clef_op_names[op], c);
            if (!t.e[op][c].set)
                continue;
            cr_expect_str_eq(u.e[op][c].backend, t.e[op][c].backend);
            cr_expect_eq(u.e[op][c].time_s, t.e[op][c].time_s);
        }
    // nothing but the file in its directory (the temp file was renamed)
    char ls[256];
    snprintf(ls, sizeof ls, "ls -A %s/a/b | wc -l", dir);
    FILE *p = popen(ls, "r");
    int files = 0;
    cr_assert_eq(fscanf(p, "%d", &files), 1);
    pclose(p);
    cr_expect_eq(files, 1);
    rmtree(dir);
}

Test(tune, default_path_is_in_the_user_cache_dir_per_cpu)
{
    char path[512], hash[17], want[512];
    clef_tune_cpu_hash(hash);
    cr_expect_eq(strlen(hash), 16);
    setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
    cr_assert_eq(clef_tune_default_path(path, sizeof path), 0);
    snprintf(want, sizeof want, "/tmp/xdg-test/clef/tune-%s.json", hash);
    cr_expect_str_eq(path, want);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/tmp/home-test", 1);
    cr_assert_eq(clef_tune_default_path(path, sizeof path), 0);
    snprintf(want, sizeof want, "/tmp/home-test/.cache/clef/tune-%s.json",
             hash);
    cr_expect_str_eq(path, want);
}

// Loads text and expects a rejection whose message names `field`.
static void expect_rejected(const char *dir, const char *text,
                            const char *field)
{
    char path[160], err[512];
    snprintf(path, sizeof path, "%s/bad.json", dir);
    write_text(path, text);
    clef_tuning t;
    cr_expect_eq(clef_tune_load(path, &t, err, sizeof err), -1, "accepted: %s",
                 text);
    cr_expect(strstr(err, path) != NULL, "message names the file: %s", err);
    cr_expect(strstr(err, field) != NULL, "message names %s: %s", field, err);
}

#define HEAD                                                                   \
    "{\"format\": \"clef-tune/1\", \"cpu\": \"x\", \"cpu_hash\": "             \
    "\"0123456789abcdef\", \"blis_arch\": \"zen3\", \"threads\": 2, "

Test(tune, tuning_file_rejections_name_file_field_and_rule)
{
    char dir[64], err[512];
    tmpdir(dir, sizeof dir);
    expect_rejected(dir, "[1, 2]", "top level");
    expect_rejected(dir, "{\"format\": \"clef-tune/9\"}", "format");
    expect_rejected(dir, "{\"format\": \"clef-tune/1\", ", "not valid JSON");
    expect_rejected(
        dir,
        "{\"format\": \"clef-tune/1\", \"cpu\": \"x\", "
        "\"cpu_hash\": \"XYZ\", \"blis_arch\": \"g\", \"threads\": 1, "
        "\"choices\": {}}",
        "cpu_hash");
    expect_rejected(
        dir,
        "{\"format\": \"clef-tune/1\", \"cpu\": \"x\", \"cpu_hash\": "
        "\"0123456789abcdef\", \"blis_arch\": \"g\", \"threads\": 0, "
        "\"choices\": {}}",
        "threads");
    expect_rejected(dir, HEAD "\"choices\": {\"gemm_xx\": {}}}",
                    "choices.gemm_xx");
    expect_rejected(dir, HEAD "\"choices\": {\"gemm_nt\": {\"huge\": {}}}}",
                    "choices.gemm_nt.huge");
    expect_rejected(dir,
                    HEAD "\"choices\": {\"gemm_nt\": {\"small\": {\"backend\": "
                         "\"mkl\", \"time_s\": 1}}}}",
                    "choices.gemm_nt.small.backend");
    expect_rejected(dir,
                    HEAD "\"choices\": {\"gemm_nt\": {\"small\": {\"backend\": "
                         "\"auto\", \"time_s\": 1}}}}",
                    "choices.gemm_nt.small.backend");
    expect_rejected(dir,
                    HEAD "\"choices\": {\"gemm_nt\": {\"small\": {\"backend\": "
                         "\"scalar\", \"time_s\": -1}}}}",
                    "choices.gemm_nt.small.time_s");
    // a missing file: ENOENT, so auto can tell "none" from "broken"
    char path[160];
    snprintf(path, sizeof path, "%s/none.json", dir);
    clef_tuning t;
    errno = 0;
    cr_expect_eq(clef_tune_load(path, &t, err, sizeof err), -1);
    cr_expect_eq(errno, ENOENT);
    rmtree(dir);
}

// ---- auto ----
static clef_auto_choice g_ch[CLEF_OP_COUNT][CLEF_CLASS_COUNT];

Test(tune, builtin_order_without_a_tuning_file)
{
    clef_kernels k;
    clef_auto_facts f = facts_here();
    cr_assert_eq(clef_auto_build(&k, "", &f, g_ch), 0);
    cr_assert_eq(clef_kernels_first_missing(&k), CLEF_OP_COUNT);
    cr_expect_str_eq(k.backend, "auto");
    const clef_backend *best = clef_best_handwritten();
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        for (int c = 0; c < CLEF_CLASS_COUNT; c++)
            cr_expect_eq(g_ch[op][c].source, CLEF_SRC_BUILTIN);
    if (strcmp(best->name, "avx512") == 0) {
        // avx512 heads the order of the f32 ops: every one is hand-written
        // avx512; the bf16 GEMMs take amx, else avx512_bf16, else oneDNN
        for (int op = 0; op < CLEF_OP_COUNT; op++)
            if (!clef_op_is_bf16_gemm((clef_op)op))
                cr_expect_str_eq(g_ch[op][CLEF_CLASS_LARGE].backend->name,
                                 "avx512");
        // medium: the hand-written kernels first (without bf16 arithmetic,
        // avx512's fp32 GEMMs on widened operands); large: oneDNN's bf16
        // matmul before the AVX512-BF16 kernel, never before AMX, and only
        // where the CPU has bf16 arithmetic (else oneDNN emulates it)
        const int amx = !clef_need_amx(), vdp = !clef_need_avx512_bf16();
        const int dnn = !clef_backend_unavailable(clef_backend_find("onednn"));
        const char *mid = amx ? "amx" : vdp ? "avx512_bf16" : "avx512";
        const char *big = amx ? "amx" : dnn && vdp ? "onednn" : mid;
        for (int op = 0; op < CLEF_OP_COUNT; op++) {
            if (!clef_op_is_bf16_gemm((clef_op)op))
                continue;
            cr_expect_str_eq(g_ch[op][CLEF_CLASS_MEDIUM].backend->name, mid,
                             "%s", clef_op_names[op]);
            cr_expect_str_eq(g_ch[op][CLEF_CLASS_LARGE].backend->name, big,
                             "%s", clef_op_names[op]);
        }
        cr_expect_str_eq(k.names[CLEF_OP_gemm_nt],
                         best->table->names[CLEF_OP_gemm_nt]);
    }

    // capped at avx2: oneDNN comes before avx2 for its own ops only, and
    // never for small shapes (its per-call cost dominates there)
    f.max_isa = CLEF_ISA_AVX2;
    f.native_isa = CLEF_ISA_MAX; // what is above AVX2 is the cap's doing
    cr_assert_eq(clef_auto_build(&k, "", &f, g_ch), 0);
    const char *avx2_or_scalar = clef_need_avx2() ? "scalar" : "avx2";
    cr_expect_str_eq(g_ch[CLEF_OP_gemm_nt][CLEF_CLASS_SMALL].backend->name,
                     avx2_or_scalar);
    cr_expect(strstr(g_ch[CLEF_OP_gemm_nt][CLEF_CLASS_SMALL].why,
                     "onednn (per-call overhead on small shapes)"),
              "%s", g_ch[CLEF_OP_gemm_nt][CLEF_CLASS_SMALL].why);
    cr_expect_str_eq(g_ch[CLEF_OP_gemm_nt][CLEF_CLASS_LARGE].backend->name,
                     "onednn");
    cr_expect_str_eq(
        g_ch[CLEF_OP_layernorm_bwd][CLEF_CLASS_LARGE].backend->name, "onednn");
    cr_expect(strstr(k.names[CLEF_OP_gemm_nt], "large onednn") != NULL, "%s",
              k.names[CLEF_OP_gemm_nt]);
    cr_expect_str_eq(g_ch[CLEF_OP_bias_add][CLEF_CLASS_SMALL].backend->name,
                     avx2_or_scalar);
    cr_expect(
        strstr(g_ch[CLEF_OP_gemm_nt][0].why, "avx512 (above CLEF_MAX_ISA)"),
        "%s", g_ch[CLEF_OP_gemm_nt][0].why);
}

// A library's bf16 GEMMs run the CPU's best bf16 unit (oneDNN: AMX where
// it exists), so any CLEF_MAX_ISA below the CPU's own level rules them out.
Test(tune, library_bf16_gemms_only_uncapped)
{
    const clef_backend *dnn = clef_backend_find("onednn");
    if (clef_backend_unavailable(dnn))
        cr_skip_test("onednn: %s", clef_backend_unavailable(dnn));
    clef_auto_facts f = facts_here();
    f.max_isa = f.native_isa = CLEF_ISA_AMX;
    cr_expect_null(clef_auto_why_not(dnn, CLEF_OP_gemm_bf16_nt, 1, &f));
    cr_expect_eq(clef_auto_builtin_rank(CLEF_OP_gemm_bf16_nt, CLEF_CLASS_LARGE,
                                        "onednn"),
                 1);
    cr_expect_gt(clef_auto_builtin_rank(CLEF_OP_gemm_bf16_nt, CLEF_CLASS_MEDIUM,
                                        "onednn"),
                 clef_auto_builtin_rank(CLEF_OP_gemm_bf16_nt, CLEF_CLASS_MEDIUM,
                                        "avx512_bf16"));
    f.max_isa = CLEF_ISA_AVX512_BF16; // an AMX CPU capped below AMX
    const char *why = clef_auto_why_not(dnn, CLEF_OP_gemm_bf16_tn, 1, &f);
    cr_assert_not_null(why);
    cr_expect(strstr(why, "CLEF_MAX_ISA") != NULL, "%s", why);
    // the cap binds only its bf16 GEMMs
    cr_expect_null(clef_auto_why_not(dnn, CLEF_OP_gemm_nt, 1, &f));
    // a CPU without bf16 arithmetic: oneDNN would emulate it
    f.max_isa = f.native_isa = CLEF_ISA_AVX512;
    why = clef_auto_why_not(dnn, CLEF_OP_gemm_bf16_nn, 1, &f);
    cr_assert_not_null(why);
    cr_expect(strstr(why, "no bf16 arithmetic") != NULL, "%s", why);
    const clef_backend *a5 = clef_backend_find("avx512");
    if (!a5 || !a5->table || clef_backend_unavailable(a5))
        return; // no AVX-512 here: the widened kernels are avx2's
    clef_kernels k;
    cr_assert_eq(clef_auto_build(&k, "", &f, g_ch), 0);
    for (int c = 0; c < CLEF_CLASS_COUNT; c++)
        cr_expect_str_eq(g_ch[CLEF_OP_gemm_bf16_nn][c].backend->name, "avx512",
                         "class %d", c);
}

Test(tune, generic_blis_is_routed_around_in_the_builtin_order)
{
    clef_auto_facts f = facts_here();
    const clef_backend *blis = clef_backend_find("blis");
    f.blis_generic = 1;
    const char *why = clef_auto_why_not(blis, CLEF_OP_gemm_nt, 1, &f);
    cr_assert_not_null(why);
    cr_expect(strstr(why, "generic") != NULL, "%s", why);
    // a measured choice is trusted even so
    cr_expect_null(clef_auto_why_not(blis, CLEF_OP_gemm_nt, 0, &f));
    f.blis_generic = 0;
    cr_expect_null(clef_auto_why_not(blis, CLEF_OP_gemm_nt, 1, &f));
    // BLIS has no layernorm of its own: never a candidate for it
    cr_expect_not_null(clef_auto_why_not(blis, CLEF_OP_layernorm_fwd, 1, &f));
    // the ISA cap binds hand-written backends
    f.max_isa = CLEF_ISA_SCALAR;
    cr_expect_not_null(
        clef_auto_why_not(clef_backend_find("avx2"), CLEF_OP_bias_add, 0, &f));
    cr_expect_null(clef_auto_why_not(clef_backend_find("scalar"),
                                     CLEF_OP_bias_add, 0, &f));
    // above the CPU's own level it is the CPU, not the cap, that says no
    f.max_isa = f.native_isa = CLEF_ISA_AVX2;
    const clef_backend *a5 = clef_backend_find("avx512");
    if (a5 && a5->table) { // compiled in (x86)
        const char *beyond = clef_auto_why_not(a5, CLEF_OP_bias_add, 0, &f);
        cr_assert_not_null(beyond);
        cr_expect_str_eq(beyond, "beyond this CPU");
    }
}

Test(tune, tuning_file_choices_per_class_with_trampolines)
{
    char dir[64], path[160], err[512];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tune.json", dir);
    clef_tuning t = sample_tuning();
    cr_assert_eq(clef_tune_save(path, &t, err, sizeof err), 0, "%s", err);
    clef_auto_facts f = facts_here();
    f.max_isa = CLEF_ISA_AVX512; // whatever CLEF_MAX_ISA says
    clef_kernels k;
    cr_assert_eq(clef_auto_build(&k, path, &f, g_ch), 0);

    clef_auto_choice *g = g_ch[CLEF_OP_gemm_nt];
    cr_expect_str_eq(g[CLEF_CLASS_SMALL].backend->name, "scalar");
    cr_expect_eq(g[CLEF_CLASS_SMALL].source, CLEF_SRC_TUNED);
    cr_expect_str_eq(g[CLEF_CLASS_LARGE].backend->name, "onednn");
    // medium was not measured: the nearest class, small first
    cr_expect_str_eq(g[CLEF_CLASS_MEDIUM].backend->name, "scalar");
    cr_expect_eq(g[CLEF_CLASS_MEDIUM].source, CLEF_SRC_TUNED_NEAR);
    cr_expect(strstr(g[CLEF_CLASS_SMALL].why, "tune.json") != NULL, "%s",
              g[CLEF_CLASS_SMALL].why);
    // an op the file does not mention: built-in order
    cr_expect_eq(g_ch[CLEF_OP_colsum][CLEF_CLASS_SMALL].source,
                 CLEF_SRC_BUILTIN);
    // adamw: one class measured, every class follows it
    for (int c = 0; c < CLEF_CLASS_COUNT; c++)
        cr_expect_str_eq(g_ch[CLEF_OP_adamw][c].backend->name,
                         clef_need_avx2() ? "scalar" : "avx2");

    // gemm_nt mixes backends: a trampoline that picks per call
    cr_expect(strstr(k.names[CLEF_OP_gemm_nt], "auto(") ==
                  k.names[CLEF_OP_gemm_nt],
              "%s", k.names[CLEF_OP_gemm_nt]);
    cr_expect(k.gemm_nt != clef_f32_gemm_nt__scalar &&
              k.gemm_nt != clef_f32_gemm_nt__onednn);
    // small call: scalar, no oneDNN primitive; large call: a new primitive
    clef_onednn_cache_stats s0, s1, s2;
    enum { M = 512, N = 1024, K = 1024 }; // 2MNK = 2^30: large
    float *A = clef_test_falloc((size_t)M * K),
          *B = clef_test_falloc((size_t)N * K);
    float *C = clef_test_falloc((size_t)M * N),
          *R = clef_test_falloc((size_t)M * N);
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = (float)((int)(i % 5) - 2);
    for (size_t i = 0; i < (size_t)N * K; i++)
        B[i] = (float)((int)(i % 3) - 1);
    clef_onednn_cache_get_stats(&s0);
    k.gemm_nt(4, 4, 4, A, K, B, K, C, N, 0);
    clef_onednn_cache_get_stats(&s1);
    cr_expect_eq(s1.misses + s1.hits, s0.misses + s0.hits,
                 "small went to oneDNN");
    k.gemm_nt(M, N, K, A, K, B, K, C, N, 0);
    clef_onednn_cache_get_stats(&s2);
    cr_expect_eq(s2.misses + s2.hits, s1.misses + s1.hits + 1,
                 "large did not go to oneDNN");
    clef_f32_gemm_nt__scalar(M, N, K, A, K, B, K, R, N, 0);
    cr_expect(memcmp(C, R, (size_t)M * N * sizeof(float)) == 0, "exact");
    free(A), free(B), free(C), free(R);
    rmtree(dir);
}

Test(tune, unusable_tuned_backend_and_foreign_cpu_fall_back_to_builtin)
{
    char dir[64], path[160], err[512];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tune.json", dir);
    clef_tuning t = sample_tuning();
    t.e[CLEF_OP_bias_add][CLEF_CLASS_SMALL] =
        (clef_tune_entry){1, "avx512", 1e-7};
    cr_assert_eq(clef_tune_save(path, &t, err, sizeof err), 0, "%s", err);
    clef_auto_facts f = facts_here();
    f.max_isa = CLEF_ISA_SCALAR; // as with CLEF_MAX_ISA=scalar
    f.native_isa = CLEF_ISA_MAX; // on a CPU that could run the rest
    clef_kernels k;
    cr_assert_eq(clef_auto_build(&k, path, &f, g_ch), 0);
    clef_auto_choice *c = &g_ch[CLEF_OP_bias_add][CLEF_CLASS_SMALL];
    cr_expect_str_eq(c->backend->name, "scalar");
    cr_expect_eq(c->source, CLEF_SRC_BUILTIN);
    cr_expect(strstr(c->why, "tuned avx512 cannot run (above CLEF_MAX_ISA)"),
              "%s", c->why);

    // measured on another CPU: the whole file is ignored
    f = facts_here();
    snprintf(f.cpu_hash, sizeof f.cpu_hash, "ffffffffffffffff");
    cr_assert_eq(clef_auto_build(&k, path, &f, g_ch), 0);
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        cr_expect_eq(g_ch[op][CLEF_CLASS_SMALL].source, CLEF_SRC_BUILTIN);

    // a broken file: ignored (reported on stderr), built-in order
    write_text(path, "{ not json");
    f = facts_here();
    cr_assert_eq(clef_auto_build(&k, path, &f, g_ch), 0);
    cr_expect_eq(g_ch[CLEF_OP_gemm_nt][CLEF_CLASS_SMALL].source,
                 CLEF_SRC_BUILTIN);
    rmtree(dir);
}

Test(tune, registry_auto_table_is_complete_and_exact_on_gemm)
{
    const clef_backend *b = clef_backend_find("auto");
    cr_assert_not_null(b);
    setenv("XDG_CACHE_HOME", "/tmp/clef-tune-test-no-such-dir", 1);
    cr_assert_null(clef_backend_unavailable(b));
    cr_assert_eq(clef_kernels_first_missing(b->table), CLEF_OP_COUNT);
    float A[7 * 9], B[5 * 9], C[7 * 5], R[7 * 5];
    for (int i = 0; i < 63; i++)
        A[i] = (float)(i % 7 - 3);
    for (int i = 0; i < 45; i++)
        B[i] = (float)(i % 4 - 2);
    b->table->gemm_nt(7, 5, 9, A, 9, B, 9, C, 5, 0);
    clef_f32_gemm_nt__scalar(7, 5, 9, A, 9, B, 9, R, 5, 0);
    cr_expect(memcmp(C, R, sizeof C) == 0);
}

// The clef-bench harness must be able to fail: deliberately broken kernels
// (a wrong element, a write past the end, a write into a row gap or an
// input, a forgotten element, an all-zero result) are registered as backends
// of their own and each must get the verdict and the evidence it deserves.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "../bench/harness.h"
#include "cpu/cpu.h"
#include "util_package.h"

// ---- broken kernels: the scalar reference, then one deliberate fault ----
static void gemm_nt_plus_one(int M, int N, int K, const float *A, int lda,
                             const float *B, int ldb, float *C, int ldc,
                             int accumulate)
{
    clef_scalar_kernels.gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    C[(size_t)(M / 2) * ldc + N / 2] += 1.0f; // one element off by one
}

static void gemm_nt_overrun(int M, int N, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accumulate)
{
    clef_scalar_kernels.gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    C[(size_t)(M - 1) * ldc + ldc] = 0.0f; // one element past the last row
}

static void gemm_nt_gap(int M, int N, int K, const float *A, int lda,
                        const float *B, int ldb, float *C, int ldc,
                        int accumulate)
{
    clef_scalar_kernels.gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    C[N] = 0.0f; // row 0, first column past N: the gap when ldc > N
}

static void gemm_nt_writes_input(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    clef_scalar_kernels.gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    ((float *)B)[0] = 3.0f; // scribbles on a read-only operand
}

static void gemm_nt_forgets_last(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate)
{
    // computes every row but the last one (a classic tail bug)
    if (M > 1)
        clef_scalar_kernels.gemm_nt(M - 1, N, K, A, lda, B, ldb, C, ldc,
                                    accumulate);
}

static void gemm_nt_zeros(int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float *C, int ldc,
                          int accumulate)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            if (!accumulate) // C = 0; C += 0 leaves C as it was
                C[(size_t)i * ldc + j] = 0.0f;
}

static void gemm_nt_copy(int M, int N, int K, const float *A, int lda,
                         const float *B, int ldb, float *C, int ldc,
                         int accumulate)
{
    clef_scalar_kernels.gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

static void softmax_scaled(int rows, int n, const float *x, float *y,
                           float factor)
{
    clef_scalar_kernels.softmax_fwd(rows, n, x, y);
    for (size_t i = 0; i < (size_t)rows * n; i++)
        y[i] *= factor;
}

static void softmax_one_ulp(int rows, int n, const float *x, float *y)
{
    softmax_scaled(rows, n, x, y, 1.0f + FLT_EPSILON); // within tolerance
}

static void softmax_1e3(int rows, int n, const float *x, float *y)
{
    softmax_scaled(rows, n, x, y, 1.001f); // far outside it
}

static void softmax_nan(int rows, int n, const float *x, float *y)
{
    clef_scalar_kernels.softmax_fwd(rows, n, x, y);
    y[n + 1] = NAN;
}

// ---- helpers ----
static clef_kernels g_table; // the scalar table with one kernel swapped

static clef_backend with_gemm(clef_gemm_fn fn, const char *name)
{
    g_table = clef_scalar_kernels;
    g_table.gemm_nt = fn;
    g_table.names[CLEF_OP_gemm_nt] = name;
    return (clef_backend){"broken", &g_table, NULL};
}

static clef_backend with_softmax(clef_softmax_fwd_fn fn, const char *name)
{
    g_table = clef_scalar_kernels;
    g_table.softmax_fwd = fn;
    g_table.names[CLEF_OP_softmax_fwd] = name;
    return (clef_backend){"broken", &g_table, NULL};
}

static clef_bench_result run(const clef_backend *b, const clef_kernels *ref,
                             clef_op op, const char *shape)
{
    clef_bench_opts o;
    clef_bench_opts_default(&o);
    o.seed = 7;
    o.timing = 0;
    const clef_bench_shape *s = clef_bench_shape_find(shape);
    cr_assert_not_null(s, "shape %s", shape);
    clef_bench_result r;
    clef_bench_run_one(b, ref, op, s, &o, &r);
    return r;
}

static void assert_verdict(const clef_bench_result *r, clef_bench_verdict v)
{
    cr_assert_eq(r->verdict, v, "%s %s %s: expected %s, got %s (%s)",
                 r->backend, r->op, r->shape, clef_bench_verdict_name(v),
                 clef_bench_verdict_name(r->verdict), r->reason);
}

// ---- the harness passes what is right ----
Test(bench_harness, a_correct_kernel_passes_on_every_small_shape)
{
    clef_backend b = with_gemm(gemm_nt_copy, "copy_gemm_nt");
    const char *shapes[] = {"tiny",    "fixture",    "edge-1",
                            "edge-7",  "edge-17",    "edge-33",
                            "edge-65", "edge-prime", "edge-tile"};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        clef_bench_result r =
            run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, shapes[i]);
        assert_verdict(&r, CLEF_BENCH_PASS);
        cr_assert_eq(r.max_err_eps, 0.0,
                     "integer-filled GEMM compares exactly");
        cr_assert_eq(r.tol_eps, 0.0);
    }
}

Test(bench_harness, the_reference_is_trusted_for_every_op_at_small_shapes)
{
    const clef_backend *scalar = clef_backend_find("scalar");
    cr_assert_not_null(scalar);
    for (int i = 0; i < clef_bench_shape_count(); i++) {
        const clef_bench_shape *s = clef_bench_shape_at(i);
        if (strcmp(s->group, "mid") == 0 || strcmp(s->group, "released") == 0)
            continue;
        for (int op = 0; op < CLEF_OP_COUNT; op++) {
            clef_bench_result r =
                run(scalar, &clef_scalar_kernels, (clef_op)op, s->name);
            assert_verdict(&r, CLEF_BENCH_PASS);
            cr_assert_geq(r.informative, 0.5, "%s %s", r.op, r.shape);
        }
    }
}

// Every op has a case (bench/case_table.c is generated from CLEF_OPS), and
// the case calls its own op's kernel and no other: with a table holding only
// that kernel (every other pointer NULL) it builds, runs and passes, and its
// work measure (--tune) is positive.
Test(bench_harness, each_case_calls_only_its_own_kernel)
{
    static clef_kernels only;
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        memset(&only, 0, sizeof only);
        only.backend = "only";
        clef_kernels_set(&only, (clef_op)op,
                         clef_kernels_get(&clef_scalar_kernels, (clef_op)op));
        only.names[op] = clef_scalar_kernels.names[op];
        clef_backend b = {"only", &only, NULL};
        clef_bench_result r = run(&b, &only, (clef_op)op, "edge-7");
        assert_verdict(&r, CLEF_BENCH_PASS);
        cr_assert_str_eq(r.kernel, clef_scalar_kernels.names[op]);
        clef_bench_case *c =
            clef_bench_case_new((clef_op)op, clef_bench_shape_find("tiny"), 1);
        cr_assert_not_null(c, "%s", clef_op_names[op]);
        cr_assert_gt(clef_bench_case_work(c), 0.0, "%s", clef_op_names[op]);
        clef_bench_case_free(c);
    }
}

Test(bench_harness, one_ulp_is_within_the_softmax_tolerance)
{
    clef_backend b = with_softmax(softmax_one_ulp, "ulp_softmax_fwd");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_softmax_fwd, "fixture");
    assert_verdict(&r, CLEF_BENCH_PASS);
    cr_assert_gt(r.max_err_eps, 0.0, "the perturbation must be seen");
    cr_assert_leq(r.max_err_eps, r.tol_eps);
}

// ---- and fails what is wrong ----
Test(bench_harness, a_wrong_element_fails_with_mismatches_and_a_replay_line)
{
    clef_backend b = with_gemm(gemm_nt_plus_one, "plus_one_gemm_nt");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "tiny");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    cr_assert_eq(r.n_mismatch, 2, "one element in C and one in Cacc");
    cr_assert_eq(r.max_abs, 1.0);
    // M=6 N=8: the element at row 3, column 4, expected e, got e+1
    cr_assert_not_null(strstr(r.mismatches, "C[3,4]"), "%s", r.mismatches);
    cr_assert_not_null(strstr(r.mismatches, "diff 1"), "%s", r.mismatches);
    cr_assert_str_eq(r.replay,
                     "clef-bench --backend broken --op gemm_nt --shape tiny "
                     "--seed 7");
    cr_assert_str_eq(r.kernel, "plus_one_gemm_nt");
}

Test(bench_harness, a_write_past_the_output_is_caught_by_the_sentinel)
{
    clef_backend b = with_gemm(gemm_nt_overrun, "overrun_gemm_nt");
    const char *shapes[] = {"tiny", "edge-1", "edge-tile"};
    for (size_t i = 0; i < 3; i++) {
        clef_bench_result r =
            run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, shapes[i]);
        assert_verdict(&r, CLEF_BENCH_FAIL);
        cr_assert_not_null(strstr(r.reason, "wrote past the end of C"), "%s",
                           r.reason);
        cr_assert_not_null(strstr(r.replay, "--shape"), "%s", r.replay);
    }
}

Test(bench_harness, a_write_into_a_row_gap_is_caught)
{
    clef_backend b = with_gemm(gemm_nt_gap, "gap_gemm_nt");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "edge-7");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    cr_assert_not_null(strstr(r.reason, "row gap of C"), "%s", r.reason);
}

Test(bench_harness, a_write_into_an_input_is_caught)
{
    clef_backend b = with_gemm(gemm_nt_writes_input, "scribble_gemm_nt");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "tiny");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    cr_assert_not_null(strstr(r.reason, "modified input B"), "%s", r.reason);
}

Test(bench_harness, a_forgotten_row_fails)
{
    clef_backend b = with_gemm(gemm_nt_forgets_last, "tail_gemm_nt");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "edge-7");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    // the overwritten C keeps its NaN prefill in the forgotten row
    cr_assert_not_null(strstr(r.mismatches, "got nan"), "%s", r.mismatches);
}

Test(bench_harness, nan_must_meet_nan)
{
    clef_backend b = with_softmax(softmax_nan, "nan_softmax_fwd");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_softmax_fwd, "fixture");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    cr_assert_eq(r.n_mismatch, 1);
}

Test(bench_harness, an_error_beyond_tolerance_fails)
{
    clef_backend b = with_softmax(softmax_1e3, "loose_softmax_fwd");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_softmax_fwd, "tiny");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    cr_assert_gt(r.max_err_eps, r.tol_eps);
}

Test(bench_harness, a_zero_result_is_mistrusted_not_passed)
{
    // Against the real reference, zeros are simply wrong...
    clef_backend b = with_gemm(gemm_nt_zeros, "zeros_gemm_nt");
    clef_bench_result r =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "tiny");
    assert_verdict(&r, CLEF_BENCH_FAIL);
    // ...and when the reference itself produces them, a match proves nothing.
    static clef_kernels zero_ref;
    zero_ref = g_table;
    r = run(&b, &zero_ref, CLEF_OP_gemm_nt, "tiny");
    assert_verdict(&r, CLEF_BENCH_MISTRUSTED);
    cr_assert_lt(r.informative, 0.5);
    cr_assert_not_null(strstr(r.replay, "--op gemm_nt"), "%s", r.replay);
}

// ---- backends that cannot run are skipped with the reason ----
static const char *lacks_testisa(void)
{
    return "cpu lacks testisa";
}

Test(bench_harness, unavailable_backends_are_skipped_with_the_reason)
{
    clef_backend missing = {"missing", NULL, NULL};
    clef_bench_result r =
        run(&missing, &clef_scalar_kernels, CLEF_OP_gemm_nt, "tiny");
    assert_verdict(&r, CLEF_BENCH_SKIP);
    cr_assert_str_eq(r.reason, "not compiled in this build");

    clef_backend cant = {"cant", &clef_scalar_kernels, lacks_testisa};
    r = run(&cant, &clef_scalar_kernels, CLEF_OP_gemm_nt, "tiny");
    assert_verdict(&r, CLEF_BENCH_SKIP);
    cr_assert_str_eq(r.reason, "cpu lacks testisa");
}

Test(bench_harness, the_registry_lists_every_backend_once)
{
    const char *names[] = {"scalar", "avx2",   "avx512",
                           "neon",   "onednn", "blis"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const clef_backend *b = clef_backend_find(names[i]);
        cr_assert_not_null(b, "%s", names[i]);
        cr_assert_str_eq(b->name, names[i]);
    }
    cr_assert_null(clef_backend_find("nosuch"));
    cr_assert_eq(clef_backend_at(0), clef_backend_find("scalar"));
    cr_assert_null(clef_backend_unavailable(clef_backend_find("scalar")));
    cr_assert_null(clef_backend_at(clef_backend_count()));
}

Test(bench_harness, cases_are_deterministic_in_the_seed)
{
    clef_backend b = with_gemm(gemm_nt_plus_one, "plus_one_gemm_nt");
    clef_bench_result r1 =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "edge-7");
    clef_bench_result r2 =
        run(&b, &clef_scalar_kernels, CLEF_OP_gemm_nt, "edge-7");
    cr_assert_str_eq(r1.mismatches, r2.mismatches);
}

// ---- the program: last line, exit codes ----
// Runs cmd, returns its exit status and its last line of stdout in last.
static int run_cli(const char *args, char *last, size_t len)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/clef-bench %s 2>/dev/null", CLEF_BIN_DIR,
             args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "%s", cmd);
    char line[1024];
    last[0] = 0;
    while (fgets(line, sizeof line, p))
        snprintf(last, len, "%s", line);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(bench_harness, the_program_ends_with_the_counts_and_exits_by_verdict)
{
    char last[1024];
    int rc = run_cli("--backend scalar,neon --op gemm_nt,loss --shape tiny "
                     "--no-time",
                     last, sizeof last);
    cr_assert_eq(rc, 0);
    // scalar passes both ops; neon is never compiled on x86 and SKIPs
    // (on arm64 it runs and passes)
#if defined(__aarch64__)
    cr_assert_str_eq(last, "4 passed, 0 failed, 0 skipped\n");
#else
    cr_assert_str_eq(last, "2 passed, 0 failed, 2 skipped\n");
#endif
    cr_assert_eq(run_cli("--backend nosuch", last, sizeof last), 2);
    cr_assert_eq(run_cli("--shape huge", last, sizeof last), 2);
    cr_assert_eq(run_cli("--threads 0", last, sizeof last), 2);
}

// Runs clef-bench with args and --json in dir, which must end with
// `passed`; returns the document (*row: its row of op, asserted present).
static json_t *bench_json_row(const char *args, const char *dir,
                              const char *passed, const char *op, json_t **row)
{
    char last[1024], cmd[600];
    snprintf(cmd, sizeof cmd, "%s --json %s/bench.json", args, dir);
    cr_assert_eq(run_cli(cmd, last, sizeof last), 0, "%s", cmd);
    cr_assert_str_eq(last, passed);
    snprintf(cmd, sizeof cmd, "%s/bench.json", dir);
    json_error_t je;
    json_t *doc = json_load_file(cmd, 0, &je);
    cr_assert_not_null(doc, "%s", je.text);
    json_t *rows = json_object_get(doc, "rows");
    *row = NULL;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *x = json_array_get(rows, i);
        if (!strcmp(json_string_value(json_object_get(x, "op")), op))
            *row = x;
    }
    cr_assert_not_null(*row, "no %s row", op);
    return doc;
}

// --train --scaling N: a measured row per backend and shape with both
// speedups (clef's and the control sgemm's) and both FLOP rates from at
// least 3 rounds; the flag
// is refused without --train or below 2 threads.
Test(bench_harness, train_scaling_reports_both_speedups)
{
    char last[1024];
    char *dir = tp_tmpdir();
    json_t *r,
        *doc = bench_json_row(
            "--train --backend scalar --shape tiny --scaling 2 --budget 0", dir,
            "2 passed, 0 failed, 0 skipped\n", "train_scaling", &r);
    cr_assert_eq(json_integer_value(json_object_get(r, "threads")), 2);
    cr_assert_geq(json_integer_value(json_object_get(r, "rounds")), 3);
    double sp = json_real_value(json_object_get(r, "speedup"));
    double cs = json_real_value(json_object_get(r, "control_speedup"));
    double u1 = json_real_value(json_object_get(r, "updates_per_s_1"));
    double un = json_real_value(json_object_get(r, "updates_per_s_n"));
    cr_assert(sp > 0 && cs > 0 && u1 > 0 && un > 0, "speedup %g control %g", sp,
              cs);
    cr_assert_float_eq(sp, un / u1, 1e-9 * sp);
    double rt = json_real_value(json_object_get(r, "round_trip_ns"));
    json_int_t slow =
        json_integer_value(json_object_get(r, "slow_round_trip_rounds"));
    cr_assert(rt > 0 && rt < 1e6, "cross-core round trip %g ns", rt);
    cr_assert(slow >= 0 &&
                  slow <= json_integer_value(json_object_get(r, "rounds")),
              "%lld slow rounds", (long long)slow);
    // FLOP rates: the update's on 1 and N threads (one count: their ratio is
    // the speedup) and the control sgemm's on the same threads
    double g1 = json_real_value(json_object_get(r, "gflops_1"));
    double gn = json_real_value(json_object_get(r, "gflops_n"));
    double c1 = json_real_value(json_object_get(r, "control_gflops_1"));
    double cn = json_real_value(json_object_get(r, "control_gflops_n"));
    cr_assert(g1 > 0 && gn > 0 && c1 > 0 && cn > 0,
              "GFLOP/s %g %g, control %g %g", g1, gn, c1, cn);
    cr_assert_float_eq(gn / g1, sp, 1e-9 * sp);
    json_decref(doc);
    tp_rmdir(dir);
    cr_assert_eq(run_cli("--scaling 2", last, sizeof last), 2);
    cr_assert_eq(run_cli("--train --scaling 1", last, sizeof last), 2);
}

// --train --precision fp32,bf16: one row per backend and shape with both
// rates from at least 3 alternating rounds and bf16's speedup, from the same
// head and records (the first losses agree to bf16's rounding); the value is
// refused without --train, with --scaling, and for a precision it lacks.
Test(bench_harness, train_precision_reports_bf16_speedup)
{
    char last[1024];
    char *dir = tp_tmpdir();
    json_t *r,
        *doc = bench_json_row(
            "--train --backend scalar --shape tiny --precision fp32,bf16 "
            "--budget 0",
            dir, "1 passed, 0 failed, 0 skipped\n", "train_precision", &r);
    cr_assert_geq(json_integer_value(json_object_get(r, "rounds")), 3);
    double sp = json_real_value(json_object_get(r, "speedup"));
    double u32 = json_real_value(json_object_get(r, "updates_per_s_fp32"));
    double u16 = json_real_value(json_object_get(r, "updates_per_s_bf16"));
    cr_assert(sp > 0 && u32 > 0 && u16 > 0, "speedup %g, %g and %g updates/s",
              sp, u32, u16);
    cr_assert_float_eq(sp, u16 / u32, 1e-9 * sp);
    double l32 = json_real_value(json_object_get(r, "first_loss_fp32"));
    double l16 = json_real_value(json_object_get(r, "first_loss_bf16"));
    cr_assert(isfinite(l32) && l32 > 0, "fp32 first loss %g", l32);
    cr_assert(l16 != l32 && fabs(l16 - l32) < 0.02 * l32,
              "first losses fp32 %.9g, bf16 %.9g: not the same head in two "
              "precisions",
              l32, l16);
    json_decref(doc);
    tp_rmdir(dir);
    cr_assert_eq(run_cli("--precision fp32,bf16", last, sizeof last), 2);
    cr_assert_eq(
        run_cli("--train --precision fp32,bf16 --scaling 2", last, sizeof last),
        2);
    cr_assert_eq(run_cli("--train --precision bf16,fp32", last, sizeof last),
                 2);
}

// --handoff: a rate for each of read, rmw and write, in both states, from
// thread 1's timed passes; bad flags exit 2. One CPU: SKIPPED, never passed.
Test(bench_harness, handoff_reports_every_rate)
{
    char last[1024];
    cr_assert_eq(run_cli("--handoff --rounds 0", last, sizeof last), 2);
    cr_assert_eq(run_cli("--handoff --mb 0", last, sizeof last), 2);
    if (clef_cpu_get()->pus < 2)
        cr_skip_test("one CPU: no second thread to hand cache lines to");
    char cmd[512], line[1024];
    snprintf(cmd, sizeof cmd, "%s/clef-bench --handoff --mb 0.25 --rounds 3",
             CLEF_BIN_DIR);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    const char *ops[3] = {"read", "rmw", "write"};
    int seen = 0;
    while (fgets(line, sizeof line, p)) {
        char op[16];
        double mb, own, other;
        if (sscanf(line, "handoff %15s %lf MiB own %lf GB/s other %lf GB/s", op,
                   &mb, &own, &other) != 4)
            continue;
        cr_assert_str_eq(op, ops[seen], "%s", line);
        cr_assert(mb == 0.25 && isfinite(own) && own > 0 && isfinite(other) &&
                      other > 0,
                  "%s", line);
        seen++;
    }
    cr_assert_eq(pclose(p), 0);
    cr_assert_eq(seen, 3);
}

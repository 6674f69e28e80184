// The BLIS backend: GEMM against the scalar reference on remainder shapes
// (integer fills, so every summation order is exact and the comparison is
// bitwise, row gaps included), the table (BLIS GEMMs named with BLIS's
// sub-configuration, every other op the best hand-written kernel), the
// sub-configuration report, and threads (clef's count, 1 inside a parallel
// region, no nested team, results independent of the count).
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blis.h>

#include "backends/blis/blis_backend.h"
#include "scheduler/registry.h"
#include "backends/scalar/scalar.h"
#include "cpu/cpu.h"
#include "scheduler/dispatch.h"
#include "scheduler/tune.h"
#include "util.h"

static const clef_kernels *blis_table(void)
{
    const clef_backend *b = clef_backend_find("blis"); // composed
    cr_assert_null(clef_backend_unavailable(b));
    return b->table;
}

Test(blis, reports_the_sub_configuration_blis_chose)
{
    const char *arch = clef_blis_arch();
    cr_assert_str_eq(arch, bli_arch_string(bli_arch_query_id()));
    cr_expect_eq(clef_blis_arch_is_generic(), strcmp(arch, "generic") == 0);
    cr_expect(strncmp(clef_blis_version(), "0.", 2) == 0 ||
                  strncmp(clef_blis_version(), "1.", 2) == 0,
              "version %s", clef_blis_version());
    const clef_kernels *k = blis_table();
    char want[64];
    snprintf(want, sizeof want, "clef_f32_gemm_nt__blis_%s", arch);
    cr_expect_str_eq(k->names[CLEF_OP_gemm_nt], want);
}

Test(blis, table_is_complete_and_falls_through_to_the_best_hand_written)
{
    const clef_kernels *k = blis_table();
    cr_assert_eq(clef_kernels_first_missing(k), CLEF_OP_COUNT);
    clef_kernels hw; // the dispatcher's hand-written choice per op
    char why[160];
    cr_assert_eq(
        clef_dispatch_build(&hw, clef_isa_level(), NULL, why, sizeof why), 0,
        "%s", why);
    for (int op = CLEF_OP_gemm_tn + 1; op < CLEF_OP_COUNT; op++) {
        cr_expect_str_eq(k->names[op], hw.names[op], "%s", clef_op_names[op]);
        cr_expect(clef_kernels_get(k, (clef_op)op) ==
                  clef_kernels_get(&hw, (clef_op)op));
    }
    cr_expect(k->gemm_nt == clef_f32_gemm_nt__blis);
    cr_expect(k->gemm_nn == clef_f32_gemm_nn__blis);
    cr_expect(k->gemm_tn == clef_f32_gemm_tn__blis);
    cr_expect_eq(clef_backend_find("blis")->table, k);
}

typedef enum { NT, NN, TN } layout;

static void gemm_case(layout lay, int M, int N, int K, int acc, uint64_t *rng)
{
    int arows = lay == TN ? K : M, acols = lay == TN ? M : K;
    int brows = lay == NT ? N : K, bcols = lay == NT ? K : N;
    int lda = acols + 2, ldb = bcols + 3, ldc = N + 1;
    size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb,
           nc = (size_t)M * ldc;
    float *A = clef_test_falloc(na), *B = clef_test_falloc(nb);
    float *C = clef_test_falloc(nc), *R = clef_test_falloc(nc);
    for (size_t i = 0; i < na; i++)
        A[i] = (float)clef_test_rand_int(rng, -3, 3);
    for (size_t i = 0; i < nb; i++)
        B[i] = (float)clef_test_rand_int(rng, -3, 3);
    for (size_t i = 0; i < nc; i++)
        C[i] = (float)clef_test_rand_int(rng, -9, 9);
    if (!acc) // overwritten outputs start as NaN: beta 0 must not read them
        for (size_t i = 0; i < nc; i++)
            if ((int)(i % (size_t)ldc) < N)
                C[i] = NAN;
    for (size_t i = 0; i < nc; i++)
        R[i] = isnan(C[i]) ? 0.0f : C[i];
    clef_gemm_fn f = lay == NT   ? clef_f32_gemm_nt__blis
                     : lay == NN ? clef_f32_gemm_nn__blis
                                 : clef_f32_gemm_tn__blis;
    clef_gemm_fn r = lay == NT   ? clef_f32_gemm_nt__scalar
                     : lay == NN ? clef_f32_gemm_nn__scalar
                                 : clef_f32_gemm_tn__scalar;
    f(M, N, K, A, lda, B, ldb, C, ldc, acc);
    r(M, N, K, A, lda, B, ldb, R, ldc, acc);
    for (size_t i = 0; i < nc; i++)
        cr_assert(C[i] == R[i],
                  "layout %d M=%d N=%d K=%d acc=%d: C[%zu] = %g, "
                  "want %g",
                  lay, M, N, K, acc, i, C[i], R[i]);
    free(A), free(B), free(C), free(R);
}

Test(blis, gemm_remainder_shapes_exact_vs_scalar)
{
    blis_table();
    static const int s[] = {1, 2, 3, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33, 65};
    const int ns = (int)(sizeof s / sizeof s[0]);
    uint64_t rng = 701;
    for (int lay = NT; lay <= TN; lay++)
        for (int a = 0; a < ns; a++)
            for (int b = 0; b < ns; b += 3)
                for (int c = 0; c < ns; c += 2)
                    for (int acc = 0; acc < 2; acc++)
                        gemm_case((layout)lay, s[a], s[b], s[c], acc, &rng);
    gemm_case(NT, 4, 3, 0, 0, &rng); // K = 0: zeros
    gemm_case(TN, 4, 3, 0, 1, &rng); // K = 0: unchanged
}

// ---- threads ----
static int os_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

static void gemm_random(int M, int N, int K, float *C, uint64_t seed)
{
    float *A = clef_test_falloc((size_t)M * K),
          *B = clef_test_falloc((size_t)N * K);
    clef_test_fill_uniform(A, (size_t)M * K, -1.0f, 1.0f, &seed);
    clef_test_fill_uniform(B, (size_t)N * K, -1.0f, 1.0f, &seed);
    clef_f32_gemm_nt__blis(M, N, K, A, K, B, K, C, N, 0);
    free(A), free(B);
}

Test(blis, call_threads_follow_the_setting_and_are_one_in_a_parallel_region)
{
    blis_table();
    const double big = 2.0 * 256 * 256 * 256, tiny = 2.0 * 8 * 8 * 8;
    const int pus = clef_cpu_get()->pus;
    cr_assert_gt(pus, 0);
    omp_set_num_threads(3);
    cr_expect_eq(clef_blis_call_threads(big), 3 < pus ? 3 : pus);
    // never more than the hardware threads: BLIS's barriers spin
    omp_set_num_threads(4 * pus);
    cr_expect_eq(clef_blis_call_threads(big), pus, "oversubscribed team");
    cr_expect_eq(clef_blis_call_threads(tiny), 1, "tiny GEMMs run serially");
    omp_set_num_threads(1);
    cr_expect_eq(clef_blis_call_threads(big), 1);
    omp_set_num_threads(2);
    int inside = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp master
        inside = clef_blis_call_threads(big);
    }
    cr_expect_eq(inside, 1);
}

Test(blis, threads_start_as_set_and_do_not_nest)
{
    blis_table();
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: cannot run two threads");
    const int M = 192, N = 192, K = 192;
    float *C = clef_test_falloc((size_t)M * N);
    omp_set_num_threads(1);
    int t0 = os_threads();
    gemm_random(M, N, K, C, 702);
    cr_expect_eq(os_threads(), t0, "threads 1: BLIS started threads");
    omp_set_num_threads(2);
    gemm_random(M, N, K, C, 702);
    int t2 = os_threads();
    cr_expect_eq(t2, t0 + 1, "threads 2: a team of 2 (%d -> %d)", t0, t2);
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
    {
        volatile int me = omp_get_thread_num(); // a real team of 2
        (void)me;
    }
    t2 = os_threads();
    int worst = 0;
#pragma omp parallel num_threads(2)
    {
        float *Ct = clef_test_falloc((size_t)M * N);
        gemm_random(M, N, K, Ct, 703);
        int t = os_threads();
#pragma omp critical
        worst = t > worst ? t : worst;
        free(Ct);
    }
    cr_expect_eq(worst, t2, "nested call started threads (%d -> %d)", t2,
                 worst);
    free(C);
}

Test(blis, results_do_not_depend_on_the_thread_count)
{
    blis_table();
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: cannot run two threads");
    static const int shapes[][3] = {
        {8, 8, 20000}, {200, 130, 300}, {1, 3, 4097}};
    for (int s = 0; s < 3; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *c1 = clef_test_falloc((size_t)M * N),
              *c2 = clef_test_falloc((size_t)M * N);
        omp_set_num_threads(1);
        gemm_random(M, N, K, c1, 704);
        omp_set_num_threads(2);
        gemm_random(M, N, K, c2, 704);
        cr_expect(memcmp(c1, c2, (size_t)M * N * sizeof(float)) == 0,
                  "BLIS M=%d N=%d K=%d differs between 1 and 2 threads", M, N,
                  K);
        free(c1), free(c2);
    }
}

// The oneDNN backend against the scalar reference: GEMM on remainder shapes
// (integer fills: every partial sum is an integer below 2^24, so any
// summation order is exact and the comparison is bitwise), LayerNorm, GELU
// and softmax forward and backward within FLT_EPSILON-unit tolerances; the
// table (native kernels, fall-throughs), the primitive cache, and threads
// (clef's setting is followed, no team is nested in a parallel region,
// results do not depend on the count, any layout, in a region or not).
//
// Tolerances, in FLT_EPSILON, |got − want| ≤ tol · max(|want|, 1) as in
// clef-bench's table: elementwise GELU 16 (a few ulp of erf/exp amplified by
// x·Φ, x·φ); softmax 8 + 2n; LayerNorm forward 8 + 2n, backward 16 + 2·max(rows, n).
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn_int.h"
#include "scheduler/registry.h"
#include "backends/scalar/scalar.h"
#include "cpu/cpu.h"
#include "scheduler/dispatch.h"
#include "scheduler/tune.h"
#include "util.h"

// |got − want| ≤ tol_eps · FLT_EPSILON · max(|want|, 1), NaN never passes.
static bool close_eps(const char *what, const float *got, const float *want,
                      size_t n, double tol_eps)
{
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double lim = tol_eps * FLT_EPSILON * fmax(fabs(w), 1.0);
        if (!(fabs(g - w) <= lim)) {
            fprintf(stderr,
                    "%s[%zu]: got %.9g want %.9g (|diff| %.3g > %.3g)\n", what,
                    i, g, w, fabs(g - w), lim);
            return false;
        }
    }
    return true;
}

static void fill_ints(float *x, size_t n, int m, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)clef_test_rand_int(rng, -m, m);
}

static const clef_kernels *onednn(void)
{
    const clef_backend *b = clef_backend_find("onednn"); // composed
    cr_assert_null(clef_backend_unavailable(b), "oneDNN unavailable: %s",
                   clef_backend_unavailable(b));
    return b->table;
}

// ---- the table ----
Test(onednn, table_is_complete_with_native_kernels_and_visible_fallthroughs)
{
    const clef_kernels *k = onednn();
    cr_assert_eq(clef_kernels_first_missing(k), CLEF_OP_COUNT);
    clef_kernels hw; // the dispatcher's hand-written choice per op
    char why[160];
    cr_assert_eq(
        clef_dispatch_build(&hw, clef_isa_level(), NULL, why, sizeof why), 0,
        "%s", why);
    static const clef_op native[] = {
        CLEF_OP_gemm_nt,       CLEF_OP_gemm_nn,       CLEF_OP_gemm_tn,
        CLEF_OP_layernorm_fwd, CLEF_OP_layernorm_bwd, CLEF_OP_gelu_fwd,
        CLEF_OP_gelu_bwd,      CLEF_OP_softmax_fwd,   CLEF_OP_softmax_bwd,
        CLEF_OP_gemm_bf16_nt,  CLEF_OP_gemm_bf16_nn,  CLEF_OP_gemm_bf16_tn};
    int is_native[CLEF_OP_COUNT] = {0};
    for (size_t i = 0; i < sizeof native / sizeof native[0]; i++)
        is_native[native[i]] = 1;
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        if (is_native[op]) {
            cr_expect(strstr(k->names[op], "__onednn") != NULL, "%s: %s",
                      clef_op_names[op], k->names[op]);
            continue;
        }
        // a fall-through is the best hand-written kernel, by pointer and name
        cr_expect_str_eq(k->names[op], hw.names[op], "%s", clef_op_names[op]);
        cr_expect(clef_kernels_get(k, (clef_op)op) ==
                      clef_kernels_get(&hw, (clef_op)op),
                  "%s", clef_op_names[op]);
    }
    const clef_backend *b = clef_backend_find("onednn");
    cr_assert_not_null(b);
    cr_expect_eq(b->table, k, "the registry holds this table");
}

// ---- GEMM: remainder shapes, exact ----
typedef enum { NT, NN, TN } layout;

static void gemm_case(const clef_kernels *k, layout lay, int M, int N, int K,
                      int acc, uint64_t *rng)
{
    int arows = lay == TN ? K : M, acols = lay == TN ? M : K;
    int brows = lay == NT ? N : K, bcols = lay == NT ? K : N;
    int lda = acols + 3, ldb = bcols + 1, ldc = N + 2;
    float *A = clef_test_falloc((size_t)arows * lda);
    float *B = clef_test_falloc((size_t)brows * ldb);
    float *C = clef_test_falloc((size_t)M * ldc);
    float *R = clef_test_falloc((size_t)M * ldc);
    fill_ints(A, (size_t)arows * lda, 3, rng);
    fill_ints(B, (size_t)brows * ldb, 3, rng);
    fill_ints(C, (size_t)M * ldc, 9, rng);
    if (!acc) // overwritten: anything there must vanish, even NaN
        for (size_t i = 0; i < (size_t)M * ldc; i++)
            C[i] = (i % (size_t)ldc) < (size_t)N ? NAN : C[i];
    memcpy(R, C, (size_t)M * ldc * sizeof(float));
    if (!acc)
        for (size_t i = 0; i < (size_t)M * ldc; i++)
            R[i] = isnan(R[i]) ? 0.0f : R[i];
    clef_gemm_fn f = lay == NT   ? k->gemm_nt
                     : lay == NN ? k->gemm_nn
                                 : k->gemm_tn;
    clef_gemm_fn r = lay == NT   ? clef_f32_gemm_nt__scalar
                     : lay == NN ? clef_f32_gemm_nn__scalar
                                 : clef_f32_gemm_tn__scalar;
    f(M, N, K, A, lda, B, ldb, C, ldc, acc);
    r(M, N, K, A, lda, B, ldb, R, ldc, acc);
    // bitwise, gaps between rows included (they must be untouched)
    for (size_t i = 0; i < (size_t)M * ldc; i++)
        cr_assert(C[i] == R[i] || (isnan(C[i]) && isnan(R[i])),
                  "layout %d M=%d N=%d K=%d acc=%d: C[%zu] = %g, want %g", lay,
                  M, N, K, acc, i, C[i], R[i]);
    free(A), free(B), free(C), free(R);
}

Test(onednn, gemm_remainder_shapes_exact_vs_scalar)
{
    const clef_kernels *k = onednn();
    static const int mn[] = {1, 7, 17, 33};
    static const int ks[] = {1, 5, 64, 129};
    uint64_t rng = 601;
    for (int lay = NT; lay <= TN; lay++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int c = 0; c < 4; c++)
                    for (int acc = 0; acc < 2; acc++)
                        gemm_case(k, (layout)lay, mn[a], mn[(a + b) % 4], ks[c],
                                  acc, &rng);
    // K = 0: an empty sum (overwrite: zeros; accumulate: unchanged)
    gemm_case(k, NT, 5, 3, 0, 0, &rng);
    gemm_case(k, NN, 5, 3, 0, 1, &rng);
}

// GEMMs large enough to run in blocks of C (backends/onednn/gemm.c): split
// along N and along M, blocks of 64 with a shorter last one, blocks of 16
// for a short dimension, on two threads and inside a parallel region.
Test(onednn, gemm_blocked_shapes_exact_vs_scalar)
{
    const clef_kernels *k = onednn();
    static const int shapes[][3] = {{40, 300, 200},
                                    {300, 40, 200},
                                    {33, 520, 257},
                                    {20, 100, 3000},
                                    {129, 130, 600}};
    const int before = omp_get_max_threads();
    uint64_t rng = 611;
    omp_set_num_threads(2);
    for (int lay = NT; lay <= TN; lay++)
        for (int s = 0; s < 5; s++)
            for (int acc = 0; acc < 2; acc++)
                gemm_case(k, (layout)lay, shapes[s][0], shapes[s][1],
                          shapes[s][2], acc, &rng);
#pragma omp parallel num_threads(2)
    {
        uint64_t r = 612 + (uint64_t)omp_get_thread_num();
        gemm_case(k, NN, 33, 520, 257, 1, &r);
    }
    omp_set_num_threads(before);
}

// ---- LayerNorm ----
Test(onednn, layernorm_fwd_bwd_vs_scalar)
{
    const clef_kernels *k = onednn();
    static const int rows_[] = {1, 3, 17}, ns[] = {2, 7, 33, 130};
    uint64_t rng = 602;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++) {
            int rows = rows_[a], n = ns[b];
            size_t rn = (size_t)rows * n;
            float *x = clef_test_falloc(rn), *g = clef_test_falloc(n),
                  *be = clef_test_falloc(n), *dy = clef_test_falloc(rn);
            float *y = clef_test_falloc(rn), *h = clef_test_falloc(rn),
                  *rs = clef_test_falloc(rows);
            float *yr = clef_test_falloc(rn), *hr = clef_test_falloc(rn),
                  *rsr = clef_test_falloc(rows);
            clef_test_fill_uniform(x, rn, -3.0f, 5.0f, &rng);
            clef_test_fill_uniform(g, n, 0.5f, 1.5f, &rng);
            clef_test_fill_uniform(be, n, -1.0f, 1.0f, &rng);
            clef_test_fill_uniform(dy, rn, -1.0f, 1.0f, &rng);
            clef_test_fill_const(y, rn, NAN), clef_test_fill_const(h, rn, NAN);
            clef_test_fill_const(rs, rows, NAN);
            k->layernorm_fwd(rows, n, x, g, be, y, h, rs);
            clef_f32_layernorm_fwd__scalar(rows, n, x, g, be, yr, hr, rsr);
            double tf = 8 + 2.0 * n;
            cr_assert(close_eps("y", y, yr, rn, tf), "rows=%d n=%d", rows, n);
            cr_assert(close_eps("xhat", h, hr, rn, tf), "rows=%d n=%d", rows,
                      n);
            cr_assert(close_eps("rstd", rs, rsr, rows, tf), "rows=%d n=%d",
                      rows, n);

            // backward accumulates into prefilled gradients; dx NULL allowed
            float *dx = clef_test_falloc(rn), *dg = clef_test_falloc(n),
                  *db = clef_test_falloc(n);
            float *dxr = clef_test_falloc(rn), *dgr = clef_test_falloc(n),
                  *dbr = clef_test_falloc(n);
            clef_test_fill_pattern(dx, rn), clef_test_fill_pattern(dg, n);
            clef_test_fill_pattern(db, n);
            clef_test_fcopy(dxr, dx, rn), clef_test_fcopy(dgr, dg, n);
            clef_test_fcopy(dbr, db, n);
            k->layernorm_bwd(rows, n, dy, hr, rsr, g, dx, dg, db);
            clef_f32_layernorm_bwd__scalar(rows, n, dy, hr, rsr, g, dxr, dgr,
                                           dbr);
            double tb = 16 + 2.0 * (rows > n ? rows : n);
            cr_assert(close_eps("dx", dx, dxr, rn, tb), "rows=%d n=%d", rows,
                      n);
            cr_assert(close_eps("dgamma", dg, dgr, n, tb), "rows=%d n=%d", rows,
                      n);
            cr_assert(close_eps("dbeta", db, dbr, n, tb), "rows=%d n=%d", rows,
                      n);
            k->layernorm_bwd(rows, n, dy, hr, rsr, g, NULL, dg, db);
            clef_f32_layernorm_bwd__scalar(rows, n, dy, hr, rsr, g, NULL, dgr,
                                           dbr);
            cr_assert(close_eps("dgamma (dx NULL)", dg, dgr, n, 2 * tb));
            free(x), free(g), free(be), free(dy), free(y), free(h), free(rs);
            free(yr), free(hr), free(rsr), free(dx), free(dg), free(db);
            free(dxr), free(dgr), free(dbr);
        }
}

// ---- GELU ----
Test(onednn, gelu_fwd_bwd_vs_scalar)
{
    const clef_kernels *k = onednn();
    static const size_t ns[] = {1, 15, 16, 17, 1000};
    uint64_t rng = 603;
    for (int i = 0; i < 5; i++) {
        size_t n = ns[i];
        float *x = clef_test_falloc(n), *dy = clef_test_falloc(n);
        float *y = clef_test_falloc(n), *yr = clef_test_falloc(n);
        float *dx = clef_test_falloc(n), *dxr = clef_test_falloc(n);
        clef_test_fill_uniform(x, n, -6.0f, 6.0f, &rng);
        clef_test_fill_uniform(dy, n, -1.0f, 1.0f, &rng);
        clef_test_fill_const(y, n, NAN);
        k->gelu_fwd(n, x, y);
        clef_f32_gelu_fwd__scalar(n, x, yr);
        cr_assert(close_eps("gelu", y, yr, n, 16), "n=%zu", n);
        clef_test_fill_pattern(dx, n);
        clef_test_fcopy(dxr, dx, n);
        k->gelu_bwd(n, x, dy, dx);
        clef_f32_gelu_bwd__scalar(n, x, dy, dxr);
        cr_assert(close_eps("gelu dx", dx, dxr, n, 16), "n=%zu", n);
        free(x), free(dy), free(y), free(yr), free(dx), free(dxr);
    }
}

// ---- softmax ----
Test(onednn, softmax_fwd_bwd_vs_scalar_with_masked_rows)
{
    const clef_kernels *k = onednn();
    static const int rows_[] = {1, 5}, ns[] = {1, 2, 7, 33, 100};
    uint64_t rng = 604;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 5; b++) {
            int rows = rows_[a], n = ns[b];
            size_t rn = (size_t)rows * n;
            float *x = clef_test_falloc(rn), *y = clef_test_falloc(rn),
                  *yr = clef_test_falloc(rn), *dy = clef_test_falloc(rn),
                  *dx = clef_test_falloc(rn), *dxr = clef_test_falloc(rn);
            clef_test_fill_uniform(x, rn, -8.0f, 8.0f, &rng);
            clef_test_fill_uniform(dy, rn, -1.0f, 1.0f, &rng);
            if (n > 1)
                x[1] = -INFINITY; // a masked entry
            if (rows > 1)         // a fully masked row gives zeros (kernels.h)
                for (int i = 0; i < n; i++)
                    x[(size_t)n + i] = -INFINITY;
            clef_test_fill_const(y, rn, NAN);
            k->softmax_fwd(rows, n, x, y);
            clef_f32_softmax_fwd__scalar(rows, n, x, yr);
            double t = 8 + 2.0 * n;
            cr_assert(close_eps("softmax", y, yr, rn, t), "rows=%d n=%d", rows,
                      n);
            if (rows > 1)
                for (int i = 0; i < n; i++)
                    cr_assert_eq(y[(size_t)n + i], 0.0f, "masked row");
            clef_test_fcopy(y, x, rn); // in place: y = softmax(y)
            k->softmax_fwd(rows, n, y, y);
            cr_assert(close_eps("softmax in place", y, yr, rn, t),
                      "rows=%d n=%d", rows, n);
            clef_test_fill_pattern(dx, rn);
            clef_test_fcopy(dxr, dx, rn);
            k->softmax_bwd(rows, n, yr, dy, dx);
            clef_f32_softmax_bwd__scalar(rows, n, yr, dy, dxr);
            cr_assert(close_eps("softmax dx", dx, dxr, rn, t), "rows=%d n=%d",
                      rows, n);
            free(x), free(y), free(yr), free(dy), free(dx), free(dxr);
        }
}

// ---- the primitive cache ----
static int g_builds;

// A real primitive (eltwise relu over d[0] floats) that counts its builds.
static int build_counting(clef_onednn_prim *p)
{
    g_builds++;
    dnnl_dims_t dims = {p->key.d[0]};
    dnnl_eltwise_desc_t d;
    if (dnnl_memory_desc_init_by_tag(&p->md[0], 1, dims, dnnl_f32, dnnl_a) ||
        dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference,
                                       dnnl_eltwise_relu, &p->md[0], 0.0f,
                                       0.0f))
        return -1;
    return clef_onednn_create(p, &d, NULL, NULL);
}

Test(onednn, cache_returns_the_same_primitive_for_the_same_key)
{
    onednn();
    clef_onednn_key k1, k2;
    memset(&k1, 0, sizeof k1), memset(&k2, 0, sizeof k2);
    k1.kind = 1000, k1.d[0] = 64; // kinds outside the backend's own
    k2.kind = 1000, k2.d[0] = 65;
    g_builds = 0;
    clef_onednn_prim *a = clef_onednn_acquire(&k1, build_counting);
    cr_assert_not_null(a);
    dnnl_primitive_t prim = a->prim;
    clef_onednn_release(a);
    clef_onednn_prim *b = clef_onednn_acquire(&k1, build_counting);
    cr_assert_not_null(b);
    cr_expect_eq(b, a, "same slot");
    cr_expect_eq(b->prim, prim, "same primitive, not rebuilt");
    cr_expect_eq(g_builds, 1);
    clef_onednn_prim *c = clef_onednn_acquire(&k2, build_counting);
    cr_assert_not_null(c);
    cr_expect_neq(c->prim, prim, "another shape, another primitive");
    cr_expect_eq(g_builds, 2);
    clef_onednn_release(b), clef_onednn_release(c);

    // through a kernel: the second call of a shape is a hit
    clef_onednn_cache_stats s0, s1, s2;
    float A[6 * 5], B[4 * 5], C[6 * 4];
    for (int i = 0; i < 30; i++)
        A[i] = (float)(i % 5);
    for (int i = 0; i < 20; i++)
        B[i] = (float)(i % 3);
    clef_onednn_cache_get_stats(&s0);
    clef_f32_gemm_nt__onednn(6, 4, 5, A, 5, B, 5, C, 4, 0);
    clef_onednn_cache_get_stats(&s1);
    clef_f32_gemm_nt__onednn(6, 4, 5, A, 5, B, 5, C, 4, 0);
    clef_onednn_cache_get_stats(&s2);
    cr_expect_eq(s1.misses, s0.misses + 1);
    cr_expect_eq(s2.misses, s1.misses, "reused");
    cr_expect_eq(s2.hits, s1.hits + 1);
}

Test(onednn, cache_evicts_least_recently_used_when_full)
{
    onednn();
    clef_onednn_cache_stats s0, s1;
    clef_onednn_cache_get_stats(&s0);
    int extra = 5;
    clef_onednn_key k;
    for (int i = 0; i < s0.capacity + extra; i++) {
        memset(&k, 0, sizeof k);
        k.kind = 1001, k.d[0] = 1 + i;
        clef_onednn_prim *p = clef_onednn_acquire(&k, build_counting);
        cr_assert_not_null(p);
        clef_onednn_release(p);
    }
    clef_onednn_cache_get_stats(&s1);
    cr_expect_eq(s1.entries, s1.capacity);
    cr_expect_geq(s1.evictions - s0.evictions, extra);
    // the most recent key is still there: no new build
    int before = g_builds;
    clef_onednn_prim *p = clef_onednn_acquire(&k, build_counting);
    cr_assert_not_null(p);
    clef_onednn_release(p);
    cr_expect_eq(g_builds, before);
}

// ---- per-thread state ----
// On one OpenMP thread: a 64³ GEMM is over the blocking threshold, and the
// team it would start belongs to this thread; libgomp ends those workers
// only after pthread_join returns, so their states would still be counted.
static void *gemm_thread(void *arg)
{
    const clef_kernels *k = arg;
    omp_set_num_threads(1);
    float A[64 * 64], B[64 * 64], C[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        A[i] = (float)(i % 5), B[i] = (float)(i % 3);
    k->gemm_nt(64, 64, 64, A, 64, B, 64, C, 64, 0); // a stream, a scratchpad
    k->softmax_bwd(8, 64, A, B, C);                 // scratch
    return NULL;
}

// A thread's stream, scratch and scratchpad are freed when it ends (defect
// 13: they were thread-locals never freed); the rest at process exit.
Test(onednn, thread_state_is_freed_when_the_thread_ends)
{
    const clef_kernels *k = onednn();
    gemm_thread((void *)k); // this thread's own, kept
    const int before = clef_onednn_thread_states();
    for (int i = 0; i < 3; i++) {
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, gemm_thread, (void *)k), 0);
        cr_assert_eq(pthread_join(t, NULL), 0);
    }
    cr_expect_eq(clef_onednn_thread_states(), before,
                 "ended threads left their state (%d -> %d)", before,
                 clef_onednn_thread_states());
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

static void gemm_random(clef_gemm_fn f, int M, int N, int K, float *C,
                        uint64_t seed)
{
    float *A = clef_test_falloc((size_t)M * K),
          *B = clef_test_falloc((size_t)N * K);
    clef_test_fill_uniform(A, (size_t)M * K, -1.0f, 1.0f, &seed);
    clef_test_fill_uniform(B, (size_t)N * K, -1.0f, 1.0f, &seed);
    f(M, N, K, A, K, B, K, C, N, 0);
    free(A), free(B);
}

Test(onednn, results_do_not_depend_on_the_thread_count)
{
    const clef_kernels *k = onednn();
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: cannot run two threads");
    // random floats: any change of summation order would show. Shapes with a
    // long K and few outputs are where a library would split K.
    static const int shapes[][3] = {{8, 8, 20000}, {96, 64, 512}, {1, 3, 4097}};
    for (int s = 0; s < 3; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *c1 = clef_test_falloc((size_t)M * N),
              *c2 = clef_test_falloc((size_t)M * N);
        omp_set_num_threads(1);
        gemm_random(k->gemm_nt, M, N, K, c1, 605);
        omp_set_num_threads(2);
        gemm_random(k->gemm_nt, M, N, K, c2, 605);
        cr_expect(memcmp(c1, c2, (size_t)M * N * sizeof(float)) == 0,
                  "oneDNN gemm_nt M=%d N=%d K=%d differs between 1 and 2 "
                  "threads",
                  M, N, K);
        free(c1), free(c2);
    }
}

// C (M,N) of layout lay on random operands (ld = the packed width).
static void gemm_random_layout(const clef_kernels *k, layout lay, int M, int N,
                               int K, float *C, uint64_t seed)
{
    float *A = clef_test_falloc((size_t)M * K),
          *B = clef_test_falloc((size_t)N * K);
    clef_test_fill_uniform(A, (size_t)M * K, -1.0f, 1.0f, &seed);
    clef_test_fill_uniform(B, (size_t)N * K, -1.0f, 1.0f, &seed);
    if (lay == NT)
        k->gemm_nt(M, N, K, A, K, B, K, C, N, 0);
    else if (lay == NN)
        k->gemm_nn(M, N, K, A, K, B, N, C, N, 0);
    else
        k->gemm_tn(M, N, K, A, M, B, N, C, N, 0);
    free(A), free(B);
}

// Every layout, on 1, 2 and 3 threads and from inside a parallel region
// (where oneDNN would have planned a team it does not get), and LayerNorm's
// γ and β sums over many rows: the same bits (issue 16).
Test(onednn, results_do_not_depend_on_threads_layout_or_region)
{
    const clef_kernels *k = onednn();
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: cannot run two threads");
    const int before = omp_get_max_threads();
    static const int shapes[][3] = {
        {64, 256, 2000}, {256, 64, 3000}, {32, 128, 10000}, {300, 500, 700}};
    for (int lay = NT; lay <= TN; lay++)
        for (int s = 0; s < 4; s++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            size_t mn = (size_t)M * N;
            float *c1 = clef_test_falloc(mn), *c = clef_test_falloc(mn);
            omp_set_num_threads(1);
            gemm_random_layout(k, (layout)lay, M, N, K, c1, 613);
            for (int t = 2; t <= 4; t++) { // 4: inside a region of 2
                omp_set_num_threads(t == 4 ? 2 : t);
                if (t < 4)
                    gemm_random_layout(k, (layout)lay, M, N, K, c, 613);
                else {
#pragma omp parallel num_threads(2)
                    if (omp_get_thread_num() == 1)
                        gemm_random_layout(k, (layout)lay, M, N, K, c, 613);
                }
                cr_expect(memcmp(c1, c, mn * sizeof(float)) == 0,
                          "layout %d M=%d N=%d K=%d: 1 thread and %s differ",
                          lay, M, N, K,
                          t == 2   ? "2"
                          : t == 3 ? "3"
                                   : "a parallel region");
            }
            free(c1), free(c);
        }
    // LayerNorm backward: γ, β sums over 8192 rows
    const int rows = 8192, n = 64;
    size_t rn = (size_t)rows * n;
    float *dy = clef_test_falloc(rn), *xh = clef_test_falloc(rn);
    float *rs = clef_test_falloc(rows), *g = clef_test_falloc(n);
    float *sums[2];
    uint64_t rng = 614;
    clef_test_fill_uniform(dy, rn, -1.0f, 1.0f, &rng);
    clef_test_fill_uniform(xh, rn, -2.0f, 2.0f, &rng);
    clef_test_fill_uniform(rs, rows, 0.5f, 2.0f, &rng);
    clef_test_fill_uniform(g, n, 0.5f, 1.5f, &rng);
    for (int t = 0; t < 2; t++) {
        sums[t] = clef_test_falloc(2 * (size_t)n); // dγ, dβ
        omp_set_num_threads(t + 1);
        k->layernorm_bwd(rows, n, dy, xh, rs, g, NULL, sums[t], sums[t] + n);
    }
    cr_expect(memcmp(sums[0], sums[1], 2 * (size_t)n * sizeof(float)) == 0,
              "LayerNorm backward's sums differ between 1 and 2 threads");
    free(dy), free(xh), free(rs), free(g), free(sums[0]), free(sums[1]);
    omp_set_num_threads(before);
}

Test(onednn, threads_follow_the_setting_and_do_not_nest)
{
    const clef_kernels *k = onednn();
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: cannot run two threads");
    const int M = 256, N = 256, K = 256;
    float *C = clef_test_falloc((size_t)M * N);
    // 1 thread: oneDNN starts none
    omp_set_num_threads(1);
    int t0 = os_threads();
    gemm_random(k->gemm_nt, M, N, K, C, 606);
    cr_expect_eq(os_threads(), t0, "threads 1: oneDNN started threads");
    // 2 threads, a tiny GEMM: still serial, and the setting comes back
    omp_set_num_threads(2);
    gemm_random(k->gemm_nt, 8, 8, 8, C, 606);
    cr_expect_eq(os_threads(), t0, "a tiny GEMM started threads");
    cr_expect_eq(omp_get_max_threads(), 2, "thread setting not restored");
    // 2 threads: oneDNN's team of 2 starts one
    gemm_random(k->gemm_nt, M, N, K, C, 606);
    int t2 = os_threads();
    cr_expect_eq(t2, t0 + 1, "threads 2: a team of 2 (%d -> %d)", t0, t2);
    // from inside clef's own parallel region, with nesting allowed: a
    // library that opened a nested team would start more OS threads than
    // clef's own team of 2 (warmed up first)
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
        gemm_random(k->gemm_nt, M, N, K, Ct, 607);
        int t = os_threads();
#pragma omp critical
        worst = t > worst ? t : worst;
        free(Ct);
    }
    cr_expect_eq(worst, t2, "nested call started threads (%d -> %d)", t2,
                 worst);
    free(C);
}

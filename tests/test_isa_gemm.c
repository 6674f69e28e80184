// GEMM of the ISA backends (avx2: clef_f32_gemm_*_6x16__avx2, avx512:
// clef_f32_gemm_*_14x32__avx512) against a double reference, through the
// backends' tables:
//   - every remainder of the small path: M, N in 1..33, K in {1,2,5,8,15,16,17,31,33}
//   - the small path at the head's skinny shapes (a batch's few rows against
//     a large weight): M in {1, 4, 6, 7, 12, 13, 14, 25, 47, 48, 96} with
//     K = 1100 (every row tile and K block remainder; avx512 runs nt and nn
//     up to 96 rows unpacked), and tn with K in {1, 12, 13, 14, 25, 47, 48,
//     96}, N = 1100
//   - every remainder of the packed path: M in 14..42, N in 16..50 at K = 160
//     (every MR and NR remainder of both tiles), K across a KC block (1100),
//     N across NC blocks with a partial last one (2100), one-KC products
//     large enough to split rows of C across threads
//   - accumulate 0 (C pre-filled with NaN, must be ignored) and 1, ld > width,
//     C padding untouched
// Tolerance per element: (K + 2) FLT_EPSILON Σ_k |a_ik b_kj| + 2 FLT_EPSILON
// |C_before| (float dot-product bound; FMA only tightens it).
// Determinism: a packed-path GEMM on 1, 2 and 3 OpenMP threads is bitwise equal.
// A backend this CPU cannot run is skipped with the reason.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa_common.h"

#define PAD_A 3
#define PAD_B 5
#define PAD_C 2
#define SENTINEL 1234.5f

typedef enum { NT, NN, TN } layout;
static const char *layout_name[] = {"gemm_nt", "gemm_nn", "gemm_tn"};

static clef_gemm_fn gemm_of(const clef_kernels *k, layout lay)
{
    return lay == NT ? k->gemm_nt : lay == NN ? k->gemm_nn : k->gemm_tn;
}

// One case; false (after printing the first mismatch) on failure.
static bool gemm_case(clef_gemm_fn fn, layout lay, int M, int N, int K, int acc,
                      uint64_t *rng)
{
    int arows = lay == TN ? K : M, acols = lay == TN ? M : K;
    int brows = lay == NT ? N : K, bcols = lay == NT ? K : N;
    int lda = acols + PAD_A, ldb = bcols + PAD_B, ldc = N + PAD_C;
    size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb,
           nc = (size_t)M * ldc;
    float *A = clef_test_falloc(na), *B = clef_test_falloc(nb);
    float *C = clef_test_falloc(nc), *C0 = clef_test_falloc(nc);
    double *Ad = clef_test_dalloc(na), *Bd = clef_test_dalloc(nb);
    double *Cd = clef_test_dalloc((size_t)M * N),
           *bound = clef_test_dalloc((size_t)M * N);
    float *got = clef_test_falloc((size_t)M * N);

    clef_test_fill_uniform(A, na, -1.0f, 1.0f, rng);
    clef_test_fill_uniform(B, nb, -1.0f, 1.0f, rng);
    if (acc)
        clef_test_fill_uniform(C, nc, -2.0f, 2.0f, rng);
    else
        clef_test_fill_const(C, nc, NAN);
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            C[(size_t)i * ldc + j] = SENTINEL;
    clef_test_fcopy(C0, C, nc);
    clef_test_to_double(A, Ad, na);
    clef_test_to_double(B, Bd, nb);
    clef_test_ref_gemm(M, N, K, Ad, lda, lay == TN, Bd, ldb, lay == NT, Cd, N,
                       bound);

    fn(M, N, K, A, lda, B, ldb, C, ldc, acc);

    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            size_t o = (size_t)i * N + j;
            float c0 = C0[(size_t)i * ldc + j];
            got[o] = C[(size_t)i * ldc + j];
            bound[o] = (K + 2) * CLEF_TEST_EPS * bound[o];
            if (acc) {
                Cd[o] += c0;
                bound[o] += 2 * CLEF_TEST_EPS * fabs(c0);
            }
        }
    bool ok = clef_test_within(got, Cd, bound, (size_t)M * N);
    for (int i = 0; i < M && ok; i++)
        for (int j = N; j < ldc; j++)
            if (C[(size_t)i * ldc + j] != SENTINEL) {
                fprintf(stderr, "C padding written at (%d, %d)\n", i, j);
                ok = false;
            }
    free(A), free(B), free(C), free(C0), free(Ad), free(Bd), free(Cd);
    free(bound), free(got);
    return ok;
}

#define CASE(M, N, K, acc)                                                     \
    cr_assert(gemm_case(fn, lay, M, N, K, acc, &rng),                          \
              "%s %s M=%d N=%d K=%d accumulate=%d", isa, layout_name[lay], M,  \
              N, K, acc)

static void small_remainders(const char *isa, layout lay)
{
    clef_gemm_fn fn = gemm_of(isa_table_or_skip(isa), lay);
    static const int ks[] = {1, 2, 5, 8, 15, 16, 17, 31, 33};
    uint64_t rng = 0x15a00u + lay;
    for (int M = 1; M <= 33; M++)
        for (int N = 1; N <= 33; N++)
            for (int ki = 0; ki < 9; ki++)
                CASE(M, N, ks[ki], (M + N + ki) & 1);
    // the empty sum (K = 0): zeros, or C unchanged; small and threaded sizes
    static const int mn0[] = {1, 7, 13, 33, 300};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++)
            for (int acc = 0; acc < 2; acc++)
                CASE(mn0[a], mn0[b] * (b == 4 ? 7 : 1), 0, acc);
}

static void packed_remainders(const char *isa, layout lay)
{
    clef_gemm_fn fn = gemm_of(isa_table_or_skip(isa), lay);
    uint64_t rng = 0x9ac00u + lay;
    for (int M = 14; M <= 42; M++)
        for (int N = 16; N <= 50; N++)
            CASE(M, N, 160, (M + N) & 1);
    // every row remainder above the rows avx512 runs unpacked (nt, nn ≤ 96)
    for (int M = 97; M <= 110; M++)
        CASE(M, 40, 160, M & 1);
    // K across a KC block, M across an MC block, N across NR panels
    CASE(131, 77, 1100, 0);
    CASE(131, 77, 1100, 1);
    CASE(300, 45, 70, 1);
    // N across NC blocks (≤ 2·L2 wide) with a partial last one, whose
    // thread shares of B panels differ from the full blocks'
    CASE(100, 2100, 1100, 1);
    // one KC block, large enough for threads: rows of C split across them
    // (gemm_packed_rows), with MR and NR remainders and NC blocks
    CASE(157, 1000, 300, 0);
    CASE(300, 2100, 48, 1);
}

// few rows, long reductions or wide outputs: large enough for the threaded
// small path (> 4e6 flops), skinny enough to stay off the packed path
static void small_wide(const char *isa, layout lay)
{
    clef_gemm_fn fn = gemm_of(isa_table_or_skip(isa), lay);
    static const int rows[] = {1, 4, 6, 7, 12, 13, 14, 25, 47, 48, 96};
    uint64_t rng = 0x5e1du + lay;
    for (int i = 0; i < 11; i++) {
        if (lay == TN) // short reduction: the batch's rows are K
            CASE(301, 1100, rows[i] < 12 ? 1 : rows[i], i & 1);
        else
            CASE(rows[i], 301, 1100, i & 1);
    }
}

Test(isa_gemm, avx512_nt_small_wide)
{
    small_wide("avx512", NT);
}
Test(isa_gemm, avx512_nn_small_wide)
{
    small_wide("avx512", NN);
}
Test(isa_gemm, avx512_tn_small_wide)
{
    small_wide("avx512", TN);
}
Test(isa_gemm, avx2_nt_small_wide)
{
    small_wide("avx2", NT);
}
Test(isa_gemm, avx2_nn_small_wide)
{
    small_wide("avx2", NN);
}
Test(isa_gemm, avx2_tn_small_wide)
{
    small_wide("avx2", TN);
}

Test(isa_gemm, avx512_nt_small)
{
    small_remainders("avx512", NT);
}
Test(isa_gemm, avx512_nn_small)
{
    small_remainders("avx512", NN);
}
Test(isa_gemm, avx512_tn_small)
{
    small_remainders("avx512", TN);
}
Test(isa_gemm, avx512_nt_packed)
{
    packed_remainders("avx512", NT);
}
Test(isa_gemm, avx512_nn_packed)
{
    packed_remainders("avx512", NN);
}
Test(isa_gemm, avx512_tn_packed)
{
    packed_remainders("avx512", TN);
}
Test(isa_gemm, avx2_nt_small)
{
    small_remainders("avx2", NT);
}
Test(isa_gemm, avx2_nn_small)
{
    small_remainders("avx2", NN);
}
Test(isa_gemm, avx2_tn_small)
{
    small_remainders("avx2", TN);
}
Test(isa_gemm, avx2_nt_packed)
{
    packed_remainders("avx2", NT);
}
Test(isa_gemm, avx2_nn_packed)
{
    packed_remainders("avx2", NN);
}
Test(isa_gemm, avx2_tn_packed)
{
    packed_remainders("avx2", TN);
}

// 1, 2 and 3 threads give bitwise the same C (threads split output tiles and
// packing, never K), on the packed path and on the threaded small path.
static void threads_bitwise_at(const char *isa, int M, int N, int K)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x7d7du;
    // A holds M·K floats and B N·K in every layout (ld = the stored width)
    float *A = clef_test_falloc((size_t)M * K),
          *B = clef_test_falloc((size_t)N * K);
    float *C1 = clef_test_falloc((size_t)M * N),
          *Ct = clef_test_falloc((size_t)M * N);
    clef_test_fill_uniform(A, (size_t)M * K, -1, 1, &rng);
    clef_test_fill_uniform(B, (size_t)N * K, -1, 1, &rng);
    int saved = omp_get_max_threads();
    for (int lay = NT; lay <= TN; lay++) {
        clef_gemm_fn fn = gemm_of(k, (layout)lay);
        int lda = lay == TN ? M : K, ldb = lay == NT ? K : N;
        omp_set_num_threads(1);
        fn(M, N, K, A, lda, B, ldb, C1, N, 0);
        for (int t = 2; t <= 3; t++) {
            omp_set_num_threads(t);
            clef_test_fill_const(Ct, (size_t)M * N, NAN);
            fn(M, N, K, A, lda, B, ldb, Ct, N, 0);
            cr_assert(memcmp(C1, Ct, sizeof(float) * M * N) == 0,
                      "%s %s: %d threads differ from 1 thread", isa,
                      layout_name[lay], t);
        }
    }
    omp_set_num_threads(saved);
    free(A), free(B), free(C1), free(Ct);
}

static void threads_bitwise(const char *isa)
{
    threads_bitwise_at(isa, 157, 211, 700);   // packed path (> 4e6 flops)
    threads_bitwise_at(isa, 100, 2100, 1100); // several KC and NC blocks
    threads_bitwise_at(isa, 157, 1000, 300);  // one KC block
    threads_bitwise_at(isa, 300, 2100, 48);   // one short KC block
    threads_bitwise_at(isa, 301, 97, 700);    // tall: threads split rows
    threads_bitwise_at(isa, 12, 211, 700);    // small path: few rows
    threads_bitwise_at(isa, 600, 700, 12);    // small path: tn's short K
}

Test(isa_gemm, avx512_threads_bitwise)
{
    threads_bitwise("avx512");
}
Test(isa_gemm, avx2_threads_bitwise)
{
    threads_bitwise("avx2");
}

// avx512's tn with C 8 wide runs 16 rows of C per zmm column
// (gemm_tn_n8_rows16) and hands the rows left over to AVX2: its C must be
// the AVX2 kernel's bit for bit (the same FMA chain per element), over row
// counts around 16-row blocks, short and long K, both accumulate modes.
Test(isa_gemm, avx512_tn_n8_bitwise_avx2)
{
    const clef_kernels *k512 = isa_table_or_skip("avx512");
    const clef_kernels *k2 = isa_table_or_skip("avx2");
    static const int ms[] = {16, 17, 31, 32, 33, 96, 100, 203};
    static const int ks[] = {1, 3, 8, 13, 40};
    uint64_t rng = 0x7e8u;
    for (int mi = 0; mi < 8; mi++)
        for (int ki = 0; ki < 5; ki++)
            for (int acc = 0; acc < 2; acc++) {
                const int M = ms[mi], K = ks[ki], lda = M + PAD_A,
                          ldb = 8 + PAD_B;
                const int ldc = 8 + PAD_C;
                const size_t nc = (size_t)M * ldc;
                float *A = clef_test_falloc((size_t)K * lda);
                float *B = clef_test_falloc((size_t)K * ldb);
                float *C1 = clef_test_falloc(nc), *C2 = clef_test_falloc(nc);
                clef_test_fill_uniform(A, (size_t)K * lda, -1.0f, 1.0f, &rng);
                clef_test_fill_uniform(B, (size_t)K * ldb, -1.0f, 1.0f, &rng);
                clef_test_fill_uniform(C1, nc, -2.0f, 2.0f, &rng);
                clef_test_fcopy(C2, C1, nc);
                k512->gemm_tn(M, 8, K, A, lda, B, ldb, C1, ldc, acc);
                k2->gemm_tn(M, 8, K, A, lda, B, ldb, C2, ldc, acc);
                long d = clef_test_first_diff(C1, C2, nc);
                cr_assert(d < 0,
                          "tn M=%d N=8 K=%d accumulate=%d: avx512 and avx2 "
                          "differ at %ld",
                          M, K, acc, d);
                free(A), free(B), free(C1), free(C2);
            }
}

// The bf16 kernels of every backend that has its own (amx:
// clef_bf16_gemm_*_32x32__amx, avx512_bf16: clef_bf16_gemm_*_12x32__
// avx512bf16, onednn: clef_bf16_gemm_*__onednn; avx512 and avx2: their fp32
// GEMMs on widened operands, clef_bf16_gemm_*_14x32__avx512 and _6x16__avx2;
// cvt_f32_bf16 of avx2 and avx512) against the scalar reference, through the
// backends' tables:
//   - GEMM remainders of the 16×16 / 16×32 tiles and the 12×32 microkernel:
//     M, N in {1, 2, 11, 12, 13, 15, 16, 17, 31, 32, 33}, K in {1, 2, 3, 31,
//     32, 33, 63, 64, 65} (K odd: the last pair half empty), both
//     accumulate flags (C NaN-filled for 0), ld above the width, C padding
//     untouched; then K across a K block (1100, 2100), N across parallel
//     column chunks, tall and skinny products
//   - tolerance per element: (K + 2) FLT_EPSILON Σ_k |a b| + 2 FLT_EPSILON
//     |C_before| (float sums in any order; the reference's own rounding is
//     one FLT_EPSILON of the sum); bf16 fills in [-1, 1] have no denormals,
//     which the hardware kernels would flush
//   - 1, 2 and 3 threads give bitwise the same C
//   - cvt_f32_bf16: bitwise the scalar reference on every length 1..100,
//     special values included
// The AMX kernels also run on emulated tiles (tests/util_amx_emu.c) on any
// CPU with AVX-512, AMX or not: the same remainders, large shapes and
// thread counts, so their blocking, packing and edge handling are checked
// everywhere; only the tile instructions themselves need an AMX CPU.
// A kernel this CPU cannot run is skipped with the reason, never passed.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amx_emu.h"
#include "isa_common.h"

typedef enum { NT, NN, TN } layout;
static const char *const lname[] = {"gemm_bf16_nt", "gemm_bf16_nn",
                                    "gemm_bf16_tn"};

static clef_gemm_bf16_fn gemm_of(const clef_kernels *k, layout l)
{
    return l == NT   ? k->gemm_bf16_nt
           : l == NN ? k->gemm_bf16_nn
                     : k->gemm_bf16_tn;
}

// The table of a backend whose bf16 GEMMs are its own, or skip.
static const clef_kernels *own_or_skip(const char *name, layout l)
{
    const clef_kernels *k = isa_table_or_skip(name);
    char tag[40];
    snprintf(tag, sizeof tag, "__%s",
             strcmp(name, "avx512_bf16") == 0 ? "avx512bf16" : name);
    const char *kn = k->names[CLEF_OP_gemm_bf16_nt + l];
    cr_assert(strstr(kn, tag), "%s: %s is not its own kernel", name, kn);
    return k;
}

static void fill_bf16(uint16_t *x, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) {
        float f = (float)(2.0 * clef_test_rand_unit(rng) - 1.0);
        clef_cvt_f32_bf16__scalar(1, &f, &x[i]);
    }
}

static double bf_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static bool gemm_case(const char *be, clef_gemm_bf16_fn fn, layout l, int M,
                      int N, int K, int acc, uint64_t *rng)
{
    const int arows = l == TN ? K : M, acols = l == TN ? M : K;
    const int brows = l == NT ? N : K, bcols = l == NT ? K : N;
    const int lda = acols + 3, ldb = bcols + 5, ldc = N + 2;
    const size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb;
    const size_t nc = (size_t)M * ldc, mn = (size_t)M * N;
    uint16_t *A = malloc(na * 2 + 2), *B = malloc(nb * 2 + 2); // K = 0: none
    float *C = clef_test_falloc(nc), *Cr = clef_test_falloc(nc);
    double *bound = clef_test_dalloc(mn), *ref = clef_test_dalloc(mn);
    float *got = clef_test_falloc(mn);
    cr_assert(A && B);
    fill_bf16(A, na, rng);
    fill_bf16(B, nb, rng);
    if (acc)
        clef_test_fill_uniform(C, nc, -2.0f, 2.0f, rng);
    else
        clef_test_fill_const(C, nc, NAN);
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            C[(size_t)i * ldc + j] = 1234.5f;
    clef_test_fcopy(Cr, C, nc);
    // Σ_k |a b| per element, for the bound
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                double a = bf_value(l == TN ? A[(size_t)k * lda + i]
                                            : A[(size_t)i * lda + k]);
                double b = bf_value(l == NT ? B[(size_t)j * ldb + k]
                                            : B[(size_t)k * ldb + j]);
                s += fabs(a * b);
            }
            const double c0 = acc ? fabs(C[(size_t)i * ldc + j]) : 0.0;
            bound[(size_t)i * N + j] =
                (K + 2) * CLEF_TEST_EPS * s + 2 * CLEF_TEST_EPS * c0 + 1e-30;
        }
    const clef_gemm_bf16_fn sref = l == NT   ? clef_bf16_gemm_nt__scalar
                                   : l == NN ? clef_bf16_gemm_nn__scalar
                                             : clef_bf16_gemm_tn__scalar;
    sref(M, N, K, A, lda, B, ldb, Cr, ldc, acc);
    fn(M, N, K, A, lda, B, ldb, C, ldc, acc);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            got[(size_t)i * N + j] = C[(size_t)i * ldc + j];
            ref[(size_t)i * N + j] = Cr[(size_t)i * ldc + j];
        }
    bool ok = clef_test_within(got, ref, bound, mn);
    for (int i = 0; i < M && ok; i++)
        for (int j = N; j < ldc; j++)
            if (C[(size_t)i * ldc + j] != 1234.5f) {
                fprintf(stderr, "%s: C padding written at (%d, %d)\n", be, i,
                        j);
                ok = false;
            }
    free(A), free(B), free(C), free(Cr), free(bound), free(ref), free(got);
    return ok;
}

#define CASE(M, N, K, acc)                                                     \
    cr_assert(gemm_case(be, fn, l, M, N, K, acc, &rng),                        \
              "%s %s M=%d N=%d K=%d accumulate=%d", be, lname[l], M, N, K,     \
              acc)

static void remainders_of(const char *be, clef_gemm_bf16_fn fn, layout l)
{
    static const int mn[] = {1, 2, 11, 12, 13, 15, 16, 17, 31, 32, 33};
    static const int ks[] = {1, 2, 3, 31, 32, 33, 63, 64, 65};
    const int step = strcmp(be, "onednn") == 0 ? 3 : 1; // primitives: slow
    uint64_t rng = 0xbf1600u + l;
    for (int a = 0; a < 11; a += step)
        for (int b = 0; b < 11; b += step)
            for (int k = 0; k < 9; k++)
                CASE(mn[a], mn[b], ks[k], (a + b + k) & 1);
    CASE(13, 17, 0, 0); // the empty sum: zeros
    CASE(13, 17, 0, 1); // C unchanged
}

static void large_of(const char *be, clef_gemm_bf16_fn fn, layout l)
{
    uint64_t rng = 0xbf1700u + l;
    CASE(67, 45, 1100, 1);  // K across a 1024-deep block, remainders
    CASE(40, 70, 2100, 0);  // two blocks and a partial one
    CASE(33, 1000, 300, 1); // many column chunks: threads
    CASE(300, 33, 65, 0);   // tall
    CASE(1, 300, 700, 1);   // one row against a wide weight
    CASE(300, 1, 700, 0);   // one column
    CASE(77, 300, 1024, 1); // K whole 32-value steps, a partial row block
    CASE(64, 40, 2048, 0);  // whole row blocks, two K blocks
}

static void remainders(const char *be, layout l)
{
    remainders_of(be, gemm_of(own_or_skip(be, l), l), l);
}

static void large(const char *be, layout l)
{
    large_of(be, gemm_of(own_or_skip(be, l), l), l);
}

// The AMX kernels on emulated tiles, or skip.
static clef_gemm_bf16_fn amx_emulated_or_skip(layout l)
{
#if defined(__x86_64__)
    avx512_packs_or_skip();
    return l == NT   ? clef_bf16_gemm_nt_32x32__amxemu
           : l == NN ? clef_bf16_gemm_nn_32x32__amxemu
                     : clef_bf16_gemm_tn_32x32__amxemu;
#else
    (void)l;
    cr_skip_test("not x86-64: no AMX kernels to emulate");
    return NULL;
#endif
}

Test(isa_gemm_bf16, amx_nt)
{
    remainders("amx", NT);
}
Test(isa_gemm_bf16, amx_nn)
{
    remainders("amx", NN);
}
Test(isa_gemm_bf16, amx_tn)
{
    remainders("amx", TN);
}
Test(isa_gemm_bf16, amx_large_nt)
{
    large("amx", NT);
}
Test(isa_gemm_bf16, amx_large_nn)
{
    large("amx", NN);
}
Test(isa_gemm_bf16, amx_large_tn)
{
    large("amx", TN);
}
Test(isa_gemm_bf16, amx_emulated_nt)
{
    remainders_of("amx (emulated tiles)", amx_emulated_or_skip(NT), NT);
}
Test(isa_gemm_bf16, amx_emulated_nn)
{
    remainders_of("amx (emulated tiles)", amx_emulated_or_skip(NN), NN);
}
Test(isa_gemm_bf16, amx_emulated_tn)
{
    remainders_of("amx (emulated tiles)", amx_emulated_or_skip(TN), TN);
}
Test(isa_gemm_bf16, amx_emulated_large_nt)
{
    large_of("amx (emulated tiles)", amx_emulated_or_skip(NT), NT);
}
Test(isa_gemm_bf16, amx_emulated_large_nn)
{
    large_of("amx (emulated tiles)", amx_emulated_or_skip(NN), NN);
}
Test(isa_gemm_bf16, amx_emulated_large_tn)
{
    large_of("amx (emulated tiles)", amx_emulated_or_skip(TN), TN);
}
Test(isa_gemm_bf16, avx512_bf16_nt)
{
    remainders("avx512_bf16", NT);
}
Test(isa_gemm_bf16, avx512_bf16_nn)
{
    remainders("avx512_bf16", NN);
}
Test(isa_gemm_bf16, avx512_bf16_tn)
{
    remainders("avx512_bf16", TN);
}
Test(isa_gemm_bf16, avx512_bf16_large_nt)
{
    large("avx512_bf16", NT);
}
Test(isa_gemm_bf16, avx512_bf16_large_nn)
{
    large("avx512_bf16", NN);
}
Test(isa_gemm_bf16, avx512_bf16_large_tn)
{
    large("avx512_bf16", TN);
}
// CPUs without bf16 arithmetic: avx512's and avx2's fp32 GEMMs on widened
// operands (backends/gemm_bf16_widen.h)
Test(isa_gemm_bf16, avx512_nt)
{
    remainders("avx512", NT);
}
Test(isa_gemm_bf16, avx512_nn)
{
    remainders("avx512", NN);
}
Test(isa_gemm_bf16, avx512_tn)
{
    remainders("avx512", TN);
}
Test(isa_gemm_bf16, avx512_large_nt)
{
    large("avx512", NT);
}
Test(isa_gemm_bf16, avx512_large_nn)
{
    large("avx512", NN);
}
Test(isa_gemm_bf16, avx512_large_tn)
{
    large("avx512", TN);
}
Test(isa_gemm_bf16, avx2_nt)
{
    remainders("avx2", NT);
}
Test(isa_gemm_bf16, avx2_nn)
{
    remainders("avx2", NN);
}
Test(isa_gemm_bf16, avx2_tn)
{
    remainders("avx2", TN);
}
Test(isa_gemm_bf16, avx2_large_nt)
{
    large("avx2", NT);
}
Test(isa_gemm_bf16, avx2_large_nn)
{
    large("avx2", NN);
}
Test(isa_gemm_bf16, avx2_large_tn)
{
    large("avx2", TN);
}
Test(isa_gemm_bf16, onednn_nt)
{
    remainders("onednn", NT);
}
Test(isa_gemm_bf16, onednn_nn)
{
    remainders("onednn", NN);
}
Test(isa_gemm_bf16, onednn_tn)
{
    remainders("onednn", TN);
}

// 1, 2 and 3 threads (the AMX kernels on emulated tiles also 6 and 12,
// whose column chunks at N = 700 are 8, 8, 4, 3 and 1 panels wide): bitwise
// the same C (threads split column chunks and the packing of A, never K).
static void threads_bitwise_of(const char *be, const clef_gemm_bf16_fn fns[3],
                               int tmax)
{
    const int M = 100, N = 700, Kmax = 1100;
    uint64_t rng = 0x7b16u;
    uint16_t *A = malloc((size_t)M * Kmax * 2);
    uint16_t *B = malloc((size_t)N * Kmax * 2);
    float *C1 = clef_test_falloc((size_t)M * N);
    float *Ct = clef_test_falloc((size_t)M * N);
    cr_assert(A && B);
    fill_bf16(A, (size_t)M * Kmax, &rng);
    fill_bf16(B, (size_t)N * Kmax, &rng);
    int saved = omp_get_max_threads();
    // K 1100: a partial last K step; 1024: whole steps only
    for (int q = 0; q < 6; q++) {
        const int l = q % 3, K = q < 3 ? Kmax : 1024;
        clef_gemm_bf16_fn fn = fns[l];
        int lda = l == TN ? M : K, ldb = l == NT ? K : N;
        omp_set_num_threads(1);
        fn(M, N, K, A, lda, B, ldb, C1, N, 0);
        for (int t = 2; t <= tmax; t = t < 3 ? t + 1 : 2 * t) {
            omp_set_num_threads(t);
            clef_test_fill_const(Ct, (size_t)M * N, NAN);
            fn(M, N, K, A, lda, B, ldb, Ct, N, 0);
            cr_assert(memcmp(C1, Ct, sizeof(float) * M * N) == 0,
                      "%s %s K=%d: %d threads differ from 1", be, lname[l], K,
                      t);
        }
    }
    omp_set_num_threads(saved);
    free(A), free(B), free(C1), free(Ct);
}

static void threads_bitwise(const char *be)
{
    clef_gemm_bf16_fn fns[3];
    for (int l = NT; l <= TN; l++)
        fns[l] = gemm_of(own_or_skip(be, (layout)l), (layout)l);
    threads_bitwise_of(be, fns, 3);
}

Test(isa_gemm_bf16, amx_emulated_threads_bitwise)
{
    clef_gemm_bf16_fn fns[3];
    for (int l = NT; l <= TN; l++)
        fns[l] = amx_emulated_or_skip((layout)l);
    threads_bitwise_of("amx (emulated tiles)", fns, 12); // 2, 3, 6, 12
}
Test(isa_gemm_bf16, amx_threads_bitwise)
{
    threads_bitwise("amx");
}
Test(isa_gemm_bf16, avx512_bf16_threads_bitwise)
{
    threads_bitwise("avx512_bf16");
}
Test(isa_gemm_bf16, avx512_threads_bitwise)
{
    threads_bitwise("avx512");
}
Test(isa_gemm_bf16, avx2_threads_bitwise)
{
    threads_bitwise("avx2");
}

static void cvt_bitwise(const char *be, clef_cvt_bf16_fn fn)
{
    static const uint32_t special[] = {
        0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u,
        0xff800000u, 0x00000000u, 0x80000000u, 0x00008000u, 0x00018000u,
        0x007fffffu, 0x7fc00000u, 0x7f800001u, 0xff810000u, 0x7fffffffu};
    const int ns = (int)(sizeof special / sizeof special[0]);
    uint64_t rng = 0xc7u;
    float x[128];
    uint16_t want[128], got[130];
    for (int n = 1; n <= 100; n++) {
        for (int i = 0; i < n; i++) {
            uint32_t u = (uint32_t)clef_test_rng_next(&rng);
            if (i % 3 == 0)
                u = special[(i / 3 + n) % ns];
            memcpy(&x[i], &u, sizeof u);
        }
        for (int i = 0; i < n + 2; i++)
            got[i] = 0x5a5a;
        clef_cvt_f32_bf16__scalar((size_t)n, x, want);
        fn((size_t)n, x, got);
        for (int i = 0; i < n; i++)
            cr_assert_eq(got[i], want[i], "%s n=%d [%d]: 0x%04x, want 0x%04x",
                         be, n, i, got[i], want[i]);
        cr_assert(got[n] == 0x5a5a && got[n + 1] == 0x5a5a,
                  "%s n=%d: wrote past the end", be, n);
    }
}

Test(isa_gemm_bf16, cvt_avx512_bitwise)
{
    const clef_kernels *k = isa_table_or_skip("avx512");
    cvt_bitwise("avx512", k->cvt_f32_bf16);
}

Test(isa_gemm_bf16, cvt_avx2_bitwise)
{
    const clef_kernels *k = isa_table_or_skip("avx2");
    cvt_bitwise("avx2", k->cvt_f32_bf16);
}

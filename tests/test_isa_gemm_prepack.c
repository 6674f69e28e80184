// Pre-packed GEMM operands of the ISA backends (kernels.h, clef_gemm_prepack:
// clef_gemm_prepack_14x32__avx512, clef_gemm_prepack_6x16__avx2):
//   - gemm_pb (B packed) and gemm_pa (A packed), every op(A) / op(B) layout
//     (A (M,K) or (K,M), B (N,K) or (K,N)), against a double reference over
//     every MR / NR remainder of both tiles and K around a KC block, with the
//     same per-element bound as tests/test_isa_gemm.c: (K + 2) FLT_EPSILON
//     Σ_k |a_ik b_kj| + 2 FLT_EPSILON |C_before|
//   - accumulate 0 (C pre-filled with NaN) and 1, ld > width, C padding
//     untouched, K = 0 (C zeroed or kept)
//   - bitwise equal to the plain gemm_nt / gemm_nn / gemm_tn at shapes where
//     those take their packed path (the core switches between the two)
//   - packs and products bitwise the same on 1, 2 and 3 OpenMP threads
//   - the packed sizes within the documented bound (N + CLEF_PACK_PAD)·K
// A backend this CPU cannot run is skipped with the reason.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa_common.h"

#define PAD 3
#define SENTINEL 1234.5f

static const clef_gemm_prepack *prepack_or_skip(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    cr_assert_not_null(k->prepack, "%s has no pre-packed GEMM", isa);
    return k->prepack;
}

// One product: op(A) (M,K), op(B) (K,N); ta: A stored (K,M), tb: B stored
// (N,K). packed_b 1: B pre-packed (gemm_pb), else A (gemm_pa). Writes C
// (M, N + PAD) and returns it (the caller frees); *ok after the checks.
typedef struct gcase {
    int M, N, K, ta, tb, packed_b, acc;
} gcase;

typedef struct operands {
    float *A, *B, *C;
    int lda, ldb, ldc;
} operands;

static operands operands_make(const gcase *g, uint64_t *rng)
{
    operands o;
    const int ar = g->ta ? g->K : g->M, ac = g->ta ? g->M : g->K;
    const int br = g->tb ? g->N : g->K, bc = g->tb ? g->K : g->N;
    o.lda = ac + PAD, o.ldb = bc + PAD, o.ldc = g->N + PAD;
    o.A = clef_test_falloc((size_t)(ar > 0 ? ar : 1) * o.lda);
    o.B = clef_test_falloc((size_t)(br > 0 ? br : 1) * o.ldb);
    o.C = clef_test_falloc((size_t)g->M * o.ldc);
    clef_test_fill_uniform(o.A, (size_t)(ar > 0 ? ar : 1) * o.lda, -1, 1, rng);
    clef_test_fill_uniform(o.B, (size_t)(br > 0 ? br : 1) * o.ldb, -1, 1, rng);
    if (g->acc)
        clef_test_fill_uniform(o.C, (size_t)g->M * o.ldc, -2, 2, rng);
    else
        clef_test_fill_const(o.C, (size_t)g->M * o.ldc, NAN);
    for (int i = 0; i < g->M; i++)
        for (int j = g->N; j < o.ldc; j++)
            o.C[(size_t)i * o.ldc + j] = SENTINEL;
    return o;
}

static void operands_free(operands *o)
{
    free(o->A), free(o->B), free(o->C);
}

// A packing buffer: 64-byte aligned, as the interface asks.
static float *pack_alloc(size_t n)
{
    const size_t bytes = ((n > 0 ? n : 16) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    cr_assert_not_null(p);
    memset(p, 0, bytes);
    return p;
}

// Packs the chosen operand and runs the product into C.
static void run_prepacked(const clef_gemm_prepack *pk, const gcase *g,
                          const operands *o, float *C)
{
    if (g->packed_b) {
        const size_t n = pk->b_size(g->N, g->K);
        cr_assert_leq(n, ((size_t)g->N + CLEF_PACK_PAD) * g->K);
        float *Bp = pack_alloc(n);
        pk->pack_b(g->tb, g->N, g->K, o->B, o->ldb, Bp);
        cr_assert_eq(pk->gemm_pb(g->ta, g->M, g->N, g->K, o->A, o->lda, Bp, C,
                                 o->ldc, g->acc),
                     0);
        free(Bp);
        return;
    }
    const size_t n = pk->a_size(g->M, g->K);
    cr_assert_leq(n, ((size_t)g->M + CLEF_PACK_PAD) * g->K);
    float *Ap = pack_alloc(n);
    pk->pack_a(g->ta, g->M, g->K, o->A, o->lda, Ap);
    cr_assert_eq(pk->gemm_pa(g->tb, g->M, g->N, g->K, Ap, o->B, o->ldb, C,
                             o->ldc, g->acc),
                 0);
    free(Ap);
}

// Against the double reference; false (after printing) on failure.
static bool check_case(const clef_gemm_prepack *pk, const gcase *g,
                       uint64_t *rng)
{
    operands o = operands_make(g, rng);
    const int M = g->M, N = g->N, K = g->K;
    const size_t na = (size_t)(g->ta ? K : M) * o.lda;
    const size_t nb = (size_t)(g->tb ? N : K) * o.ldb;
    double *Ad = clef_test_dalloc(na ? na : 1),
           *Bd = clef_test_dalloc(nb ? nb : 1);
    double *Cd = clef_test_dalloc((size_t)M * N),
           *bound = clef_test_dalloc((size_t)M * N);
    float *C0 = clef_test_falloc((size_t)M * o.ldc),
          *got = clef_test_falloc((size_t)M * N);
    clef_test_fcopy(C0, o.C, (size_t)M * o.ldc);
    clef_test_to_double(o.A, Ad, na);
    clef_test_to_double(o.B, Bd, nb);
    clef_test_ref_gemm(M, N, K, Ad, o.lda, g->ta, Bd, o.ldb, g->tb, Cd, N,
                       bound);
    run_prepacked(pk, g, &o, o.C);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const size_t e = (size_t)i * N + j;
            const float c0 = C0[(size_t)i * o.ldc + j];
            got[e] = o.C[(size_t)i * o.ldc + j];
            bound[e] = (K + 2) * CLEF_TEST_EPS * bound[e];
            if (g->acc) {
                Cd[e] += c0;
                bound[e] += 2 * CLEF_TEST_EPS * fabs(c0);
            }
        }
    bool ok = clef_test_within(got, Cd, bound, (size_t)M * N);
    for (int i = 0; i < M && ok; i++)
        for (int j = N; j < o.ldc; j++)
            if (o.C[(size_t)i * o.ldc + j] != SENTINEL) {
                fprintf(stderr, "C padding written at (%d, %d)\n", i, j);
                ok = false;
            }
    operands_free(&o);
    free(Ad), free(Bd), free(Cd), free(bound), free(C0), free(got);
    return ok;
}

#define CHECK(g)                                                               \
    cr_assert(check_case(pk, &(g), &rng),                                      \
              "%s %s packed, A%s B%s: M=%d N=%d K=%d accumulate=%d", isa,      \
              (g).packed_b ? "B" : "A", (g).ta ? " (K,M)" : " (M,K)",          \
              (g).tb ? " (N,K)" : " (K,N)", (g).M, (g).N, (g).K, (g).acc)

// Every layout, every MR remainder of 14 and 6, NR of 32 and 16, K below,
// at and across a KC block (512 with a 1 MiB L2; 128-bounded otherwise).
static void remainders(const char *isa, int packed_b)
{
    const clef_gemm_prepack *pk = prepack_or_skip(isa);
    static const int ms[] = {1, 5, 6, 7, 13, 14, 15, 29, 48, 61};
    static const int ns[] = {1, 15, 16, 17, 31, 32, 33, 65};
    static const int ks[] = {1, 16, 33, 512, 513};
    uint64_t rng = 0x9b9bu + (uint64_t)packed_b;
    for (int l = 0; l < 4; l++)
        for (int mi = 0; mi < 10; mi++)
            for (int ni = 0; ni < 8; ni++)
                for (int ki = 0; ki < 5; ki++) {
                    gcase g = {ms[mi],
                               ns[ni],
                               ks[ki],
                               l & 1,
                               l >> 1,
                               packed_b,
                               (mi + ni + ki + l) & 1};
                    CHECK(g);
                }
    // N across NC blocks with a partial last one; M across an MC block
    gcase wide = {20, 2100, 600, 0, 1, packed_b, 1};
    CHECK(wide);
    gcase tall = {700, 45, 1100, 1, 0, packed_b, 0};
    CHECK(tall);
}

Test(isa_gemm_prepack, avx512_packed_b)
{
    remainders("avx512", 1);
}
Test(isa_gemm_prepack, avx512_packed_a)
{
    remainders("avx512", 0);
}
Test(isa_gemm_prepack, avx2_packed_b)
{
    remainders("avx2", 1);
}
Test(isa_gemm_prepack, avx2_packed_a)
{
    remainders("avx2", 0);
}

// K = 0: C = 0, or C unchanged when accumulating.
static void empty_reduction(const char *isa)
{
    const clef_gemm_prepack *pk = prepack_or_skip(isa);
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {0}, B[1] = {0}, P[16] = {0};
    cr_assert_eq(pk->gemm_pb(0, 2, 3, 0, A, 1, P, C, 3, 1), 0);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(C[i], (float)(i + 1), "accumulate: C[%d] changed", i);
    cr_assert_eq(pk->gemm_pa(0, 2, 3, 0, P, B, 3, C, 3, 0), 0);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(C[i], 0.f, "overwrite: C[%d] = %g, not 0", i, C[i]);
}

Test(isa_gemm_prepack, avx512_empty_reduction)
{
    empty_reduction("avx512");
}
Test(isa_gemm_prepack, avx2_empty_reduction)
{
    empty_reduction("avx2");
}

// The plain GEMM of the same layout (ta && tb has none).
static clef_gemm_fn plain_of(const clef_kernels *k, int ta, int tb)
{
    return ta ? (tb ? NULL : k->gemm_tn) : tb ? k->gemm_nt : k->gemm_nn;
}

// Bits of one product through pre-packing vs the plain call, and (for the
// prepacked one) on 1, 2 and 3 threads: shapes the plain GEMMs run packed
// (more than 96 rows: avx512 runs nt and nn up to 96 unpacked), and the core's:
// a record's queries × heads against its memory, and D's blocks.
static void bitwise_at(const char *isa, const gcase *g0)
{
    const clef_backend *be = clef_backend_find(isa);
    const clef_gemm_prepack *pk = prepack_or_skip(isa);
    const clef_gemm_fn plain = plain_of(be->table, g0->ta, g0->tb);
    uint64_t rng = 0x5a5au;
    gcase g = *g0;
    operands o = operands_make(&g, &rng);
    const size_t nc = (size_t)g.M * o.ldc;
    float *C0 = clef_test_falloc(nc), *Cp = clef_test_falloc(nc);
    clef_test_fcopy(C0, o.C, nc);
    plain(g.M, g.N, g.K, o.A, o.lda, o.B, o.ldb, o.C, o.ldc, g.acc);
    const int saved = omp_get_max_threads();
    for (int t = 1; t <= 3; t++) {
        omp_set_num_threads(t);
        clef_test_fcopy(Cp, C0, nc);
        run_prepacked(pk, &g, &o, Cp);
        cr_assert(memcmp(Cp, o.C, sizeof(float) * nc) == 0,
                  "%s %s packed M=%d N=%d K=%d, %d thread(s): bits differ "
                  "from the plain GEMM",
                  isa, g.packed_b ? "B" : "A", g.M, g.N, g.K, t);
    }
    omp_set_num_threads(saved);
    operands_free(&o);
    free(C0), free(Cp);
}

static void bitwise(const char *isa)
{
    static const gcase cases[] = {
        {192, 512, 1024, 0, 1, 1, 0}, // routing: qt memᵀ (h·O_b, T_b)
        {192, 1024, 512, 0, 0, 1, 0}, // routing: A mem
        {112, 389, 256, 0, 1, 1, 0},  // a field layer, ragged T_b
        {112, 256, 389, 0, 0, 1, 1},
        {256, 576, 700, 1, 0, 0, 0},  // D's block: dMᵀ x̂ (w, block)
        {101, 2100, 600, 0, 1, 1, 1}, // several NC blocks, partial last
        {700, 45, 1100, 1, 0, 0, 1},  // several MC and KC blocks
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bitwise_at(isa, &cases[i]);
}

Test(isa_gemm_prepack, avx512_bitwise_plain_and_threads)
{
    bitwise("avx512");
}
Test(isa_gemm_prepack, avx2_bitwise_plain_and_threads)
{
    bitwise("avx2");
}

// A memory too narrow to pack, transposed once (pack_bt) and read by
// gemm_nt_bt: Bt is exactly Bᵀ, and every product gemm_nt_bt accepts is
// bitwise the plain gemm_nt on B (the core switches between the two), over
// the small nt's row, column and K remainders (K ≤ 32: its transposing
// path) and a record's shapes (N = T up to 512, K = w); where it declines
// (-1), C is untouched. K above 32 must be declined (the plain call takes
// the dot-product path, other bits).
static void nt_bt_bitwise(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    const clef_gemm_prepack *pk = prepack_or_skip(isa);
    cr_assert(pk->pack_bt && pk->gemm_nt_bt, "%s: no transposed-B entries",
              isa);
    static const int ks[] = {1,  2,  3,  4,  5,  7,  8,  9,
                             12, 16, 17, 24, 31, 32, 33, 40};
    static const int ns[] = {1,  3,  4,  5,  8,  9,  15,  16, 17,
                             31, 32, 33, 40, 96, 97, 130, 512};
    uint64_t rng = 0xb7u;
    int taken = 0, declined = 0;
    for (int M = 1; M <= 20; M += (M < 10 ? 1 : 5))
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                const int N = ns[ni], K = ks[ki], acc = (M + N + K) & 1;
                const gcase g = {M, N, K, 0, 1, 1, acc};
                operands o = operands_make(&g, &rng);
                const size_t nc = (size_t)M * o.ldc;
                float *Bt = pack_alloc((size_t)K * N),
                      *C2 = clef_test_falloc(nc);
                clef_test_fcopy(C2, o.C, nc);
                pk->pack_bt(N, K, o.B, o.ldb, Bt);
                for (int j = 0; j < N; j++)
                    for (int kk = 0; kk < K; kk++)
                        cr_assert(Bt[(size_t)kk * N + j] ==
                                      o.B[(size_t)j * o.ldb + kk],
                                  "%s: pack_bt N=%d K=%d wrong at (%d, %d)",
                                  isa, N, K, kk, j);
                const int r =
                    pk->gemm_nt_bt(M, N, K, o.A, o.lda, Bt, N, C2, o.ldc, acc);
                if (r != 0) {
                    cr_assert(clef_test_first_diff(C2, o.C, nc) < 0,
                              "%s: a declined gemm_nt_bt wrote C", isa);
                    // only beyond the small nt's transposing path
                    cr_assert(
                        K > 32 || N * K > 4096 || (double)M * N * K >= 32768,
                        "%s: gemm_nt_bt declined M=%d N=%d K=%d", isa, M, N, K);
                    declined++;
                } else {
                    cr_assert(K <= 32, "%s: gemm_nt_bt took K=%d", isa, K);
                    k->gemm_nt(M, N, K, o.A, o.lda, o.B, o.ldb, o.C, o.ldc,
                               acc);
                    long d = clef_test_first_diff(C2, o.C, nc);
                    cr_assert(
                        d < 0,
                        "%s: gemm_nt_bt M=%d N=%d K=%d accumulate=%d differs "
                        "from gemm_nt at %ld",
                        isa, M, N, K, acc, d);
                    taken++;
                }
                free(Bt), free(C2);
                operands_free(&o);
            }
    fprintf(stderr,
            "[prepack] %s: gemm_nt_bt took %d products (bitwise gemm_nt), "
            "declined %d\n",
            isa, taken, declined);
    cr_assert(taken > 0 && declined > 0, "%s: took %d, declined %d", isa, taken,
              declined);
}

Test(isa_gemm_prepack, avx512_nt_bt_bitwise_plain)
{
    nt_bt_bitwise("avx512");
}
Test(isa_gemm_prepack, avx2_nt_bt_bitwise_plain)
{
    nt_bt_bitwise("avx2");
}

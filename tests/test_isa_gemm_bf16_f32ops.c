// The bf16 GEMMs on float32 operands (kernels.h clef_bf16_f32ops: the
// operands rounded to bf16 as the kernel packs them): every backend's
// f32ops entry points (amx, amx on emulated tiles, avx512_bf16, and the
// scalar reference) against that backend's own bf16 twin run on the
// operands rounded first by clef_cvt_f32_bf16__scalar. The two see the same
// bf16 values in the same places, so C must be bitwise equal:
//   - remainders of the 16×16 / 16×32 tiles and the 12×32 microkernel, both
//     accumulate flags (C NaN-filled for 0), ld above the width, C padding
//     untouched; K across K blocks, K a multiple of 32 (where the amx twin
//     reads bf16 A in place and the float path packs it), many column
//     chunks, one row, one column
//   - float operands with random low bits, halfway cases and denormals
//     (the hardware flushes those in both paths alike)
//   - 1 and 3 threads give the same bits
//   - the tables' f32ops twins are the tables' own gemm_bf16_*
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
static const char *const lname[] = {"nt", "nn", "tn"};

typedef struct pair {
    clef_gemm_fn f32ops;
    clef_gemm_bf16_fn twin;
} pair;

// n floats: bf16 values of [-1, 1] with random low bits, every 5th exactly
// halfway, every 41st a denormal.
static void fill_f32(float *x, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) {
        float f = (float)(2.0 * clef_test_rand_unit(rng) - 1.0);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        u = (u & 0xffff0000u) | (uint32_t)(clef_test_rng_next(rng) >> 48);
        if (i % 5 == 2)
            u = (u & 0xffff0000u) | 0x8000u;
        if (i % 41 == 40)
            u = (u & 0x80000000u) | 0x00003456u;
        memcpy(&x[i], &u, sizeof u);
    }
}

static bool f32ops_case(const char *be, pair p, layout l, int M, int N, int K,
                        int acc, uint64_t *rng)
{
    const int arows = l == TN ? K : M, acols = l == TN ? M : K;
    const int brows = l == NT ? N : K, bcols = l == NT ? K : N;
    const int lda = acols + 3, ldb = bcols + 5, ldc = N + 2;
    const size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb;
    const size_t nc = (size_t)M * ldc;
    float *A = clef_test_falloc(na), *B = clef_test_falloc(nb);
    uint16_t *A16 = malloc(na * 2), *B16 = malloc(nb * 2);
    float *C = clef_test_falloc(nc), *Ct = clef_test_falloc(nc);
    cr_assert(A16 && B16);
    fill_f32(A, na, rng);
    fill_f32(B, nb, rng);
    clef_cvt_f32_bf16__scalar(na, A, A16);
    clef_cvt_f32_bf16__scalar(nb, B, B16);
    if (acc)
        clef_test_fill_uniform(C, nc, -2.0f, 2.0f, rng);
    else
        clef_test_fill_const(C, nc, NAN);
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            C[(size_t)i * ldc + j] = 1234.5f;
    clef_test_fcopy(Ct, C, nc);
    p.twin(M, N, K, A16, lda, B16, ldb, Ct, ldc, acc);
    p.f32ops(M, N, K, A, lda, B, ldb, C, ldc, acc);
    const long d = clef_test_first_diff(C, Ct, nc);
    if (d >= 0)
        fprintf(stderr, "%s %s M=%d N=%d K=%d acc=%d: C[%ld] %.9g, twin %.9g\n",
                be, lname[l], M, N, K, acc, d, C[d], Ct[d]);
    free(A), free(B), free(A16), free(B16), free(C), free(Ct);
    return d < 0;
}

#define CASE(M, N, K, acc)                                                     \
    cr_assert(f32ops_case(be, p, l, M, N, K, acc, &rng),                       \
              "%s %s M=%d N=%d K=%d accumulate=%d: not the twin's bits", be,   \
              lname[l], M, N, K, acc)

static void cases(const char *be, pair p, layout l)
{
    static const int mn[] = {1, 11, 12, 13, 16, 17, 31, 32, 33};
    static const int ks[] = {1, 2, 3, 31, 32, 33, 64, 65};
    uint64_t rng = 0xf32b16u + l;
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < 9; b++)
            for (int k = 0; k < 8; k++)
                CASE(mn[a], mn[b], ks[k], (a + b + k) & 1);
    CASE(67, 45, 1100, 1);  // K across a 1024-deep block, remainders
    CASE(77, 300, 1024, 0); // K whole steps, a partial row block
    CASE(64, 40, 2048, 1);  // whole row blocks, two K blocks
    CASE(33, 1000, 300, 1); // many column chunks: threads
    CASE(1, 300, 700, 0);   // one row against a wide weight
    CASE(300, 1, 700, 1);   // one column
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    CASE(100, 700, 1024, 0);
    omp_set_num_threads(3);
    CASE(100, 700, 1024, 1);
    omp_set_num_threads(saved);
}

// The f32ops of ISA backend be, checked against its own table's kernels.
static pair table_pair(const char *be, layout l)
{
    const clef_kernels *k = isa_table_or_skip(be);
    const clef_bf16_f32ops *f = k->f32ops;
    cr_assert(f, "%s: no f32ops", be);
    const clef_gemm_bf16_fn own = l == NT   ? k->gemm_bf16_nt
                                  : l == NN ? k->gemm_bf16_nn
                                            : k->gemm_bf16_tn;
    const pair p = {l == NT   ? f->nt
                    : l == NN ? f->nn
                              : f->tn,
                    l == NT   ? f->twin_nt
                    : l == NN ? f->twin_nn
                              : f->twin_tn};
    cr_assert(p.twin == own, "%s %s: the f32ops twin is not the table's", be,
              lname[l]);
    return p;
}

static void all_forms(const char *be)
{
    for (int l = NT; l <= TN; l++)
        cases(be, table_pair(be, (layout)l), (layout)l);
}

Test(isa_gemm_bf16_f32ops, scalar)
{
    static const pair p[3] = {
        {clef_bf16_gemm_nt_f32ops__scalar, clef_bf16_gemm_nt__scalar},
        {clef_bf16_gemm_nn_f32ops__scalar, clef_bf16_gemm_nn__scalar},
        {clef_bf16_gemm_tn_f32ops__scalar, clef_bf16_gemm_tn__scalar}};
    for (int l = NT; l <= TN; l++)
        cases("scalar", p[l], (layout)l);
}
Test(isa_gemm_bf16_f32ops, amx)
{
    all_forms("amx");
}
Test(isa_gemm_bf16_f32ops, amx_emulated)
{
#if defined(__x86_64__)
    avx512_packs_or_skip();
    static const pair p[3] = {{clef_bf16_gemm_nt_f32ops_32x32__amxemu,
                               clef_bf16_gemm_nt_32x32__amxemu},
                              {clef_bf16_gemm_nn_f32ops_32x32__amxemu,
                               clef_bf16_gemm_nn_32x32__amxemu},
                              {clef_bf16_gemm_tn_f32ops_32x32__amxemu,
                               clef_bf16_gemm_tn_32x32__amxemu}};
    for (int l = NT; l <= TN; l++)
        cases("amx (emulated tiles)", p[l], (layout)l);
#else
    cr_skip_test("not x86-64: no AMX kernels to emulate");
#endif
}
Test(isa_gemm_bf16_f32ops, avx512_bf16)
{
    all_forms("avx512_bf16");
}

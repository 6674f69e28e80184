// The ISA kernels on float arrays that are only 4-byte aligned (address ≡ 4
// mod 8): the partial-vector loads and stores of 2 and 3 floats used to be
// 8-byte loads through a double * (undefined behaviour; UBSan aborts with
// "load of misaligned address" under scripts/stages/60-sanitize.sh). Every
// result must be bitwise the same as the same kernel's on 64-byte-aligned
// copies of the operands, and, for the exact ops, as the scalar reference.
#include <stdint.h>

#include "isa_common.h"

// n floats at an address ≡ 4 (mod 8), inside a 64-byte-aligned block
static float *odd_alloc(size_t n, void **block)
{
    *block = clef_test_falloc(n + 16);
    return (float *)*block + 1;
}

static void fill(float *x, size_t n, uint64_t *rng)
{
    clef_test_fill_normal(x, n, 0.f, 1.f, rng);
}

static const int widths[] = {1, 2, 3, 5, 6, 7, 10, 11, 13, 18, 19, 26, 27};
#define NW ((int)(sizeof widths / sizeof widths[0]))

static void check_isa(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 2024;
    for (int wi = 0; wi < NW; wi++) {
        const int n = widths[wi], rows = 5, K = 7;
        const size_t sz = (size_t)rows * n;
        void *blk[9];
        float *x = odd_alloc(sz, &blk[0]), *y = odd_alloc(sz, &blk[1]);
        float *g = odd_alloc(n, &blk[2]), *b = odd_alloc(n, &blk[3]);
        float *xh = odd_alloc(sz, &blk[4]), *rs = odd_alloc(rows, &blk[5]);
        float *A = odd_alloc((size_t)rows * K, &blk[6]);
        float *B = odd_alloc((size_t)K * n, &blk[7]);
        float *C = odd_alloc(sz, &blk[8]);
        // aligned copies / reference outputs
        float *xa = clef_test_falloc(sz), *ya = clef_test_falloc(sz);
        float *xha = clef_test_falloc(sz), *rsa = clef_test_falloc(rows);
        float *Ca = clef_test_falloc(sz);
        fill(x, sz, &rng), fill(g, n, &rng), fill(b, n, &rng);
        fill(A, (size_t)rows * K, &rng), fill(B, (size_t)K * n, &rng);
        memcpy(xa, x, sz * sizeof *x);

        // bias_add: exact, against the scalar reference
        memcpy(y, x, sz * sizeof *x), memcpy(ya, x, sz * sizeof *x);
        k->bias_add(rows, n, b, y);
        clef_scalar_kernels.bias_add(rows, n, b, ya);
        cr_assert(isa_same("bias_add", y, ya, sz), "%s bias_add n=%d", isa, n);

        // colsum: exact in row order, against the scalar reference
        memcpy(y, b, n * sizeof *b), memcpy(ya, b, n * sizeof *b);
        k->colsum(rows, n, x, y);
        clef_scalar_kernels.colsum(rows, n, x, ya);
        cr_assert(isa_same("colsum", y, ya, n), "%s colsum n=%d", isa, n);

        // layernorm_fwd: the same kernel on aligned copies
        float *ga = clef_test_falloc(n), *ba = clef_test_falloc(n);
        memcpy(ga, g, n * sizeof *g), memcpy(ba, b, n * sizeof *b);
        k->layernorm_fwd(rows, n, x, g, b, y, xh, rs);
        k->layernorm_fwd(rows, n, xa, ga, ba, ya, xha, rsa);
        cr_assert(isa_same("layernorm y", y, ya, sz) &&
                      isa_same("layernorm xhat", xh, xha, sz) &&
                      isa_same("layernorm rstd", rs, rsa, rows),
                  "%s layernorm_fwd n=%d", isa, n);

        // softmax_fwd, gelu_fwd
        k->softmax_fwd(rows, n, x, y);
        k->softmax_fwd(rows, n, xa, ya);
        cr_assert(isa_same("softmax", y, ya, sz), "%s softmax_fwd n=%d", isa,
                  n);
        k->gelu_fwd(sz, x, y);
        k->gelu_fwd(sz, xa, ya);
        cr_assert(isa_same("gelu", y, ya, sz), "%s gelu_fwd n=%d", isa, n);

        // gemm_nn (rows,K)·(K,n), overwrite then accumulate
        float *Aa = clef_test_falloc((size_t)rows * K);
        float *Ba = clef_test_falloc((size_t)K * n);
        memcpy(Aa, A, (size_t)rows * K * sizeof *A);
        memcpy(Ba, B, (size_t)K * n * sizeof *B);
        for (int acc = 0; acc <= 1; acc++) {
            if (!acc)
                memset(C, 0, sz * sizeof *C), memset(Ca, 0, sz * sizeof *Ca);
            k->gemm_nn(rows, n, K, A, K, B, n, C, n, acc);
            k->gemm_nn(rows, n, K, Aa, K, Ba, n, Ca, n, acc);
            cr_assert(isa_same("gemm_nn", C, Ca, sz), "%s gemm_nn n=%d acc=%d",
                      isa, n, acc);
            // gemm_tn: A read as (K,rows)
            k->gemm_tn(rows, n, K, A, rows, B, n, C, n, acc);
            k->gemm_tn(rows, n, K, Aa, rows, Ba, n, Ca, n, acc);
            cr_assert(isa_same("gemm_tn", C, Ca, sz), "%s gemm_tn n=%d acc=%d",
                      isa, n, acc);
            // gemm_nt: (rows,K)·(n,K)ᵀ, B read as (n,K)
            k->gemm_nt(rows, n, K, A, K, B, K, C, n, acc);
            k->gemm_nt(rows, n, K, Aa, K, Ba, K, Ca, n, acc);
            cr_assert(isa_same("gemm_nt", C, Ca, sz), "%s gemm_nt n=%d acc=%d",
                      isa, n, acc);
        }
        free(Aa), free(Ba), free(ga), free(ba);
        for (int i = 0; i < 9; i++)
            free(blk[i]);
        free(xa), free(ya), free(xha), free(rsa), free(Ca);
    }
}

Test(isa_misaligned, avx2)
{
    check_isa("avx2");
}
Test(isa_misaligned, avx512)
{
    check_isa("avx512");
}

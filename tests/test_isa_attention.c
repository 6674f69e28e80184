// attention_fwd / attention_bwd of the ISA backends against the scalar
// reference, with the head's layout: K and V are the two halves of one packed
// (nk, 2w + 1) buffer (as are dK and dV), Q / O / dO / dQ have their own
// leading dimensions, all wider than w = heads·dh.
//   small path (dh ≤ 16, keys vectorised, per head group): every dh 1..16
//     × nk 1..40 and 96 × nq 1..5 × heads 1..3 (head groups split at dh 16;
//     the AVX-512 kernel hands nk ≤ 8 to the AVX2 one);
//   GEMM path: dh 17, 64, and dh ≤ 16 past the small path's stack limits
//     (nk·dh too large, nk past its row limit).
// Tolerance (FLT_EPSILON units, relative to each output's scale):
// 4 (nk + dh + 8) (two chained reductions of lengths dh and nk, exp,
// FMA-reordered products).
#include "isa_common.h"

static bool attention_case(const char *isa, const clef_kernels *k, int nq,
                           int nk, int heads, int dh, uint64_t *rng)
{
    int w = heads * dh, ldq = w + 3, ldkv = 2 * w + 1, ldo = w + 5;
    size_t nQ = (size_t)nq * ldq, nKV = (size_t)nk * ldkv,
           nO = (size_t)nq * ldo;
    size_t nA = (size_t)heads * nq * nk;
    double units = 4.0 * (nk + dh + 8);
    float *Q = clef_test_falloc(nQ), *KV = clef_test_falloc(nKV); // K | V
    float *A = clef_test_falloc(nA), *Ar = clef_test_falloc(nA);
    float *O = clef_test_falloc(nO), *Or = clef_test_falloc(nO);
    float *dO = clef_test_falloc(nO), *S = clef_test_falloc((size_t)nq * nk);
    float *dQ = clef_test_falloc(nQ), *dQr = clef_test_falloc(nQ);
    float *dKV = clef_test_falloc(nKV), *dKVr = clef_test_falloc(nKV);
    clef_test_fill_uniform(Q, nQ, -1, 1, rng);
    clef_test_fill_uniform(KV, nKV, -1, 1, rng);
    clef_test_fill_uniform(dO, nO, -1, 1, rng);
    // O's unwritten columns must survive: same pattern in both
    clef_test_fill_pattern(O, nO), clef_test_fcopy(Or, O, nO);
    k->attention_fwd(nq, nk, heads, dh, Q, ldq, KV, ldkv, KV + w, ldkv, A, O,
                     ldo);
    clef_scalar_kernels.attention_fwd(nq, nk, heads, dh, Q, ldq, KV, ldkv,
                                      KV + w, ldkv, Ar, Or, ldo);
    bool ok =
        isa_close("A", A, Ar, nA, units) && isa_close("O", O, Or, nO, units);
    cr_expect(ok, "%s attention_fwd nq=%d nk=%d h=%d dh=%d", isa, nq, nk, heads,
              dh);

    // backward from the reference A; gradients accumulate onto a pattern
    clef_test_fill_pattern(dQ, nQ), clef_test_fcopy(dQr, dQ, nQ);
    clef_test_fill_pattern(dKV, nKV), clef_test_fcopy(dKVr, dKV, nKV);
    k->attention_bwd(nq, nk, heads, dh, Q, ldq, KV, ldkv, KV + w, ldkv, Ar, dO,
                     ldo, dQ, ldq, dKV, ldkv, dKV + w, ldkv, S);
    clef_scalar_kernels.attention_bwd(nq, nk, heads, dh, Q, ldq, KV, ldkv,
                                      KV + w, ldkv, Ar, dO, ldo, dQr, ldq, dKVr,
                                      ldkv, dKVr + w, ldkv, S);
    bool okb = isa_close("dQ", dQ, dQr, nQ, units) &&
               isa_close("dK|dV", dKV, dKVr, nKV, units);
    cr_expect(okb, "%s attention_bwd nq=%d nk=%d h=%d dh=%d", isa, nq, nk,
              heads, dh);
    free(Q), free(KV), free(A), free(Ar), free(O), free(Or), free(dO), free(S);
    free(dQ), free(dQr), free(dKV), free(dKVr);
    return ok && okb;
}

static void attention_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0xa77eu;
    int failed = 0;
    // small path: every remainder of the key vectors and of the 4-wide dots
    for (int dh = 1; dh <= 16; dh++)
        for (int nk = 1; nk <= 41; nk++)
            for (int nq = 1; nq <= 5; nq++)
                for (int heads = 1; heads <= 3; heads++)
                    failed += !attention_case(isa, k, nq, nk == 41 ? 96 : nk,
                                              heads, dh, &rng);
    // GEMM path: wider heads, and narrow heads past the small path's limits
    static const int big[][4] = {
        {5, 17, 2, 17},  {3, 33, 3, 17},  {17, 5, 1, 64},  {4, 300, 2, 16},
        {3, 1100, 1, 4}, {33, 17, 2, 24}, {96, 96, 16, 64}}; // nq nk heads dh
    for (size_t c = 0; c < sizeof big / sizeof big[0]; c++)
        failed += !attention_case(isa, k, big[c][0], big[c][1], big[c][2],
                                  big[c][3], &rng);
    cr_assert_eq(failed, 0, "%s: %d attention cases out of tolerance", isa,
                 failed);
}

Test(isa_attention, avx512)
{
    attention_family("avx512");
}
Test(isa_attention, avx2)
{
    attention_family("avx2");
}

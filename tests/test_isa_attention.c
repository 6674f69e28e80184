// attention_fwd / attention_bwd of the ISA backends against the scalar
// reference: nq, nk in {1, 2, 5, 17, 33}, heads 1..3, dh in {1, 4, 8, 17},
// leading dimensions wider than heads·dh. Tolerance (FLT_EPSILON units,
// relative to each output's scale): 4 (nk + dh + 8) (two chained
// reductions of lengths dh and nk, exp, FMA-reordered GEMMs).
#include "isa_common.h"

static void attention_case(const char *isa, const clef_kernels *k, int nq,
                           int nk, int heads, int dh, uint64_t *rng)
{
    int w = heads * dh, ld = w + 3;
    size_t nQ = (size_t)nq * ld, nK = (size_t)nk * ld, nA = (size_t)heads * nq * nk;
    double units = 4.0 * (nk + dh + 8);
    float *Q = clef_test_falloc(nQ), *K = clef_test_falloc(nK), *V = clef_test_falloc(nK);
    float *A = clef_test_falloc(nA), *Ar = clef_test_falloc(nA);
    float *O = clef_test_falloc(nQ), *Or = clef_test_falloc(nQ);
    clef_test_fill_uniform(Q, nQ, -1, 1, rng);
    clef_test_fill_uniform(K, nK, -1, 1, rng);
    clef_test_fill_uniform(V, nK, -1, 1, rng);
    k->attention_fwd(nq, nk, heads, dh, Q, ld, K, ld, V, ld, A, O, ld);
    clef_scalar_kernels.attention_fwd(nq, nk, heads, dh, Q, ld, K, ld, V, ld, Ar, Or, ld);
    cr_assert(isa_close("A", A, Ar, nA, units), "%s attention_fwd A nq=%d nk=%d h=%d dh=%d", isa, nq, nk, heads, dh);
    for (int i = 0; i < nq; i++) // compare the written columns only
        for (int c = w; c < ld; c++)
            O[(size_t)i * ld + c] = Or[(size_t)i * ld + c] = 0.0f;
    cr_assert(isa_close("O", O, Or, nQ, units), "%s attention_fwd O nq=%d nk=%d h=%d dh=%d", isa, nq, nk, heads, dh);

    float *dO = clef_test_falloc(nQ), *S = clef_test_falloc((size_t)nq * nk);
    float *dQ = clef_test_falloc(nQ), *dQr = clef_test_falloc(nQ);
    float *dK = clef_test_falloc(nK), *dKr = clef_test_falloc(nK);
    float *dV = clef_test_falloc(nK), *dVr = clef_test_falloc(nK);
    clef_test_fill_uniform(dO, nQ, -1, 1, rng);
    clef_test_fill_pattern(dQ, nQ), clef_test_fcopy(dQr, dQ, nQ);
    clef_test_fill_pattern(dK, nK), clef_test_fcopy(dKr, dK, nK);
    clef_test_fill_pattern(dV, nK), clef_test_fcopy(dVr, dV, nK);
    k->attention_bwd(nq, nk, heads, dh, Q, ld, K, ld, V, ld, Ar, dO, ld, dQ, ld, dK, ld, dV, ld, S);
    clef_scalar_kernels.attention_bwd(nq, nk, heads, dh, Q, ld, K, ld, V, ld, Ar, dO, ld, dQr, ld,
                                      dKr, ld, dVr, ld, S);
    cr_assert(isa_close("dQ", dQ, dQr, nQ, units), "%s attention_bwd dQ nq=%d nk=%d h=%d dh=%d", isa, nq, nk, heads, dh);
    cr_assert(isa_close("dK", dK, dKr, nK, units), "%s attention_bwd dK nq=%d nk=%d h=%d dh=%d", isa, nq, nk, heads, dh);
    cr_assert(isa_close("dV", dV, dVr, nK, units), "%s attention_bwd dV nq=%d nk=%d h=%d dh=%d", isa, nq, nk, heads, dh);
    free(Q), free(K), free(V), free(A), free(Ar), free(O), free(Or), free(dO), free(S);
    free(dQ), free(dQr), free(dK), free(dKr), free(dV), free(dVr);
}

static void attention_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    static const int ns[] = {1, 2, 5, 17, 33}, dhs[] = {1, 4, 8, 17};
    uint64_t rng = 0xa77eu;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++)
            for (int heads = 1; heads <= 3; heads++)
                for (int d = 0; d < 4; d++)
                    attention_case(isa, k, ns[a], ns[b], heads, dhs[d], &rng);
    attention_case(isa, k, 96, 96, 16, 64, &rng); // released-width head
}

Test(isa_attention, avx512) { attention_family("avx512"); }
Test(isa_attention, avx2) { attention_family("avx2"); }

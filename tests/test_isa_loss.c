// loss of the ISA backends against the scalar reference: 60 questions with
// 1..40 options (every vector remainder), one-hot and soft targets, score
// questions, smoothing, Brier and ordinal weights on and off. Tolerance
// (FLT_EPSILON units, relative to each output's scale): 4 (n + 8) with n the
// largest question (softmax, length-n sums, the O(n) ordinal weights).
#include "isa_common.h"

static void loss_case(const char *isa, const clef_kernels *k, float eps,
                      float beta, float lambda, uint64_t *rng)
{
    int nq = 60, off[61], score[60];
    off[0] = 0;
    for (int q = 0; q < nq; q++) {
        off[q + 1] = off[q] + 1 + q % 40;
        score[q] = q % 3 == 2;
    }
    int tot = off[nq];
    float *z = clef_test_falloc(tot), *y = clef_test_falloc(tot);
    float *p = clef_test_falloc(tot), *pr = clef_test_falloc(tot);
    float *dz = clef_test_falloc(tot), *dzr = clef_test_falloc(tot);
    clef_test_fill_uniform(z, tot, -6, 6, rng);
    for (int q = 0; q < nq; q++) { // even q: one-hot; odd q: soft target
        int n = off[q + 1] - off[q];
        float s = 0.0f;
        for (int i = 0; i < n; i++)
            s += (y[off[q] + i] =
                      q % 2 ? (float)clef_test_rand_unit(rng) : 0.0f);
        if (q % 2 == 0)
            y[off[q] + clef_test_rand_int(rng, 0, n - 1)] = 1.0f;
        else
            for (int i = 0; i < n; i++)
                y[off[q] + i] /= s;
    }
    clef_loss_args a = {eps, beta, lambda, 1.0f / nq, 1.0f / 20};
    double L = 0.5, Lr = 0.5; // the loss accumulates
    k->loss(nq, off, score, z, y, &a, p, dz, &L);
    clef_scalar_kernels.loss(nq, off, score, z, y, &a, pr, dzr, &Lr);
    double units = 4.0 * (40 + 8);
    cr_assert(isa_close("p", p, pr, tot, units),
              "%s loss p eps=%g beta=%g lambda=%g", isa, eps, beta, lambda);
    cr_assert(isa_close("dz", dz, dzr, tot, units),
              "%s loss dz eps=%g beta=%g lambda=%g", isa, eps, beta, lambda);
    cr_assert(fabs(L - Lr) <= units * CLEF_TEST_EPS * fabs(Lr),
              "%s loss L %.9g vs %.9g", isa, L, Lr);
    free(z), free(y), free(p), free(pr), free(dz), free(dzr);
}

static void loss_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x1055u;
    loss_case(isa, k, 0.0f, 0.0f, 0.0f, &rng);
    loss_case(isa, k, 0.1f, 0.25f, 0.0f, &rng);
    loss_case(isa, k, 0.1f, 0.25f, 0.5f, &rng);
}

Test(isa_loss, avx512)
{
    loss_family("avx512");
}
Test(isa_loss, avx2)
{
    loss_family("avx2");
}

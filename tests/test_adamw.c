// AdamW (HEAD.md §8) of the scalar backend against a double re-implementation
// of torch.optim.AdamW over 6 steps, for weight decay 0, 0.01 and 0.1, n = 37
// (prime) and 1031, some zero gradients.
//
// Tolerance: the double run carries a rounding-error bound per element, grown
// each step in FLT_EPSILON units: m by 4 t FLT_EPSILON Σ-weighted |g|, v by
// 4 t FLT_EPSILON v, θ by 2 FLT_EPSILON |θ| plus the update's error
// (step (Δm + 4 FLT_EPSILON |m|) / denom + |update| (Δv / 2v + 4 FLT_EPSILON)).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

#define STEPS 6

typedef struct adam_ref {
    double *th, *m, *v, *mabs; // state, and the Σ-weighted |g| of m
    double *bth, *bm, *bv;     // error bounds
} adam_ref;

static void adamw_ref_step(size_t n, adam_ref *r, const float *g,
                           const clef_adamw_args *a, int t)
{
    const double E = CLEF_TEST_EPS;
    double lr = a->lr, b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    double step = lr / (1.0 - pow(b1, t));
    double bc2s = sqrt(1.0 - pow(b2, t));
    for (size_t i = 0; i < n; i++) {
        r->th[i] *= 1.0 - lr * a->decay;
        r->m[i] = b1 * r->m[i] + (1 - b1) * g[i];
        r->v[i] = b2 * r->v[i] + (1 - b2) * (double)g[i] * g[i];
        r->mabs[i] = b1 * r->mabs[i] + (1 - b1) * fabs((double)g[i]);
        r->bm[i] = 4.0 * t * E * r->mabs[i];
        r->bv[i] = 4.0 * t * E * r->v[i];
        double denom = sqrt(r->v[i]) / bc2s + eps;
        double u = step * r->m[i] / denom;
        r->th[i] -= u;
        double relv = r->v[i] > 0 ? r->bv[i] / (2 * r->v[i]) : 0.0;
        r->bth[i] += 2 * E * fabs(r->th[i]) +
                     step * (r->bm[i] + 4 * E * fabs(r->m[i])) / denom +
                     fabs(u) * (relv + 4 * E);
    }
}

static bool adamw_case(size_t n, float lr, float decay, uint64_t *rng)
{
    float *th = clef_test_falloc(n), *m = clef_test_falloc(n);
    float *v = clef_test_falloc(n), *g = clef_test_falloc(n);
    adam_ref r = {clef_test_dalloc(n), clef_test_dalloc(n), clef_test_dalloc(n),
                  clef_test_dalloc(n), clef_test_dalloc(n), clef_test_dalloc(n),
                  clef_test_dalloc(n)};
    clef_test_fill_uniform(th, n, -1, 1, rng);
    clef_test_to_double(th, r.th, n);
    bool ok = true;
    for (int t = 1; t <= STEPS && ok; t++) {
        clef_test_fill_normal(g, n, 0.0f, 0.1f, rng);
        for (size_t i = 0; i < n; i += 5)
            g[i] = 0.0f; // zero gradients: decay only, m and v decay
        clef_adamw_args a = {.lr = lr,
                             .beta1 = 0.9f,
                             .beta2 = 0.999f,
                             .eps = 1e-8f,
                             .decay = decay};
        // the caller's scalars, in double and rounded (HEAD.md §8, kernels.h)
        a.step_size = (float)((double)a.lr / (1.0 - pow(a.beta1, t)));
        a.bc2_sqrt = (float)sqrt(1.0 - pow(a.beta2, t));
        clef_scalar_kernels.adamw(n, th, g, m, v, &a);
        adamw_ref_step(n, &r, g, &a, t);
        ok = clef_test_within(m, r.m, r.bm, n) &&
             clef_test_within(v, r.v, r.bv, n) &&
             clef_test_within(th, r.th, r.bth, n);
        if (!ok)
            fprintf(stderr, "adamw n=%zu lr=%g decay=%g: step %d\n", n, lr,
                    decay, t);
    }
    free(th), free(m), free(v), free(g);
    free(r.th), free(r.m), free(r.v), free(r.mabs), free(r.bth), free(r.bm);
    free(r.bv);
    return ok;
}

Test(adamw, vs_double_torch_recipe)
{
    static const size_t ns[] = {1, 37, 1031};
    static const float decays[] = {0.0f, 0.01f, 0.1f};
    static const float lrs[] = {1e-3f, 1e-1f};
    uint64_t rng = 111;
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < 3; d++)
            for (int l = 0; l < 2; l++)
                cr_assert(adamw_case(ns[i], lrs[l], decays[d], &rng),
                          "adamw n=%zu lr=%g decay=%g", ns[i], lrs[l],
                          decays[d]);
}

// With decay 0 the parameters move only through m: a zero gradient on fresh
// state leaves θ, m and v exactly as they were; with decay, θ (1 − lr λ).
Test(adamw, zero_gradient_is_pure_decay)
{
    float th[4] = {1.0f, -2.0f, 0.5f, 3.0f}, g[4] = {0}, m[4] = {0}, v[4] = {0};
    float th0[4];
    clef_test_fcopy(th0, th, 4);
    clef_adamw_args a = {.lr = 1e-2f,
                         .beta1 = 0.9f,
                         .beta2 = 0.999f,
                         .eps = 1e-8f,
                         .decay = 0.0f};
    a.step_size = (float)((double)a.lr / (1.0 - (double)a.beta1));
    a.bc2_sqrt = (float)sqrt(1.0 - (double)a.beta2);
    clef_scalar_kernels.adamw(4, th, g, m, v, &a);
    cr_assert(clef_test_close(th, th0, 4, 0, 0), "decay 0 moved θ");
    a.decay = 0.5f;
    clef_scalar_kernels.adamw(4, th, g, m, v, &a);
    double want[4];
    for (int i = 0; i < 4; i++)
        want[i] = th0[i] * (1.0 - (double)a.lr * a.decay);
    cr_assert(clef_test_close_d(th, want, 4, 0, 2 * CLEF_TEST_EPS));
    for (int i = 0; i < 4; i++)
        cr_assert(m[i] == 0.0f && v[i] == 0.0f);
}

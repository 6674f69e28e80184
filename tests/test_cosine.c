// cosine per row (forward and backward) of the scalar backend, rows × n over
// {1, 2, 3, 7, 13, 17, 31, 33}²; eps CLEF_COSINE_EPS per operand.
//   forward:  c, ahat, bhat, na, nb against double, relative (n + 8)
//             FLT_EPSILON (c absolute, scaled by 1 = |ahat||bhat|); a zero
//             operand gives c = 0.
//   backward: central finite differences in double of L = Σ w ⊙ c, tolerance
//             4 (n + 8) FLT_EPSILON · scale, scale = max(max|grad|,
//             max |w| / |a|) (the size of the terms the gradient subtracts);
//             a zero operand (|a| < eps, the a / eps branch) checked by FD
//             with a step inside that branch; both accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int shapes[] = {1, 2, 3, 7, 13, 17, 31, 33};
#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

typedef struct cos_case {
    int rows, n;
    float *a, *b, *ah, *bh, *na, *nb, *c, *w;
    double *ad, *bd, *wd;
} cos_case;

static cos_case cos_alloc(int rows, int n, int zero_a, uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    cos_case k = {.rows = rows, .n = n};
    k.a = clef_test_falloc(sz), k.b = clef_test_falloc(sz);
    k.ah = clef_test_falloc(sz), k.bh = clef_test_falloc(sz);
    k.na = clef_test_falloc(rows), k.nb = clef_test_falloc(rows);
    k.c = clef_test_falloc(rows), k.w = clef_test_falloc(rows);
    k.ad = clef_test_dalloc(sz), k.bd = clef_test_dalloc(sz);
    k.wd = clef_test_dalloc(rows);
    if (!zero_a)
        clef_test_fill_uniform(k.a, sz, -1, 1, rng);
    clef_test_fill_uniform(k.b, sz, -1, 1, rng);
    clef_test_fill_uniform(k.w, rows, -1, 1, rng);
    clef_test_to_double(k.a, k.ad, sz);
    clef_test_to_double(k.b, k.bd, sz);
    clef_test_to_double(k.w, k.wd, rows);
    return k;
}

static void cos_free(cos_case *k)
{
    free(k->a), free(k->b), free(k->ah), free(k->bh), free(k->na);
    free(k->nb), free(k->c), free(k->w), free(k->ad), free(k->bd);
    free(k->wd);
}

// c (rows) in double; ahat/bhat/na/nb optional.
static void cos_ref(const cos_case *k, double *c, double *ah, double *bh,
                    double *na, double *nb)
{
    int n = k->n;
    double *ta = clef_test_dalloc(n), *tb = clef_test_dalloc(n);
    for (int r = 0; r < k->rows; r++) {
        size_t o = (size_t)r * n;
        double xa = clef_test_ref_normalize(n, k->ad + o, CLEF_COSINE_EPS, ta);
        double xb = clef_test_ref_normalize(n, k->bd + o, CLEF_COSINE_EPS, tb);
        c[r] = clef_test_dot_d(ta, tb, n);
        for (int i = 0; ah && i < n; i++)
            ah[o + i] = ta[i], bh[o + i] = tb[i];
        if (na)
            na[r] = xa, nb[r] = xb;
    }
    free(ta), free(tb);
}

static bool cos_forward_case(int rows, int n, uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    cos_case k = cos_alloc(rows, n, 0, rng);
    if (rows > 1) // a zero operand row: c = 0
        clef_test_fill_const(k.a + (size_t)(rows - 1) * n, n, 0.0f),
            clef_test_to_double(k.a, k.ad, sz);
    double *c = clef_test_dalloc(rows), *ah = clef_test_dalloc(sz);
    double *bh = clef_test_dalloc(sz), *na = clef_test_dalloc(rows);
    double *nb = clef_test_dalloc(rows);
    cos_ref(&k, c, ah, bh, na, nb);
    clef_scalar_kernels.cosine_fwd(rows, n, k.a, k.b, k.ah, k.bh, k.na, k.nb,
                                   k.c);
    double tol = (n + 8) * CLEF_TEST_EPS;
    bool ok = clef_test_close_d(k.c, c, rows, tol, 0) &&
              clef_test_close_d(k.ah, ah, sz, 0, tol) &&
              clef_test_close_d(k.bh, bh, sz, 0, tol) &&
              clef_test_close_d(k.na, na, rows, 0, tol) &&
              clef_test_close_d(k.nb, nb, rows, 0, tol);
    free(c), free(ah), free(bh), free(na), free(nb);
    cos_free(&k);
    return ok;
}

Test(cosine, forward)
{
    uint64_t rng = 101;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++)
            cr_assert(cos_forward_case(shapes[ri], shapes[ni], &rng),
                      "cosine_fwd rows=%d n=%d", shapes[ri], shapes[ni]);
}

static double cos_objective(void *p)
{
    cos_case *k = p;
    double *c = clef_test_dalloc(k->rows);
    cos_ref(k, c, NULL, NULL, NULL, NULL);
    double L = clef_test_dot_d(k->wd, c, k->rows);
    free(c);
    return L;
}

// FD of both operands with step h; the analytic gradient accumulates.
static bool cos_backward_case(int rows, int n, int zero_a, double h,
                              uint64_t *rng)
{
    size_t sz = (size_t)rows * n;
    cos_case k = cos_alloc(rows, n, zero_a, rng);
    float *da = clef_test_falloc(sz), *db = clef_test_falloc(sz);
    double *fa = clef_test_dalloc(sz), *fb = clef_test_dalloc(sz);
    clef_scalar_kernels.cosine_fwd(rows, n, k.a, k.b, k.ah, k.bh, k.na, k.nb,
                                   k.c);
    clef_scalar_kernels.cosine_bwd(rows, n, k.ah, k.bh, k.na, k.nb, k.w, da,
                                   db);
    clef_test_fd_grad(k.ad, sz, h, cos_objective, &k, fa);
    clef_test_fd_grad(k.bd, sz, h, cos_objective, &k, fb);

    double mag_a = 0, mag_b = 0;
    for (int r = 0; r < rows; r++) {
        double ta = fabs(k.w[r]) / fmax(k.na[r], CLEF_COSINE_EPS);
        double tb = fabs(k.w[r]) / fmax(k.nb[r], CLEF_COSINE_EPS);
        mag_a = ta > mag_a ? ta : mag_a;
        mag_b = tb > mag_b ? tb : mag_b;
    }
    char wa[64], wb[64];
    snprintf(wa, 64, "cosine_bwd da rows=%d n=%d%s", rows, n,
             zero_a ? " a=0" : "");
    snprintf(wb, 64, "cosine_bwd db rows=%d n=%d%s", rows, n,
             zero_a ? " a=0" : "");
    double units = 4.0 * (n + 8);
    bool ok = clef_test_grad_close_scaled(wa, da, fa, sz, units, mag_a);
    ok = clef_test_grad_close_scaled(wb, db, fb, sz, units,
                                     zero_a ? 0 : mag_b) &&
         ok;

    float *pre = clef_test_falloc(sz), *aa = clef_test_falloc(sz);
    float *ab = clef_test_falloc(sz);
    clef_test_fill_pattern(pre, sz);
    clef_test_fcopy(aa, pre, sz);
    clef_test_fcopy(ab, pre, sz);
    clef_scalar_kernels.cosine_bwd(rows, n, k.ah, k.bh, k.na, k.nb, k.w, aa,
                                   ab);
    bool acc = clef_test_accumulated(pre, da, aa, sz) &&
               clef_test_accumulated(pre, db, ab, sz);
    if (!acc)
        fprintf(stderr, "%s: does not accumulate\n", wa);
    free(da), free(db), free(fa), free(fb), free(pre), free(aa), free(ab);
    cos_free(&k);
    return ok && acc;
}

Test(cosine, backward_fd_and_accumulates)
{
    uint64_t rng = 102;
    for (int ri = 0; ri < NSHAPES; ri++)
        for (int ni = 0; ni < NSHAPES; ni++)
            cr_assert(cos_backward_case(shapes[ri], shapes[ni], 0, 1e-7, &rng),
                      "cosine_bwd rows=%d n=%d", shapes[ri], shapes[ni]);
}

// a = 0: |a| ≤ eps, so â = a / eps and the gradient is w b̂ / eps (1e8 scale);
// the FD step 1e-10 stays inside that branch.
Test(cosine, zero_operand_backward)
{
    uint64_t rng = 103;
    static const int cases[][2] = {{1, 1}, {3, 7}, {7, 17}, {13, 33}};
    for (int i = 0; i < 4; i++)
        cr_assert(cos_backward_case(cases[i][0], cases[i][1], 1, 1e-10, &rng),
                  "cosine_bwd a=0 rows=%d n=%d", cases[i][0], cases[i][1]);
}

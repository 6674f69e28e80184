// Grouped loss (HEAD.md §6) of the scalar backend. Questions of
// n in {1, 2, 3, 7, 13, 17, 31, 33} options (plus more 1- and 2-option ones),
// one-hot and soft targets, some score questions.
//   CE only (ε = β = λ = 0): L against (1/N) Σ −log p(label) in double and
//     dz against (p − y)/N, within (n_max + 16) FLT_EPSILON (relative to
//     max(L, 1) and to 1/N); p against a double softmax.
//   smoothing, Brier, ordinal, each alone and all together: L against a double
//     re-implementation and dz by central finite differences in double of that
//     L, tolerance 4 (n_max + 8) FLT_EPSILON · max|dz|.
//   a 1-option question: p = 1, zero loss, zero gradient, whatever the terms.
//   *loss is added to; p and dz are overwritten.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int qsizes[] = {3, 1, 33, 2, 7, 1, 17, 13, 31, 2, 1};
#define NQ ((int)(sizeof(qsizes) / sizeof(qsizes[0])))
#define NMAX 33

typedef struct loss_case {
    int off[NQ + 1], is_score[NQ], total, nscore;
    float *z, *y, *p, *dz;
    double *zd, *yd;
    clef_loss_args a;
} loss_case;

// Targets: one-hot for even q, a soft distribution for odd q; every third
// question is a score question. soft = 0 makes every target one-hot.
static loss_case loss_alloc(float eps, float beta, float lambda, int soft,
                            uint64_t *rng)
{
    loss_case c = {.total = 0};
    c.off[0] = 0;
    for (int q = 0; q < NQ; q++)
        c.off[q + 1] = c.off[q] + qsizes[q];
    c.total = c.off[NQ];
    c.z = clef_test_falloc(c.total), c.y = clef_test_falloc(c.total);
    c.p = clef_test_falloc(c.total), c.dz = clef_test_falloc(c.total);
    c.zd = clef_test_dalloc(c.total), c.yd = clef_test_dalloc(c.total);
    clef_test_fill_uniform(c.z, c.total, -3, 3, rng);
    for (int q = 0; q < NQ; q++) {
        int o = c.off[q], n = qsizes[q];
        c.is_score[q] = q % 3 == 1;
        c.nscore += c.is_score[q];
        if (soft && q % 2 == 1) {
            float *yq = c.y + o;
            clef_test_fill_uniform(yq, n, 0.0f, 1.0f, rng);
            double s = 0;
            for (int i = 0; i < n; i++)
                s += yq[i];
            for (int i = 0; i < n; i++)
                yq[i] = (float)(yq[i] / s);
        } else {
            c.y[o + clef_test_rand_int(rng, 0, n - 1)] = 1.0f;
        }
    }
    clef_test_to_double(c.z, c.zd, c.total);
    clef_test_to_double(c.y, c.yd, c.total);
    c.a = (clef_loss_args){.smoothing = eps,
                           .brier = beta,
                           .ordinal = lambda,
                           .inv_n = 1.0f / NQ,
                           .inv_nscore = c.nscore ? 1.0f / c.nscore : 0.0f};
    return c;
}

static void loss_free(loss_case *c)
{
    free(c->z), free(c->y), free(c->p), free(c->dz), free(c->zd), free(c->yd);
}

// HEAD.md §6 in double, straight from the formulas.
static double loss_ref(const loss_case *c, const double *z, double *pout)
{
    double eps = c->a.smoothing, beta = c->a.brier, lambda = c->a.ordinal;
    double L = 0.0;
    double p[NMAX];
    for (int q = 0; q < NQ; q++) {
        int o = c->off[q], n = qsizes[q];
        const double *y = c->yd + o;
        clef_test_ref_softmax(n, z + o, p);
        double mx = -INFINITY, s = 0.0;
        for (int i = 0; i < n; i++)
            mx = fmax(mx, z[o + i]);
        for (int i = 0; i < n; i++)
            s += exp(z[o + i] - mx);
        double ce = 0.0, brier = 0.0, ord = 0.0;
        for (int i = 0; i < n; i++) {
            double ys = (1 - eps) * y[i] + eps / n;
            ce -= ys * (z[o + i] - mx - log(s));
            brier += (p[i] - y[i]) * (p[i] - y[i]);
            for (int j = 0; j < n; j++)
                ord += p[i] * abs(i - j) * y[j] / (n - 1 > 1 ? n - 1 : 1);
        }
        L += c->a.inv_n * (ce + beta * brier);
        if (c->is_score[q])
            L += lambda * c->a.inv_nscore * ord;
        for (int i = 0; pout && i < n; i++)
            pout[o + i] = p[i];
    }
    return L;
}

Test(loss, ce_only_is_mean_neg_log_p_label)
{
    uint64_t rng = 121;
    loss_case c = loss_alloc(0, 0, 0, 0, &rng);
    double *pd = clef_test_dalloc(c.total), *gd = clef_test_dalloc(c.total);
    double want = 0.0;
    loss_ref(&c, c.zd, pd);
    for (int q = 0; q < NQ; q++)
        for (int i = c.off[q]; i < c.off[q + 1]; i++)
            if (c.y[i] == 1.0f)
                want += -log(pd[i]) / NQ;
    for (int i = 0; i < c.total; i++)
        gd[i] = (pd[i] - c.yd[i]) * c.a.inv_n;
    clef_test_fill_const(c.p, c.total, NAN);
    clef_test_fill_const(c.dz, c.total, NAN);
    double loss = 1.5; // added to
    clef_scalar_kernels.loss(NQ, c.off, c.is_score, c.z, c.y, &c.a, c.p, c.dz,
                             &loss);
    double tol = (NMAX + 16) * CLEF_TEST_EPS;
    cr_assert(fabs((loss - 1.5) - want) <= tol * fmax(want, 1.0),
              "loss %.9g, want 1.5 + %.9g", loss, want);
    cr_assert(clef_test_close_d(c.p, pd, c.total, 0, tol), "p");
    cr_assert(clef_test_close_d(c.dz, gd, c.total, tol * c.a.inv_n, 0), "dz");
    free(pd), free(gd);
    loss_free(&c);
}

typedef struct fd_ctx {
    loss_case *c;
    double *z;
} fd_ctx;

static double loss_objective(void *p)
{
    fd_ctx *f = p;
    return loss_ref(f->c, f->z, NULL);
}

static bool loss_fd_case(float eps, float beta, float lambda, uint64_t *rng)
{
    loss_case c = loss_alloc(eps, beta, lambda, 1, rng);
    double *fd = clef_test_dalloc(c.total);
    fd_ctx f = {&c, c.zd};
    clef_test_fd_grad(c.zd, c.total, 1e-6, loss_objective, &f, fd);
    double want = loss_ref(&c, c.zd, NULL);
    clef_test_fill_const(c.dz, c.total, NAN);
    double loss = 0.0;
    clef_scalar_kernels.loss(NQ, c.off, c.is_score, c.z, c.y, &c.a, c.p, c.dz,
                             &loss);
    char what[80];
    snprintf(what, sizeof what, "loss dz eps=%g beta=%g lambda=%g", eps, beta,
             lambda);
    double units = 4.0 * (NMAX + 8);
    bool ok = clef_test_grad_close(what, c.dz, fd, c.total, units);
    double ltol = units * CLEF_TEST_EPS * fmax(want, 1.0);
    if (!(fabs(loss - want) <= ltol)) {
        fprintf(stderr, "%s: loss %.9g want %.9g\n", what, loss, want);
        ok = false;
    }
    for (int q = 0; q < NQ; q++) // 1-option questions: exactly nothing
        if (qsizes[q] == 1 &&
            (c.dz[c.off[q]] != 0.0f || c.p[c.off[q]] != 1.0f)) {
            fprintf(stderr, "%s: 1-option question %d: p %g dz %g\n", what, q,
                    c.p[c.off[q]], c.dz[c.off[q]]);
            ok = false;
        }
    free(fd);
    loss_free(&c);
    return ok;
}

Test(loss, smoothing_brier_ordinal_fd)
{
    static const float cfg[][3] = {
        {0.1f, 0, 0},        {0, 0.25f, 0}, {0, 0, 0.5f},
        {0.1f, 0.25f, 0.5f}, {0, 0, 0},     {0.3f, 1.0f, 2.0f},
    };
    uint64_t rng = 122;
    for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++)
        cr_assert(loss_fd_case(cfg[i][0], cfg[i][1], cfg[i][2], &rng),
                  "loss eps=%g beta=%g lambda=%g", cfg[i][0], cfg[i][1],
                  cfg[i][2]);
}

Test(loss, one_option_question_is_zero)
{
    int off[4] = {0, 1, 2, 3}, is_score[3] = {1, 0, 1};
    float z[3] = {5.0f, -7.0f, 0.0f}, y[3] = {1, 1, 1};
    float p[3] = {NAN, NAN, NAN}, dz[3] = {NAN, NAN, NAN};
    clef_loss_args a = {.smoothing = 0.2f,
                        .brier = 0.5f,
                        .ordinal = 1.0f,
                        .inv_n = 1.0f / 3,
                        .inv_nscore = 0.5f};
    double loss = 0.25;
    clef_scalar_kernels.loss(3, off, is_score, z, y, &a, p, dz, &loss);
    cr_assert(loss == 0.25, "loss changed to %.17g", loss);
    for (int i = 0; i < 3; i++) {
        cr_assert(p[i] == 1.0f, "p[%d] = %g", i, p[i]);
        cr_assert(dz[i] == 0.0f, "dz[%d] = %g", i, dz[i]);
    }
}

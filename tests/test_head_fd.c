// The float head (core/forward.c, core/backward.c, core/loss.c, with
// clef_scalar_kernels) against an independent double reference
// (tests/util_ref_head.c, written from HEAD.md §1-§6).
//
//   golden_reference: the double reference against the golden record's
//       float64 answers (tests/golden/tiny/expected.json): every intermediate
//       it lists (g, M[0], qv[0], lex[0], R0[0], R[0], F_hat[0], prior, cos,
//       residual), the logits and the loss, each |ref − golden| ≤ 8
//       FLT_EPSILON · max|golden vector|. This validates the reference itself,
//       independently of core/. Why not 1e-10: the golden generator computed
//       in float64 from float64 inputs and stored H, E and the weights
//       rounded to F32. lex[0] depends on E and the spans alone and already
//       differs by 2e-8 (1.6 eps·max) from the exact mean of the stored
//       table, so the stored files cannot reproduce the answers beyond input
//       rounding; the reference lands at ≤ 1.6 eps·max everywhere (logits 0.6,
//       loss 0.02), while a wrong primitive (e.g. LayerNorm eps 1e-6) is
//       off by 100-1000 eps·max.
//   forward_*: float logits z against the reference, |Δz_o| ≤ 256 FLT_EPSILON
//       · max(max|z|, 1) (a few hundred eps: the head is ~40 ops deep).
//   gradient_*: every parameter's analytic float gradient (forward + loss +
//       backward) against a central difference in double of the reference
//       loss, h = 1e-6 · max(1, |θ|) (truncation ~h² ≈ 1e-12, rounding
//       ~1e-16/h ≈ 1e-10 relative: far below float's 1e-7). Per tensor,
//       |g − fd| ≤ 2^8 FLT_EPSILON · scale, scale = max(‖fd_tensor‖∞,
//       1e-3 ‖fd_all‖∞): the float path's error relative to its own tensor
//       (~40 ops deep with LayerNorm amplification; observed ≤ 59 eps over 7
//       seeds per configuration), floored so that a tensor whose gradient is
//       tiny by structure (residual_scorer.3.bias: 0) is judged on the head's
//       scale. A single gradient element off by 5e-4 relative fails.
//       With CLEF_TEST_FD_REPORT set, prints the worst error of every tensor
//       in units of FLT_EPSILON · scale.
//   dropout_*: the same with dropout p = 0.3 at every site, the float path and
//       the reference applying the same fixed masks (core/dropout.h).
//   gradient_kappa_clamped_b: the same with s_p, s_j above ln 100, where
//       κ = 100 and both scales must get exactly 0 gradient.
//   invariants_*: HEAD.md §7 on the analytic gradient: residual_scorer.3.bias
//       is 0 and rows of type_embedding, layers.*.linear2.bias and
//       layers.*.*.out_proj.bias sum to 0 along w (see the tolerances there).
//
// Records: T = 9, ragged spans (one ends at T, one covers [0, T)), questions
// noul (2 options), score (3, ordinal on), choice (4, soft target), choice (1
// option). Two configurations: d=6 w=8 h=2 f=12 R=2 L=2 and the odd d=5 w=6
// h=3 f=7 R=1 L=1. Loss ε = 0.1, β = 0.25, λ = 0.3.
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/scalar/scalar.h"
#include "ref_head.h"
#include "safetensors.h"
#include "util.h"
#include "cpu/clock.h"

#define FD_UNITS 256.0    // 2^8 FLT_EPSILON · scale per gradient element
#define FD_FLOOR 1e-3     // scale floor: fraction of the head's ‖fd‖∞
#define LOGIT_UNITS 256.0 // float logits vs the reference
#define GOLDEN_UNITS 8.0  // the reference vs the golden float64 answers

static const clef_config cfg_a = {
    .d = 6, .w = 8, .h = 2, .f = 12, .R = 2, .L = 2};
static const clef_config cfg_b = {
    .d = 5, .w = 6, .h = 3, .f = 7, .R = 1, .L = 1};

// ---- a head, a record and the float forward/loss/backward on it ----

typedef struct fd_case {
    clef_head hd;
    clef_record r;
    float *E; // (V, d) lexical table
    int V;
    clef_train_opts to;    // float loss settings
    clef_ref_loss_opts lo; // the same for the reference
    float *z, *p, *dz;     // (O) float logits, probabilities, ∂L/∂z
    double *theta;         // (nparams) double copy of hd.params
    clef_dropout drop;     // the masks of both paths (off when p = 0)
} fd_case;

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

// Moves every tensor off its special init values: LayerNorm γ ≈ 1 ± 0.3,
// everything else ± 0.1 of noise; the scalars to s_p ∈ [0.2, 1],
// s_j ∈ [0.5, 1.5] (both far below ln 100), γ ∈ [−0.5, 0.5].
static void perturb(clef_head *hd, uint64_t *rng)
{
    for (int i = 0; i < hd->ntensors; i++) {
        const clef_tensor_info *t = &hd->tensors[i];
        float *x = hd->params + t->offset;
        double lo = -0.1, hi = 0.1;
        if (!strcmp(t->name, "prior_logit_scale"))
            lo = 0.2, hi = 1.0;
        else if (!strcmp(t->name, "joint_logit_scale"))
            lo = 0.5, hi = 1.5;
        else if (!strcmp(t->name, "residual_gate"))
            lo = -0.5, hi = 0.5;
        else if (strstr(t->name, "norm") && ends_with(t->name, ".weight"))
            lo = -0.3, hi = 0.3;
        for (size_t k = 0; k < t->numel; k++)
            x[k] += (float)(lo + (hi - lo) * clef_test_rand_unit(rng));
    }
}

// Tensor `name` inside buf (hd->params or hd->grads).
static float *tensor_in(const clef_head *hd, float *buf, const char *name)
{
    int i = clef_head_find(hd, name);
    cr_assert_geq(i, 0, "no tensor %s", name);
    return buf + hd->tensors[i].offset;
}

// Sets scalar tensor `name` to v.
static void set_scalar(clef_head *hd, const char *name, float v)
{
    *tensor_in(hd, hd->params, name) = v;
}

// saturate: s_p = 4.8 and s_j = 5 (both above ln 100 ≈ 4.605), where κ is
// clamped and its gradient must be 0.
// p > 0: dropout at every site (core/dropout.h), the same masks in the
// float path and the reference (update 7 of a run seeded `seed`).
static void fd_case_make(fd_case *c, const clef_config *cfg, uint64_t seed,
                         int saturate, const char *mode, double p)
{
    memset(c, 0, sizeof(*c));
    uint64_t rng = seed;
    clef_err err = {0};
    cr_assert_eq(clef_head_alloc(&c->hd, cfg, &err), CLEF_OK, "%s", err.msg);
    clef_head_init_random(&c->hd, seed);
    perturb(&c->hd, &rng);
    if (saturate) {
        set_scalar(&c->hd, "prior_logit_scale", 4.8f);
        set_scalar(&c->hd, "joint_logit_scale", 5.0f);
    }

    const int T = 9, Q = 4;
    const int qtype[4] = {CLEF_QTYPE_NOUL, CLEF_QTYPE_SCORE, CLEF_QTYPE_CHOICE,
                          CLEF_QTYPE_CHOICE};
    const int nopt[4] = {2, 3, 4, 1};
    const int soft[4] = {0, 0, 1, 0};
    c->V = 11;
    c->E = clef_test_falloc((size_t)c->V * cfg->d);
    clef_test_fill_uniform(c->E, (size_t)c->V * cfg->d, -1, 1, &rng);
    clef_test_random_record(&c->r, T, cfg->d, Q, qtype, nopt, soft, c->V, &rng);
    cr_assert_eq(
        clef_record_prepare(&clef_scalar_kernels, &c->r, c->E, c->V, &err),
        CLEF_OK, "%s", err.msg);

    clef_train_opts_default(&c->to);
    c->to.smoothing = 0.1, c->to.brier = 0.25, c->to.ordinal = 0.3;
    const clef_record *rs[1] = {&c->r};
    int n_q, n_score;
    clef_batch_counts(rs, 1, &n_q, &n_score);
    cr_assert_eq(n_q, Q, "clef_batch_counts: N = %d, expected %d", n_q, Q);
    cr_assert_eq(n_score, 1, "clef_batch_counts: N_score = %d, expected 1",
                 n_score);
    c->lo = (clef_ref_loss_opts){.smoothing = 0.1,
                                 .brier = 0.25,
                                 .ordinal = 0.3,
                                 .n_q = n_q,
                                 .n_score = n_score,
                                 .drop = &c->drop};
    clef_dropout_set(&c->drop, p, seed, 7, 0);

    // the float path: forward, loss, backward into zeroed grads
    const int O = c->r.O;
    c->z = clef_test_falloc(O), c->p = clef_test_falloc(O);
    c->dz = clef_test_falloc(O);
    clef_ws *ws = clef_ws_create(cfg, T, Q, O);
    cr_assert_not_null(ws, "clef_ws_create failed");
    cr_assert_eq(clef_ws_set_memory_attention(ws, mode), 0, "%s", mode);
    clef_ws_set_d_block_flops(ws, 1.0); // D in as many blocks as d allows
    clef_ws_set_dropout(ws, p, seed, 7, 0);
    memset(c->hd.grads, 0, sizeof(float) * c->hd.nparams);
    clef_head_forward(&clef_scalar_kernels, &c->hd, &c->r, ws, c->z);
    clef_record_loss(&clef_scalar_kernels, &c->r, c->z, &c->to, n_q, n_score,
                     c->p, c->dz);
    clef_head_backward(&clef_scalar_kernels, &c->hd, &c->r, ws, c->dz);
    clef_ws_free(ws);

    c->theta = clef_test_dalloc(c->hd.nparams);
    clef_test_to_double(c->hd.params, c->theta, c->hd.nparams);
}

static void fd_case_free(fd_case *c)
{
    clef_head_free(&c->hd);
    clef_record_free(&c->r);
    free(c->E), free(c->z), free(c->p), free(c->dz), free(c->theta);
}

static double ref_loss(fd_case *c, double *logits)
{
    return clef_ref_head_loss(&c->hd, c->theta, &c->r, c->E, c->V, &c->lo,
                              logits);
}

// ∂L/∂θ_i by a central difference of the reference loss in double,
// h = 1e-6 · max(1, |θ_i|) (see the file comment).
static double central_difference(fd_case *c, size_t i)
{
    const double x0 = c->theta[i], h = 1e-6 * fmax(1.0, fabs(x0));
    c->theta[i] = x0 + h;
    const double lp = ref_loss(c, NULL);
    c->theta[i] = x0 - h;
    const double lm = ref_loss(c, NULL);
    c->theta[i] = x0;
    return (lp - lm) / ((x0 + h) - (x0 - h));
}

// ---- float forward against the reference ----

static void check_forward(const clef_config *cfg, uint64_t seed,
                          const char *mode, double p)
{
    fd_case c;
    fd_case_make(&c, cfg, seed, 0, mode, p);
    const int O = c.r.O;
    double *zr = clef_test_dalloc(O);
    double loss = ref_loss(&c, zr);
    cr_assert(isfinite(loss), "reference loss %g", loss);
    double scale = fmax(clef_test_max_abs_d(zr, O), 1.0);
    bool ok =
        clef_test_close_d(c.z, zr, O, LOGIT_UNITS * CLEF_TEST_EPS * scale, 0);
    // the float loss of the same logits, for the record
    double fl = clef_record_loss(&clef_scalar_kernels, &c.r, c.z, &c.to,
                                 c.lo.n_q, c.lo.n_score, c.p, c.dz);
    bool lok = fabs(fl - loss) <= LOGIT_UNITS * CLEF_TEST_EPS * fmax(loss, 1.0);
    if (getenv("CLEF_TEST_FD_REPORT")) {
        double worst = 0.0;
        for (int o = 0; o < O; o++)
            worst = fmax(worst, fabs(c.z[o] - zr[o]));
        fprintf(stderr,
                "[head_fd] forward d=%d w=%d: max|z - ref| = %.3g = "
                "%.2f eps*scale (allowed %.0f); loss %.9g vs %.9g\n",
                cfg->d, cfg->w, worst, worst / (CLEF_TEST_EPS * scale),
                LOGIT_UNITS, fl, loss);
    }
    free(zr);
    fd_case_free(&c);
    cr_assert(ok, "float logits differ from the double reference (d=%d w=%d)",
              cfg->d, cfg->w);
    cr_assert(lok, "float loss %.9g vs reference %.9g", fl, loss);
}

// each memory-attention form (core/memattn.h) against the same reference
Test(head_fd, forward_matches_reference_a)
{
    check_forward(&cfg_a, 0x5eed01, "project", 0);
    check_forward(&cfg_a, 0x5eed01, "absorb", 0);
}
Test(head_fd, forward_matches_reference_b)
{
    check_forward(&cfg_b, 0x5eed02, "project", 0);
    check_forward(&cfg_b, 0x5eed02, "absorb", 0);
}

// ---- every parameter by central differences ----

// "layers.1.norm2.weight" -> "layers.*.norm2.weight": the layer index of a
// routing or field layer folded, nothing else.
static void family_of(const char *name, char *fam, size_t n)
{
    const char *pre[2] = {"evidence_layers.", "layers."};
    snprintf(fam, n, "%s", name);
    for (int i = 0; i < 2; i++) {
        size_t m = strlen(pre[i]);
        if (strncmp(name, pre[i], m) != 0)
            continue;
        const char *rest = name + m;
        while (*rest >= '0' && *rest <= '9')
            rest++;
        snprintf(fam, n, "%s*%s", pre[i], rest);
        return;
    }
}

static void check_gradient(const clef_config *cfg, uint64_t seed, int saturate,
                           const char *mode, double p)
{
    fd_case c;
    fd_case_make(&c, cfg, seed, saturate, mode, p);
    if (saturate) {
        // κ clamped: the two scales get no gradient at all (HEAD.md §4)
        for (int k = 0; k < 2; k++) {
            const char *nm = k ? "joint_logit_scale" : "prior_logit_scale";
            float gk = *tensor_in(&c.hd, c.hd.grads, nm);
            cr_expect_eq(gk, 0.f, "%s = %g above ln 100 has gradient %g", nm,
                         *tensor_in(&c.hd, c.hd.params, nm), gk);
        }
    }
    const size_t np = c.hd.nparams;
    double *fd = clef_test_dalloc(np);
    double t0 = clef_now_s();
    for (size_t i = 0; i < np; i++)
        fd[i] = central_difference(&c, i);
    double t_fd = clef_now_s() - t0;

    const double fd_all = clef_test_max_abs_d(fd, np);
    const int report = getenv("CLEF_TEST_FD_REPORT") != NULL;
    int nbad = 0;
    const char *first_bad = NULL, *worst_name = "";
    double worst_units = 0.0;
    for (int ti = 0; ti < c.hd.ntensors; ti++) {
        const clef_tensor_info *t = &c.hd.tensors[ti];
        const float *g = c.hd.grads + t->offset;
        const double *f = fd + t->offset;
        double scale =
            fmax(clef_test_max_abs_d(f, t->numel), FD_FLOOR * fd_all);
        double maxerr = 0.0;
        size_t at = 0;
        for (size_t k = 0; k < t->numel; k++) {
            double e = fabs((double)g[k] - f[k]);
            if (!(e <= maxerr))
                maxerr = e, at = k;
        }
        double units = maxerr / (CLEF_TEST_EPS * scale);
        if (!(units <= worst_units) || isnan(units))
            worst_units = units, worst_name = t->name;
        if (report)
            fprintf(stderr,
                    "[head_fd] %-46s n=%-5zu scale=%.3e worst=%8.2f "
                    "eps (at [%zu]: an %.9g fd %.9g)\n",
                    t->name, t->numel, scale, units, at, g[at], f[at]);
        if (!(units <= FD_UNITS)) {
            if (!nbad++)
                first_bad = t->name;
            fprintf(stderr,
                    "[head_fd] MISMATCH %s: [%zu] analytic %.9g fd "
                    "%.9g |diff| %.3g = %.1f eps*scale (allowed %.0f, "
                    "scale %.3g)\n",
                    t->name, at, g[at], f[at], maxerr, units, FD_UNITS, scale);
        }
    }
    // the worst per family (layers.0 / layers.1 folded together)
    if (report) {
        char fam[2 * CLEF_NAME_MAX], seen[2 * CLEF_NAME_MAX];
        for (int ti = 0; ti < c.hd.ntensors; ti++) {
            family_of(c.hd.tensors[ti].name, fam, sizeof(fam));
            int dup = 0;
            for (int tj = 0; tj < ti && !dup; tj++) {
                family_of(c.hd.tensors[tj].name, seen, sizeof(seen));
                dup = !strcmp(seen, fam);
            }
            if (dup)
                continue;
            double wu = 0.0;
            for (int tj = ti; tj < c.hd.ntensors; tj++) {
                family_of(c.hd.tensors[tj].name, seen, sizeof(seen));
                if (strcmp(seen, fam))
                    continue;
                const clef_tensor_info *t = &c.hd.tensors[tj];
                double sc = fmax(clef_test_max_abs_d(fd + t->offset, t->numel),
                                 FD_FLOOR * fd_all);
                for (size_t k = 0; k < t->numel; k++) {
                    double u = fabs((double)c.hd.grads[t->offset + k] -
                                    fd[t->offset + k]) /
                               (CLEF_TEST_EPS * sc);
                    wu = u > wu ? u : wu;
                }
            }
            fprintf(stderr, "[head_fd] family %-44s worst %8.2f eps\n", fam,
                    wu);
        }
    }
    fprintf(stderr,
            "[head_fd] d=%d w=%d h=%d f=%d R=%d L=%d: %zu params, FD "
            "%.2f s, worst %.1f eps*scale in %s (allowed %.0f), "
            "%d of %d tensors fail\n",
            cfg->d, cfg->w, cfg->h, cfg->f, cfg->R, cfg->L, np, t_fd,
            worst_units, worst_name, FD_UNITS, nbad, c.hd.ntensors);
    char first[2 * CLEF_NAME_MAX] = "";
    if (first_bad)
        snprintf(first, sizeof(first), "%s", first_bad);
    free(fd);
    fd_case_free(&c);
    cr_assert_eq(nbad, 0,
                 "%d tensors disagree with finite differences; first: "
                 "%s",
                 nbad, first);
}

Test(head_fd, gradient_every_tensor_a, .timeout = 60)
{
    check_gradient(&cfg_a, 0xfd01, 0, "project", 0);
}
Test(head_fd, gradient_every_tensor_b, .timeout = 60)
{
    check_gradient(&cfg_b, 0xfd02, 0, "project", 0);
}
// the memory attentions in absorbed form (core/memattn.h)
Test(head_fd, gradient_every_tensor_a_absorbed, .timeout = 60)
{
    check_gradient(&cfg_a, 0xfd01, 0, "absorb", 0);
}
Test(head_fd, gradient_every_tensor_b_absorbed, .timeout = 60)
{
    check_gradient(&cfg_b, 0xfd02, 0, "absorb", 0);
}
// Dropout at every site with its masks fixed (core/dropout.h): the float
// path (the field attentions composed per head, the routing attention in
// either form) against the reference applying the same masks, logits and
// every gradient. p = 0.3 drops about a third of every site.
Test(head_fd, dropout_forward_matches_reference)
{
    check_forward(&cfg_a, 0xd401, "project", 0.3);
    check_forward(&cfg_a, 0xd401, "absorb", 0.3);
    check_forward(&cfg_b, 0xd402, "auto", 0.3);
}
Test(head_fd, dropout_gradient_every_tensor_a, .timeout = 60)
{
    check_gradient(&cfg_a, 0xd403, 0, "project", 0.3);
}
Test(head_fd, dropout_gradient_every_tensor_b_absorbed, .timeout = 60)
{
    check_gradient(&cfg_b, 0xd404, 0, "absorb", 0.3);
}

// κ(s) clamped at 100 for both scales (odd widths)
Test(head_fd, gradient_kappa_clamped_b, .timeout = 60)
{
    check_gradient(&cfg_b, 0xfd03, 1, "auto", 0);
}

// A wide hidden size: the memory projection's backward computes D = dMᵀ x̂
// in column blocks (core/backward.c, d_chunks: with fd_case_make's block
// size, 4 at d = 1300, edges at 576, 1024 and 1280). W_m and hidden_norm's
// gradients at the columns on both sides of every edge and at the ends,
// against central differences as above, scaled
// by the largest of the sampled differences per tensor: a block that misses
// or repeats columns is off by a whole gradient there.
static const clef_config cfg_wide = {
    .d = 1300, .w = 8, .h = 2, .f = 12, .R = 1, .L = 1};

static void check_wide_gradient(const char *mode)
{
    static const char *const names[] = {
        "memory_projection.weight", "hidden_norm.weight", "hidden_norm.bias"};
    static const int cols[] = {0, 575, 576, 1023, 1024, 1279, 1280, 1299};
    const int ncol = (int)(sizeof(cols) / sizeof(cols[0])), d = cfg_wide.d;
    fd_case c;
    fd_case_make(&c, &cfg_wide, 0xfd04, 0, mode, 0);
    int nbad = 0;
    for (int n = 0; n < 3; n++) {
        const int ti = clef_head_find(&c.hd, names[n]);
        cr_assert_geq(ti, 0, "no tensor %s", names[n]);
        const clef_tensor_info *t = &c.hd.tensors[ti];
        const int rows = (int)(t->numel / d);
        double fd[8 * 8], an[8 * 8], scale = 0.0;
        cr_assert_leq(rows * ncol, 8 * 8, "%s: %d rows", names[n], rows);
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < ncol; j++) {
                const size_t i = t->offset + (size_t)r * d + cols[j];
                fd[r * ncol + j] = central_difference(&c, i);
                an[r * ncol + j] = c.hd.grads[i];
                scale = fmax(scale, fabs(fd[r * ncol + j]));
            }
        for (int k = 0; k < rows * ncol; k++) {
            double units = fabs(an[k] - fd[k]) / (CLEF_TEST_EPS * scale);
            if (units <= FD_UNITS)
                continue;
            nbad++;
            cr_expect(0,
                      "%s (%s) row %d column %d: analytic %.9g fd %.9g "
                      "(%.1f eps*scale, allowed %.0f)",
                      names[n], mode, k / ncol, cols[k % ncol], an[k], fd[k],
                      units, FD_UNITS);
        }
    }
    fd_case_free(&c);
    cr_assert_eq(nbad, 0, "%d sampled gradients disagree", nbad);
}

Test(head_fd, gradient_memory_projection_wide, .timeout = 60)
{
    check_wide_gradient("project");
    check_wide_gradient("absorb");
}

// ---- HEAD.md §7 invariants on the analytic gradient ----

// Every row of tensor `name` (rows × w) sums to 0 along w: a sum of w float
// terms, each a sum of LayerNorm backwards whose rows sum to 0 exactly, so
// |Σ_k g_k| ≤ 4 (w + 8) FLT_EPSILON · Σ_k |g_k| (observed ≤ 0.1 of that).
static bool rows_sum_to_zero(const clef_head *hd, const char *name)
{
    int ti = clef_head_find(hd, name);
    cr_assert_geq(ti, 0, "no tensor %s", name);
    const clef_tensor_info *t = &hd->tensors[ti];
    const int w = hd->cfg.w, rows = (int)(t->numel / w);
    cr_assert_eq(t->numel % w, 0, "%s: %zu not a multiple of w", name,
                 t->numel);
    const float *g = hd->grads + t->offset;
    bool ok = true;
    for (int i = 0; i < rows; i++) {
        double s = 0.0, a = 0.0;
        for (int k = 0; k < w; k++)
            s += g[(size_t)i * w + k], a += fabs(g[(size_t)i * w + k]);
        double tol = 4.0 * (w + 8) * CLEF_TEST_EPS * a;
        if (getenv("CLEF_TEST_FD_REPORT"))
            fprintf(stderr,
                    "[head_fd] Σrow %s[%d] = %.3g (Σ|g| %.3g, allowed "
                    "%.3g)\n",
                    name, i, s, a, tol);
        if (!(fabs(s) <= tol)) {
            fprintf(stderr,
                    "[head_fd] %s row %d sums to %.3g (Σ|g| %.3g), "
                    "allowed %.3g\n",
                    name, i, s, a, tol);
            ok = false;
        }
    }
    return ok;
}

static void check_invariants(const clef_config *cfg, uint64_t seed)
{
    fd_case c;
    fd_case_make(&c, cfg, seed, 0, "auto", 0);
    // residual_scorer.3.bias: σ(γ) Σ_o ∂L/∂z_o, and ∂L/∂z sums to 0 over each
    // question; the terms cancelling are σ(γ)(p + y')/N and the Brier and
    // ordinal parts (≤ (2β + λ) of the same size): O float terms.
    const float *b = tensor_in(&c.hd, c.hd.grads, "residual_scorer.3.bias");
    const double gate = *tensor_in(&c.hd, c.hd.params, "residual_gate");
    double mag = 0.0;
    for (int o = 0; o < c.r.O; o++)
        mag += fabs(c.p[o]) + fabs(c.r.target[o]) + c.lo.smoothing;
    mag *=
        (1.0 + 2.0 * c.lo.brier + c.lo.ordinal) / c.lo.n_q / (1.0 + exp(-gate));
    const double btol = 4.0 * (c.r.O + 8) * CLEF_TEST_EPS * mag;
    bool bias_ok = fabs(b[0]) <= btol;
    if (!bias_ok || getenv("CLEF_TEST_FD_REPORT"))
        fprintf(stderr,
                "[head_fd] residual_scorer.3.bias grad %.3g, allowed "
                "%.3g\n",
                b[0], btol);

    bool rows_ok = rows_sum_to_zero(&c.hd, "type_embedding.weight");
    char name[CLEF_NAME_MAX];
    for (int j = 0; j < cfg->L; j++) {
        snprintf(name, sizeof(name), "layers.%d.linear2.bias", j);
        rows_ok &= rows_sum_to_zero(&c.hd, name);
        snprintf(name, sizeof(name), "layers.%d.self_attn.out_proj.bias", j);
        rows_ok &= rows_sum_to_zero(&c.hd, name);
        snprintf(name, sizeof(name), "layers.%d.multihead_attn.out_proj.bias",
                 j);
        rows_ok &= rows_sum_to_zero(&c.hd, name);
    }
    // the invariant must not hold trivially: the field stream gets gradient
    double te = clef_test_max_abs(
        tensor_in(&c.hd, c.hd.grads, "type_embedding.weight"), 3 * cfg->w);
    fd_case_free(&c);
    cr_assert(bias_ok, "grad of residual_scorer.3.bias is not 0");
    cr_assert(rows_ok, "a gradient row of the field stream does not sum to 0");
    cr_assert_gt(te, 0.0, "type_embedding gets no gradient at all");
}

Test(head_fd, invariants_a)
{
    check_invariants(&cfg_a, 0x1a01);
}
Test(head_fd, invariants_b)
{
    check_invariants(&cfg_b, 0x1a02);
}

// ---- the reference against the golden record ----

static const char *golden_dir(void)
{
    return CLEF_TEST_DATA "/golden/tiny";
}

static json_t *load_json(const char *file)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", golden_dir(), file);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s (line %d)", path, je.text, je.line);
    return j;
}

static void st_open(const char *file, clef_st_file *f)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", golden_dir(), file);
    clef_err err = {0};
    cr_assert_eq(clef_st_open(path, f, &err), CLEF_OK, "%s", err.msg);
}

static const clef_st_tensor *st_get(const clef_st_file *f, const char *name,
                                    size_t numel)
{
    const clef_st_tensor *t = clef_st_find(f, name);
    cr_assert_not_null(t, "%s: no tensor %s", f->path, name);
    cr_assert_eq(t->numel, numel, "%s: %s has %zu values, expected %zu",
                 f->path, name, t->numel, numel);
    return t;
}

static int cfg_int(json_t *head, const char *key)
{
    json_t *v = json_object_get(head, key);
    cr_assert(json_is_integer(v), "package.json: head.%s", key);
    return (int)json_integer_value(v);
}

static int qtype_of(const char *s)
{
    if (!strcmp(s, "noul"))
        return CLEF_QTYPE_NOUL;
    if (!strcmp(s, "choice"))
        return CLEF_QTYPE_CHOICE;
    cr_assert_str_eq(s, "score", "package.json: unknown question type %s", s);
    return CLEF_QTYPE_SCORE;
}

// The golden record from package.json and its shard, by hand (not through
// core/package.c): spans, ids, H, types and targets.
static void golden_record(json_t *pkg, int d, clef_record *r)
{
    memset(r, 0, sizeof(*r));
    json_t *rec = json_array_get(json_object_get(pkg, "records"), 0);
    json_t *qs = json_object_get(rec, "questions");
    cr_assert(json_is_array(qs), "package.json: records[0].questions");
    const char *id = json_string_value(json_object_get(rec, "id"));
    cr_assert_not_null(id, "package.json: records[0].id");
    r->Q = (int)json_array_size(qs);
    r->qtype = clef_test_ialloc(r->Q), r->opt_off = clef_test_ialloc(r->Q + 1);
    r->has_target = clef_test_ialloc(r->Q), r->label = clef_test_ialloc(r->Q);
    for (int q = 0; q < r->Q; q++) {
        json_t *jq = json_array_get(qs, q);
        r->qtype[q] = qtype_of(json_string_value(json_object_get(jq, "type")));
        r->opt_off[q + 1] = r->opt_off[q] + (int)json_array_size(
                                                json_object_get(jq, "options"));
    }
    r->O = r->opt_off[r->Q];
    r->target = clef_test_falloc(r->O);
    for (int q = 0; q < r->Q; q++) {
        json_t *jq = json_array_get(qs, q);
        json_t *lab = json_object_get(jq, "label"),
               *tg = json_object_get(jq, "target");
        r->has_target[q] = 1;
        r->label[q] = -1;
        if (json_is_integer(lab)) {
            r->label[q] = (int)json_integer_value(lab);
            r->target[r->opt_off[q] + r->label[q]] = 1.f;
        } else {
            cr_assert(json_is_array(tg), "package.json: question %d target", q);
            for (size_t i = 0; i < json_array_size(tg); i++)
                r->target[r->opt_off[q] + i] =
                    (float)json_real_value(json_array_get(tg, i));
        }
    }
    clef_st_file sh;
    st_open("records-000.safetensors", &sh);
    char key[256];
    snprintf(key, sizeof(key), "%s/hidden", id);
    const clef_st_tensor *th = clef_st_find(&sh, key);
    cr_assert_not_null(th, "no %s", key);
    r->T = (int)th->shape[0], r->d = d;
    cr_assert_eq(th->shape[1], d, "%s width", key);
    r->H = clef_test_falloc((size_t)r->T * d);
    r->ids = clef_test_ialloc(r->T);
    r->qspan = clef_test_ialloc((size_t)2 * r->Q);
    r->ospan = clef_test_ialloc((size_t)2 * r->O);
    clef_err err = {0};
    cr_assert_eq(clef_st_read_f32(&sh, th, r->H, 1, &err), CLEF_OK, "%s",
                 err.msg);
    snprintf(key, sizeof(key), "%s/input_ids", id);
    cr_assert_eq(clef_st_read_i32(&sh, st_get(&sh, key, r->T), r->ids, &err),
                 CLEF_OK, "%s", err.msg);
    snprintf(key, sizeof(key), "%s/question_spans", id);
    cr_assert_eq(
        clef_st_read_i32(&sh, st_get(&sh, key, 2 * r->Q), r->qspan, &err),
        CLEF_OK, "%s", err.msg);
    snprintf(key, sizeof(key), "%s/option_spans", id);
    cr_assert_eq(
        clef_st_read_i32(&sh, st_get(&sh, key, 2 * r->O), r->ospan, &err),
        CLEF_OK, "%s", err.msg);
    clef_st_close(&sh);
}

// got (n) against the golden array want: |got − want| ≤ GOLDEN_UNITS
// FLT_EPSILON · max|want| (see the top of the file for why not 1e-10).
static bool golden_close(const char *what, json_t *want, const double *got,
                         int n)
{
    cr_assert(json_is_array(want) && (int)json_array_size(want) == n,
              "expected.json: %s is not an array of %d numbers", what, n);
    double mx = 0.0, worst = 0.0;
    int at = 0;
    for (int i = 0; i < n; i++)
        mx = fmax(mx, fabs(json_number_value(json_array_get(want, i))));
    for (int i = 0; i < n; i++) {
        double e = fabs(got[i] - json_number_value(json_array_get(want, i)));
        if (!(e <= worst))
            worst = e, at = i;
    }
    double units = worst / (CLEF_TEST_EPS * mx);
    bool ok = units <= GOLDEN_UNITS;
    if (!ok || getenv("CLEF_TEST_FD_REPORT"))
        fprintf(stderr,
                "[head_fd] golden %-10s worst |ref - golden| %.3g at "
                "[%d] (%.17g vs %.17g) = %.2f eps*max (allowed %.0f)\n",
                what, worst, at, got[at],
                json_number_value(json_array_get(want, at)), units,
                GOLDEN_UNITS);
    return ok;
}

Test(head_fd, golden_reference)
{
    json_t *pkg = load_json("package.json"), *exp = load_json("expected.json");
    json_t *head = json_object_get(pkg, "head");
    clef_config cfg = {.d = cfg_int(head, "hidden_size"),
                       .w = cfg_int(head, "width"),
                       .h = cfg_int(head, "heads"),
                       .f = cfg_int(head, "feedforward"),
                       .R = cfg_int(head, "routing_layers"),
                       .L = cfg_int(head, "layers")};
    clef_head hd;
    clef_err err = {0};
    cr_assert_eq(clef_head_alloc(&hd, &cfg, &err), CLEF_OK, "%s", err.msg);

    // weights: every tensor by name, float32 on disk, exact in double
    clef_st_file wf;
    st_open("weights.safetensors", &wf);
    double *theta = clef_test_dalloc(hd.nparams);
    for (int i = 0; i < hd.ntensors; i++) {
        const clef_tensor_info *t = &hd.tensors[i];
        const clef_st_tensor *st = st_get(&wf, t->name, t->numel);
        cr_assert_eq(clef_st_read_f32(&wf, st, hd.params + t->offset, 1, &err),
                     CLEF_OK, "%s", err.msg);
    }
    clef_st_close(&wf);
    clef_test_to_double(hd.params, theta, hd.nparams);

    clef_st_file lf;
    st_open("lexical.safetensors", &lf);
    const clef_st_tensor *te = clef_st_find(&lf, "lexical");
    cr_assert_not_null(te, "lexical.safetensors: no tensor lexical");
    cr_assert_eq(te->shape[1], cfg.d, "lexical width");
    const int V = (int)te->shape[0];
    float *E = clef_test_falloc((size_t)V * cfg.d);
    cr_assert_eq(clef_st_read_f32(&lf, te, E, 1, &err), CLEF_OK, "%s", err.msg);
    clef_st_close(&lf);

    clef_record r;
    golden_record(pkg, cfg.d, &r);
    json_t *set = json_object_get(exp, "settings");
    int n_score = 0;
    for (int q = 0; q < r.Q; q++)
        n_score += r.qtype[q] == CLEF_QTYPE_SCORE;
    clef_ref_loss_opts lo = {
        .smoothing = json_number_value(json_object_get(set, "label_smoothing")),
        .brier = json_number_value(json_object_get(set, "brier")),
        .ordinal = json_number_value(json_object_get(set, "ordinal")),
        .n_q = r.Q,
        .n_score = n_score};
    const int d = cfg.d, w = cfg.w, O = r.O;
    double *z = clef_test_dalloc(O);
    clef_ref_trace tr = {.g = clef_test_dalloc(d),
                         .M0 = clef_test_dalloc(w),
                         .qv0 = clef_test_dalloc(d),
                         .lex0 = clef_test_dalloc(d),
                         .R0_0 = clef_test_dalloc(w),
                         .R_0 = clef_test_dalloc(w),
                         .Fhat0 = clef_test_dalloc(w),
                         .prior = clef_test_dalloc(O),
                         .cos = clef_test_dalloc(O),
                         .res = clef_test_dalloc(O)};
    double loss = clef_ref_head_loss_trace(&hd, theta, &r, E, V, &lo, z, &tr);

    json_t *im = json_object_get(exp, "intermediates");
    bool ok =
        golden_close("g = X[T-1]", json_object_get(im, "g = X[T-1]"), tr.g, d);
    ok &= golden_close("M[0]", json_object_get(im, "M[0]"), tr.M0, w);
    ok &= golden_close("qv[0]", json_object_get(im, "qv[0]"), tr.qv0, d);
    ok &= golden_close("lex[0]", json_object_get(im, "lex[0]"), tr.lex0, d);
    ok &= golden_close("R0[0]", json_object_get(im, "R0[0]"), tr.R0_0, w);
    ok &= golden_close("R[0]", json_object_get(im, "R[0]"), tr.R_0, w);
    ok &=
        golden_close("F_hat[0]", json_object_get(im, "F_hat[0]"), tr.Fhat0, w);
    ok &= golden_close("prior", json_object_get(im, "prior"), tr.prior, O);
    ok &= golden_close("cos", json_object_get(im, "cos"), tr.cos, O);
    ok &= golden_close("residual", json_object_get(im, "residual"), tr.res, O);
    ok &= golden_close("logits", json_object_get(exp, "logits"), z, O);
    json_t *jl = json_array(); // the loss as a vector of one
    json_array_append_new(
        jl, json_real(json_number_value(json_object_get(exp, "loss"))));
    ok &= golden_close("loss", jl, &loss, 1);
    json_decref(jl);
    cr_expect(ok, "the double reference does not reproduce the golden record");
    free(tr.g), free(tr.M0), free(tr.qv0), free(tr.lex0), free(tr.R0_0);
    free(tr.R_0), free(tr.Fhat0), free(tr.prior), free(tr.cos), free(tr.res);
    free(z), free(E), free(theta);
    clef_record_free(&r);
    clef_head_free(&hd);
    json_decref(pkg), json_decref(exp);
}

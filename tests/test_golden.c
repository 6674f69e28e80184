// The golden record (HEAD.md §9, tests/golden/tiny, a copy of the spec's):
// logits, probabilities, loss, the L2 norm of each of the 122 gradients and,
// after one AdamW step (scope all), each tensor's sum and L2 norm, all within
// 1e-5 relative of expected.json (float64 answers from an independent
// PyTorch program). The scalar backend is the reference here.
#include <criterion/criterion.h>
#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "head.h"
#include "package.h"
#include "weights.h"

#define GOLDEN CLEF_TEST_DATA "/golden/tiny"
#define REL_TOL 1e-5

typedef struct golden {
    clef_package pkg;
    clef_head hd;
    clef_ws *ws;
    json_t *expected;
    clef_train_opts opts;
} golden;

static double worst_rel; // the worst relative error seen, for the report

// mode: how the memory attentions run ("project", "absorb": HEAD.md's
// numbers either way, to float rounding).
static void golden_load_mode(golden *g, const char *mode)
{
    clef_err err = {0};
    cr_assert_eq(clef_package_read(GOLDEN "/package.json", NULL, &g->pkg, &err),
                 0, "%s", err.msg);
    cr_assert_eq(clef_package_prepare(&g->pkg, &clef_scalar_kernels, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(
        clef_weights_load(GOLDEN "/weights.safetensors", 2, &g->hd, &err), 0,
        "%s", err.msg);
    json_error_t jerr;
    g->expected = json_load_file(GOLDEN "/expected.json", 0, &jerr);
    cr_assert_not_null(g->expected, "expected.json: %s", jerr.text);
    g->ws = clef_ws_create(&g->hd.cfg, g->pkg.Tmax, g->pkg.Qmax, g->pkg.Omax);
    cr_assert_not_null(g->ws);
    cr_assert_eq(clef_ws_set_memory_attention(g->ws, mode), 0, "%s", mode);
    // the loss and optimizer settings come from expected.json itself
    json_t *s = json_object_get(g->expected, "settings");
    json_t *a = json_object_get(s, "adamw");
    clef_train_opts_default(&g->opts);
    g->opts.smoothing =
        json_number_value(json_object_get(s, "label_smoothing"));
    g->opts.brier = json_number_value(json_object_get(s, "brier"));
    g->opts.ordinal = json_number_value(json_object_get(s, "ordinal"));
    g->opts.lr = json_number_value(json_object_get(a, "lr"));
    g->opts.beta1 =
        json_number_value(json_array_get(json_object_get(a, "betas"), 0));
    g->opts.beta2 =
        json_number_value(json_array_get(json_object_get(a, "betas"), 1));
    g->opts.eps = json_number_value(json_object_get(a, "eps"));
    g->opts.weight_decay =
        json_number_value(json_object_get(a, "weight_decay"));
    const char *scope = json_string_value(json_object_get(a, "decay_scope"));
    cr_assert_not_null(scope);
    g->opts.decay_all = strcmp(scope, "all") == 0;
}

static void golden_free(golden *g)
{
    clef_ws_free(g->ws);
    clef_head_free(&g->hd);
    clef_package_free(&g->pkg);
    json_decref(g->expected);
}

// Relative error against max(|want|, floor): the floor only matters for an
// expected value that is zero in exact arithmetic (the gradient of
// residual_scorer.3.bias is 1e-17 in float64), where a relative error means
// nothing; it is FLT_EPSILON times the scale of the quantity's family.
static void expect_rel_floor(const char *what, double got, double want,
                             double floor)
{
    double rel = fabs(got - want) / fmax(fabs(want), fmax(floor, 1e-300));
    if (getenv("CLEF_GOLDEN_REPORT"))
        fprintf(stderr, "[golden] %-60s rel %.3g\n", what, rel);
    if (rel > worst_rel)
        worst_rel = rel;
    cr_expect(rel <= REL_TOL,
              "%s: got %.9g, expected %.9g (relative error %.3g > %g)", what,
              got, want, rel, REL_TOL);
}

static void expect_rel(const char *what, double got, double want)
{
    expect_rel_floor(what, got, want, 0.0);
}

static double tensor_l2(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return sqrt(s);
}

static double tensor_sum(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static void golden_load(golden *g)
{
    golden_load_mode(g, "auto");
}

static void golden_full(const char *mode)
{
    golden g = {0};
    golden_load_mode(&g, mode);
    const clef_record *r = &g.pkg.records[0];
    cr_assert_eq(g.pkg.nrecords, 1);

    // logits and probabilities before the step
    float z[16], p[16], dz[16];
    cr_assert(r->O <= 16);
    clef_head_forward(&clef_scalar_kernels, &g.hd, r, g.ws, z);
    json_t *el = json_object_get(g.expected, "logits");
    cr_assert_eq((int)json_array_size(el), r->O);
    char what[128];
    for (int o = 0; o < r->O; o++) {
        snprintf(what, sizeof(what), "logit %d", o);
        expect_rel(what, z[o], json_number_value(json_array_get(el, o)));
    }
    int n_q, n_score;
    clef_batch_counts(&r, 1, &n_q, &n_score);
    double loss = clef_record_loss(&clef_scalar_kernels, r, z, &g.opts, n_q,
                                   n_score, p, dz);
    json_t *ep = json_object_get(g.expected, "probabilities");
    cr_assert_eq((int)json_array_size(ep), r->Q);
    for (int q = 0; q < r->Q; q++) {
        json_t *row = json_array_get(ep, q);
        cr_assert_eq((int)json_array_size(row),
                     r->opt_off[q + 1] - r->opt_off[q]);
        for (int o = r->opt_off[q]; o < r->opt_off[q + 1]; o++) {
            snprintf(what, sizeof(what), "probability q%d o%d", q, o);
            expect_rel(
                what, p[o],
                json_number_value(json_array_get(row, o - r->opt_off[q])));
        }
    }
    expect_rel("loss", loss,
               json_number_value(json_object_get(g.expected, "loss")));

    // one update: gradients (kept in hd.grads after the step), then weights
    double step_loss =
        clef_train_step(&clef_scalar_kernels, &g.hd, &r, 1, g.ws, &g.opts);
    cr_expect_eq(step_loss, loss, "the update's loss is the forward's loss");
    json_t *gl2 = json_object_get(g.expected, "grad_l2");
    const double grad_total =
        json_number_value(json_object_get(g.expected, "grad_l2_total"));
    json_t *after = json_object_get(g.expected, "after_one_step");
    cr_assert_eq((int)json_object_size(gl2), g.hd.ntensors);
    cr_assert_eq((int)json_object_size(after), g.hd.ntensors);
    for (int i = 0; i < g.hd.ntensors; i++) {
        const clef_tensor_info *t = &g.hd.tensors[i];
        json_t *want = json_object_get(gl2, t->name);
        cr_assert_not_null(want, "expected.json has no grad_l2 for %s",
                           t->name);
        snprintf(what, sizeof(what), "grad L2 of %s", t->name);
        expect_rel_floor(what, tensor_l2(g.hd.grads + t->offset, t->numel),
                         json_number_value(want), FLT_EPSILON * grad_total);
        json_t *st = json_object_get(after, t->name);
        cr_assert_not_null(st, "expected.json has no after_one_step for %s",
                           t->name);
        snprintf(what, sizeof(what), "sum after one step of %s", t->name);
        expect_rel(what, tensor_sum(g.hd.params + t->offset, t->numel),
                   json_number_value(json_object_get(st, "sum")));
        snprintf(what, sizeof(what), "L2 after one step of %s", t->name);
        expect_rel(what, tensor_l2(g.hd.params + t->offset, t->numel),
                   json_number_value(json_object_get(st, "l2")));
    }
    expect_rel("grad L2 total", clef_grad_norm(&g.hd),
               json_number_value(json_object_get(g.expected, "grad_l2_total")));
    fprintf(stderr,
            "[golden] worst relative error against expected.json: %.3g\n",
            worst_rel);
    golden_free(&g);
}

Test(golden, logits_probabilities_loss_grads_and_one_adamw_step)
{
    golden_full("auto");
}

// The same with the memory attentions forced into each form.
Test(golden, memory_attention_projected)
{
    golden_full("project");
}
Test(golden, memory_attention_absorbed)
{
    golden_full("absorb");
}

// The intermediates of expected.json pin each stage of the forward pass, so a
// disagreement says where it starts.
Test(golden, intermediates)
{
    golden g = {0};
    golden_load(&g);
    const clef_record *r = &g.pkg.records[0];
    float z[16];
    clef_head_forward(&clef_scalar_kernels, &g.hd, r, g.ws, z);
    json_t *im = json_object_get(g.expected, "intermediates");
    cr_assert_not_null(im);
    // expose the workspace through the forward's outputs we can reach:
    // recompute g, M[0], qv[0], lex[0] from the record and parameters
    const int d = g.hd.cfg.d, w = g.hd.cfg.w, T = r->T;
    float gv[64], m0[64], qv0[64];
    cr_assert(d <= 64 && w <= 64);
    for (int i = 0; i < d; i++) {
        gv[i] =
            r->xhat[(size_t)(T - 1) * d + i] * g.hd.p.hn_w[i] + g.hd.p.hn_b[i];
        qv0[i] = r->qvhat[i] * g.hd.p.hn_w[i] + g.hd.p.hn_b[i];
    }
    for (int j = 0; j < w; j++) {
        double s = 0;
        for (int i = 0; i < d; i++)
            s += (double)(r->xhat[i] * g.hd.p.hn_w[i] + g.hd.p.hn_b[i]) *
                 g.hd.p.W_m[(size_t)j * d + i];
        m0[j] = (float)s;
    }
    struct {
        const char *key;
        const float *got;
        int n;
    } checks[] = {
        {"g = X[T-1]", gv, d},
        {"M[0]", m0, w},
        {"qv[0]", qv0, d},
        {"lex[0]", r->lex, d},
    };
    for (size_t c = 0; c < sizeof(checks) / sizeof(checks[0]); c++) {
        json_t *want = json_object_get(im, checks[c].key);
        cr_assert_not_null(want, "no intermediate %s", checks[c].key);
        for (int i = 0; i < checks[c].n; i++) {
            double wv = json_number_value(json_array_get(want, i));
            double err = fabs(checks[c].got[i] - wv);
            cr_expect(err <= REL_TOL * fmax(fabs(wv), 1e-3),
                      "%s[%d]: got %.9g want %.9g", checks[c].key, i,
                      checks[c].got[i], wv);
        }
    }
    golden_free(&g);
}

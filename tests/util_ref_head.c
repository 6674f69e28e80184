// Double-precision reference of the joint schema head, straight from HEAD.md
// §4 (primitives), §5 (forward) and §6 (loss), plus a random record for tests.
// It shares no code with core/forward.c: tensors are found by name, every
// primitive is written out here in double, libm's erf gives the exact GELU.
#include "ref_head.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "util.h"

#define REF_LN_EPS 1e-5
#define REF_NORMALIZE_EPS 1e-12
#define REF_COSINE_EPS 1e-8

// ---- parameters by name ----

typedef struct ref_params {
    const clef_head *hd;
    const double *p;          // flat, laid out like hd->params
    const clef_dropout *drop; // NULL: no dropout
} ref_params;

// The tensor named by fmt: shape (s0, s1) for a matrix, (s0) with s1 = 0 for a
// vector, s0 = s1 = 0 for a scalar. Aborts on a missing name or wrong shape.
static const double *ten(const ref_params *rp, int s0, int s1, const char *fmt,
                         ...)
{
    char name[2 * CLEF_NAME_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    const clef_head *hd = rp->hd;
    for (int i = 0; i < hd->ntensors; i++) {
        const clef_tensor_info *t = &hd->tensors[i];
        if (strcmp(t->name, name) != 0)
            continue;
        size_t want = s0 == 0 ? 1 : (size_t)s0 * (s1 ? (size_t)s1 : 1);
        int ok = t->numel == want;
        if (s0 && t->shape[0] != s0)
            ok = 0;
        if (s1 && (t->ndim != 2 || t->shape[1] != s1))
            ok = 0;
        if (!ok) {
            fprintf(stderr,
                    "ref_head: tensor %s has shape [%d,%d] (ndim %d), "
                    "expected [%d,%d]\n",
                    name, t->shape[0], t->shape[1], t->ndim, s0, s1);
            abort();
        }
        return rp->p + t->offset;
    }
    fprintf(stderr, "ref_head: tensor %s not found\n", name);
    abort();
}

// ---- primitives (HEAD.md §4), all in double ----

// y (n, out) = x (n, in) Wᵀ + b; W (out, in), b (out) or NULL.
static void linear(int n, int in, int out, const double *x, const double *W,
                   const double *b, double *y)
{
    for (int i = 0; i < n; i++) {
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int k = 0; k < in; k++)
                s += x[(size_t)i * in + k] * W[(size_t)o * in + k];
            y[(size_t)i * out + o] = s;
        }
    }
}

// y (n, w) = LayerNorm rows of x (n, w): biased variance, eps 1e-5.
static void layernorm(int n, int w, const double *x, const double *gamma,
                      const double *beta, double *y)
{
    for (int i = 0; i < n; i++) {
        const double *xr = x + (size_t)i * w;
        double mu = 0.0, var = 0.0;
        for (int k = 0; k < w; k++)
            mu += xr[k];
        mu /= w;
        for (int k = 0; k < w; k++)
            var += (xr[k] - mu) * (xr[k] - mu);
        var /= w;
        double rs = 1.0 / sqrt(var + REF_LN_EPS);
        for (int k = 0; k < w; k++)
            y[(size_t)i * w + k] = gamma[k] * (xr[k] - mu) * rs + beta[k];
    }
}

// Exact GELU: ½x(1 + erf(x/√2)).
static double gelu(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static void gelu_inplace(size_t n, double *x)
{
    for (size_t i = 0; i < n; i++)
        x[i] = gelu(x[i]);
}

// y (n) = softmax(x (n)), max-subtracted.
static void softmax(int n, const double *x, double *y)
{
    double mx = x[0], s = 0.0;
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++)
        s += (y[i] = exp(x[i] - mx));
    for (int i = 0; i < n; i++)
        y[i] /= s;
}

// Dropout of rows [row0, row0 + n) of site (site, layer) on x (n, m) in
// place: x ← x · scale where the mask keeps an element, else 0. A no-op
// without dropout or with site < 0.
static void ref_drop(const ref_params *rp, int site, int layer, int row0, int n,
                     int m, double *x)
{
    const clef_dropout *d = rp->drop;
    if (!d || site < 0 || !(d->p > 0))
        return;
    const uint64_t key = clef_dropout_site(d, site, layer);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            x[(size_t)i * m + j] = clef_dropout_keeps(d, key, 0, row0 + i, j)
                                       ? x[(size_t)i * m + j] * d->scale
                                       : 0.0;
}

// Y (nq, w) = MHA(Xq (nq, w), Xkv (nk, w)) of the module at `prefix`
// (in_proj_weight (3w, w) rows Wq | Wk | Wv, in_proj_bias (3w), out_proj),
// h heads of dh = w / h columns each, scores scaled by 1/√dh, no mask; with
// dropout on the weights at site wsite of layer `layer` (< 0: none), head k's
// row i the mask's row k·nq + i.
static void mha(const ref_params *rp, const char *prefix, int wsite, int layer,
                int nq, int nk, const double *Xq, const double *Xkv, double *Y)
{
    const int w = rp->hd->cfg.w, h = rp->hd->cfg.h, dh = w / h;
    const double *in_w = ten(rp, 3 * w, w, "%sin_proj_weight", prefix);
    const double *in_b = ten(rp, 3 * w, 0, "%sin_proj_bias", prefix);
    const double *out_w = ten(rp, w, w, "%sout_proj.weight", prefix);
    const double *out_b = ten(rp, w, 0, "%sout_proj.bias", prefix);
    double *Qm = clef_test_dalloc((size_t)nq * w); // (nq, w)
    double *Km = clef_test_dalloc((size_t)nk * w); // (nk, w)
    double *Vm = clef_test_dalloc((size_t)nk * w); // (nk, w)
    double *O = clef_test_dalloc((size_t)nq * w);  // (nq, w)
    double *s = clef_test_dalloc(nk), *a = clef_test_dalloc(nk);
    linear(nq, w, w, Xq, in_w, in_b, Qm);
    linear(nk, w, w, Xkv, in_w + (size_t)w * w, in_b + w, Km);
    linear(nk, w, w, Xkv, in_w + (size_t)2 * w * w, in_b + 2 * w, Vm);
    const double scale = 1.0 / sqrt((double)dh);
    for (int k = 0; k < h; k++) {
        const int c0 = k * dh;
        for (int i = 0; i < nq; i++) {
            for (int j = 0; j < nk; j++) {
                double dot = 0.0;
                for (int c = c0; c < c0 + dh; c++)
                    dot += Qm[(size_t)i * w + c] * Km[(size_t)j * w + c];
                s[j] = dot * scale;
            }
            softmax(nk, s, a);
            ref_drop(rp, wsite, layer, k * nq + i, 1, nk, a);
            for (int c = c0; c < c0 + dh; c++) {
                double acc = 0.0;
                for (int j = 0; j < nk; j++)
                    acc += a[j] * Vm[(size_t)j * w + c];
                O[(size_t)i * w + c] = acc;
            }
        }
    }
    linear(nq, w, w, O, out_w, out_b, Y);
    free(Qm), free(Km), free(Vm), free(O), free(s), free(a);
}

// x (n, w) += y (n, w)
static void add_inplace(size_t n, double *x, const double *y)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

// out (d) = mean of rows [s, e) of x (·, d).
static void span_mean(const double *x, int d, int s, int e, double *out)
{
    for (int k = 0; k < d; k++)
        out[k] = 0.0;
    for (int t = s; t < e; t++)
        for (int k = 0; k < d; k++)
            out[k] += x[(size_t)t * d + k];
    for (int k = 0; k < d; k++)
        out[k] /= (e - s);
}

static double norm2(int n, const double *x)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

// κ(s) = exp(min(s, ln 100)); σ(x) = 1/(1 + e^−x).
static double kappa(double s)
{
    return exp(fmin(s, log(100.0)));
}
static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

// ---- forward (HEAD.md §5) ----

// Step 5: one routing layer, R (O, w) updated in place; memory M (T, w).
static void routing_layer(const ref_params *rp, int i, int O, int T,
                          const double *M, double *R)
{
    const int w = rp->hd->cfg.w, f = rp->hd->cfg.f;
    char pre[CLEF_NAME_MAX];
    snprintf(pre, sizeof(pre), "evidence_layers.%d.", i);
    double *Mt = clef_test_dalloc((size_t)T * w); // memory_norm(M) (T, w)
    double *Qn = clef_test_dalloc((size_t)O * w); // query_norm(R)  (O, w)
    double *A = clef_test_dalloc((size_t)O * w);  // MHA            (O, w)
    double *H1 = clef_test_dalloc((size_t)O * f); // FFN hidden     (O, f)
    layernorm(T, w, M, ten(rp, w, 0, "%smemory_norm.weight", pre),
              ten(rp, w, 0, "%smemory_norm.bias", pre), Mt);
    layernorm(O, w, R, ten(rp, w, 0, "%squery_norm.weight", pre),
              ten(rp, w, 0, "%squery_norm.bias", pre), Qn);
    char att[2 * CLEF_NAME_MAX];
    snprintf(att, sizeof(att), "%sattention.", pre);
    mha(rp, att, -1, i, O, T, Qn, Mt, A);
    ref_drop(rp, CLEF_DROP_ROUTE_ATT_OUT, i, 0, O, w, A);
    add_inplace((size_t)O * w, R, A); // R' (O, w)
    layernorm(O, w, R, ten(rp, w, 0, "%sfeedforward_norm.weight", pre),
              ten(rp, w, 0, "%sfeedforward_norm.bias", pre), Qn);
    linear(O, w, f, Qn, ten(rp, f, w, "%sfeedforward.0.weight", pre),
           ten(rp, f, 0, "%sfeedforward.0.bias", pre), H1);
    gelu_inplace((size_t)O * f, H1);
    ref_drop(rp, CLEF_DROP_ROUTE_FFN_IN, i, 0, O, f, H1);
    linear(O, f, w, H1, ten(rp, w, f, "%sfeedforward.3.weight", pre),
           ten(rp, w, 0, "%sfeedforward.3.bias", pre), A);
    ref_drop(rp, CLEF_DROP_ROUTE_FFN_OUT, i, 0, O, w, A);
    add_inplace((size_t)O * w, R, A);
    free(Mt), free(Qn), free(A), free(H1);
}

// Step 8: one pre-norm field layer, F (Q, w) updated in place; raw M (T, w).
static void field_layer(const ref_params *rp, int j, int Q, int T,
                        const double *M, double *F)
{
    const int w = rp->hd->cfg.w, f = rp->hd->cfg.f;
    char pre[CLEF_NAME_MAX], mod[2 * CLEF_NAME_MAX];
    snprintf(pre, sizeof(pre), "layers.%d.", j);
    double *N = clef_test_dalloc((size_t)Q * w);  // normed stream (Q, w)
    double *Y = clef_test_dalloc((size_t)Q * w);  // sublayer out  (Q, w)
    double *H1 = clef_test_dalloc((size_t)Q * f); // FFN hidden    (Q, f)
    layernorm(Q, w, F, ten(rp, w, 0, "%snorm1.weight", pre),
              ten(rp, w, 0, "%snorm1.bias", pre), N);
    snprintf(mod, sizeof(mod), "%sself_attn.", pre);
    mha(rp, mod, CLEF_DROP_FIELD_SA_W, j, Q, Q, N, N, Y);
    ref_drop(rp, CLEF_DROP_FIELD_SA_OUT, j, 0, Q, w, Y);
    add_inplace((size_t)Q * w, F, Y);
    layernorm(Q, w, F, ten(rp, w, 0, "%snorm2.weight", pre),
              ten(rp, w, 0, "%snorm2.bias", pre), N);
    snprintf(mod, sizeof(mod), "%smultihead_attn.", pre);
    mha(rp, mod, CLEF_DROP_FIELD_CA_W, j, Q, T, N, M, Y);
    ref_drop(rp, CLEF_DROP_FIELD_CA_OUT, j, 0, Q, w, Y);
    add_inplace((size_t)Q * w, F, Y);
    layernorm(Q, w, F, ten(rp, w, 0, "%snorm3.weight", pre),
              ten(rp, w, 0, "%snorm3.bias", pre), N);
    linear(Q, w, f, N, ten(rp, f, w, "%slinear1.weight", pre),
           ten(rp, f, 0, "%slinear1.bias", pre), H1);
    gelu_inplace((size_t)Q * f, H1);
    ref_drop(rp, CLEF_DROP_FIELD_FFN_IN, j, 0, Q, f, H1);
    linear(Q, f, w, H1, ten(rp, w, f, "%slinear2.weight", pre),
           ten(rp, w, 0, "%slinear2.bias", pre), Y);
    ref_drop(rp, CLEF_DROP_FIELD_FFN_OUT, j, 0, Q, w, Y);
    add_inplace((size_t)Q * w, F, Y);
    free(N), free(Y), free(H1);
}

// Step 6: S (Q, w) = Σ_{o∈q} α_o R_o, α = softmax over q's options of
// R_o · B_q / √w.
static void summary(const clef_record *r, int w, const double *R,
                    const double *B, double *S)
{
    for (int q = 0; q < r->Q; q++) {
        const int o0 = r->opt_off[q], n = r->opt_off[q + 1] - o0;
        double *s = clef_test_dalloc(n), *a = clef_test_dalloc(n);
        for (int i = 0; i < n; i++) {
            double dot = 0.0;
            for (int k = 0; k < w; k++)
                dot += R[(size_t)(o0 + i) * w + k] * B[(size_t)q * w + k];
            s[i] = dot / sqrt((double)w);
        }
        softmax(n, s, a);
        for (int k = 0; k < w; k++) {
            double acc = 0.0;
            for (int i = 0; i < n; i++)
                acc += a[i] * R[(size_t)(o0 + i) * w + k];
            S[(size_t)q * w + k] = acc;
        }
        free(s), free(a);
    }
}

// Step 9: the logit of one option from f = F̂_q (w), n = option_norm(R_o)
// (w) and prior (its prior term, already scaled); *cos_out, *res_out get the
// cosine and the residual scorer's output. o: the option (its dropout row).
static double score_option(const ref_params *rp, int o, const double *f,
                           const double *n, double prior, double *cos_out,
                           double *res_out)
{
    const int w = rp->hd->cfg.w;
    const double *W0 = ten(rp, w, 4 * w, "residual_scorer.0.weight");
    const double *b0 = ten(rp, w, 0, "residual_scorer.0.bias");
    const double *W3 = ten(rp, 1, w, "residual_scorer.3.weight");
    const double *b3 = ten(rp, 1, 0, "residual_scorer.3.bias");
    const double s_j = *ten(rp, 0, 0, "joint_logit_scale");
    const double gate = *ten(rp, 0, 0, "residual_gate");
    double *feat = clef_test_dalloc((size_t)4 * w); // [f; n; f⊙n; |f−n|]
    double *v = clef_test_dalloc(w);
    for (int k = 0; k < w; k++) {
        feat[k] = f[k];
        feat[w + k] = n[k];
        feat[2 * w + k] = f[k] * n[k];
        feat[3 * w + k] = fabs(f[k] - n[k]);
    }
    linear(1, 4 * w, w, feat, W0, b0, v);
    gelu_inplace(w, v);
    ref_drop(rp, CLEF_DROP_SCORER, 0, o, 1, w, v);
    double res = b3[0];
    for (int k = 0; k < w; k++)
        res += W3[k] * v[k];
    double nf = fmax(norm2(w, f), REF_COSINE_EPS);
    double nn = fmax(norm2(w, n), REF_COSINE_EPS);
    double cos = 0.0;
    for (int k = 0; k < w; k++)
        cos += (f[k] / nf) * (n[k] / nn);
    free(feat), free(v);
    *cos_out = cos, *res_out = res;
    return prior + sigmoid(gate) * (kappa(s_j) * cos + res);
}

// ---- loss (HEAD.md §6) ----

// One question's share: z (n) its logits, y (n) its target.
static double question_loss(int n, const double *z, const double *y,
                            int is_score, const clef_ref_loss_opts *o)
{
    double mx = z[0], se = 0.0;
    for (int i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    for (int i = 0; i < n; i++)
        se += exp(z[i] - mx);
    const double lse = mx + log(se);
    double ce = 0.0, brier = 0.0, ord = 0.0;
    for (int i = 0; i < n; i++) {
        double logp = z[i] - lse, p = exp(logp);
        double ys = (1.0 - o->smoothing) * y[i] + o->smoothing / n;
        ce -= ys * logp;
        brier += (p - y[i]) * (p - y[i]);
        for (int j = 0; j < n; j++)
            ord += p * fabs((double)(i - j)) * y[j];
    }
    double loss = (ce + o->brier * brier) / o->n_q;
    if (is_score && o->n_score > 0 && o->ordinal != 0.0)
        loss += o->ordinal * ord / (n > 1 ? n - 1 : 1) / o->n_score;
    return loss;
}

// ---- the whole head ----

// dst (n) = src (n) when dst is not NULL.
static void trace_copy(double *dst, const double *src, int n)
{
    if (dst)
        memcpy(dst, src, sizeof(double) * n);
}

double clef_ref_head_loss(const clef_head *hd, const double *params,
                          const clef_record *r, const float *E, int V,
                          const clef_ref_loss_opts *o, double *logits)
{
    return clef_ref_head_loss_trace(hd, params, r, E, V, o, logits, NULL);
}

double clef_ref_head_loss_trace(const clef_head *hd, const double *params,
                                const clef_record *r, const float *E, int V,
                                const clef_ref_loss_opts *o, double *logits,
                                clef_ref_trace *tr)
{
    clef_ref_trace none = {0};
    if (!tr)
        tr = &none;
    const ref_params rp = {hd, params, o->drop};
    const int d = hd->cfg.d, w = hd->cfg.w, R_ = hd->cfg.R, L = hd->cfg.L;
    const int T = r->T, Q = r->Q, O = r->O;
    if (r->d != d) {
        fprintf(stderr, "ref_head: record width %d != hidden_size %d\n", r->d,
                d);
        abort();
    }
    double *X = clef_test_dalloc((size_t)T * d);   // (T, d)
    double *M = clef_test_dalloc((size_t)T * w);   // (T, w)
    double *qv = clef_test_dalloc((size_t)Q * d);  // (Q, d)
    double *ctx = clef_test_dalloc((size_t)O * d); // (O, d)
    double *lex = clef_test_dalloc((size_t)O * d); // (O, d)
    double *Rs = clef_test_dalloc((size_t)O * w);  // option states (O, w)
    double *tmp = clef_test_dalloc((size_t)(O > Q ? O : Q) * w);
    double *B = clef_test_dalloc((size_t)Q * w);  // (Q, w)
    double *S = clef_test_dalloc((size_t)Q * w);  // (Q, w)
    double *F = clef_test_dalloc((size_t)Q * w);  // (Q, w)
    double *Nn = clef_test_dalloc((size_t)O * w); // option_norm(R) (O, w)
    double *z = clef_test_dalloc(O);              // (O)
    double *gw = clef_test_dalloc(w);             // W_g g (w)
    double *an = clef_test_dalloc(d);             // qv_q + g (d)
    int *owner = clef_test_ialloc(O);
    for (int q = 0; q < Q; q++)
        for (int i = r->opt_off[q]; i < r->opt_off[q + 1]; i++)
            owner[i] = q;

    // 1. X = LN_hidden_norm(H); M = X W_mᵀ
    double *Hd = clef_test_dalloc((size_t)T * d);
    clef_test_to_double(r->H, Hd, (size_t)T * d);
    layernorm(T, d, Hd, ten(&rp, d, 0, "hidden_norm.weight"),
              ten(&rp, d, 0, "hidden_norm.bias"), X);
    free(Hd);
    linear(T, d, w, X, ten(&rp, w, d, "memory_projection.weight"), NULL, M);
    // 2-3. question vectors, option contexts, global vector, lexical means
    for (int q = 0; q < Q; q++)
        span_mean(X, d, r->qspan[2 * q], r->qspan[2 * q + 1],
                  qv + (size_t)q * d);
    for (int i = 0; i < O; i++)
        span_mean(X, d, r->ospan[2 * i], r->ospan[2 * i + 1],
                  ctx + (size_t)i * d);
    const double *g = X + (size_t)(T - 1) * d;
    for (int i = 0; i < O; i++) {
        double *li = lex + (size_t)i * d;
        if (!E) {
            clef_test_to_double(r->lex + (size_t)i * d, li, d);
            continue;
        }
        const int s = r->ospan[2 * i], e = r->ospan[2 * i + 1];
        for (int t = s; t < e; t++) {
            if (r->ids[t] < 0 || r->ids[t] >= V) {
                fprintf(stderr, "ref_head: id %d outside [0, %d)\n", r->ids[t],
                        V);
                abort();
            }
            for (int k = 0; k < d; k++)
                li[k] += E[(size_t)r->ids[t] * d + k];
        }
        for (int k = 0; k < d; k++)
            li[k] /= (e - s);
    }
    // 4. R⁰ = W_c ctx + W_l lex + W_oq qv_owner
    linear(O, d, w, ctx, ten(&rp, w, d, "option_context_projection.weight"),
           NULL, Rs);
    linear(O, d, w, lex, ten(&rp, w, d, "option_lexical_projection.weight"),
           NULL, tmp);
    add_inplace((size_t)O * w, Rs, tmp);
    const double *Woq = ten(&rp, w, d, "option_question_projection.weight");
    for (int i = 0; i < O; i++) {
        linear(1, d, w, qv + (size_t)owner[i] * d, Woq, NULL, tmp);
        add_inplace(w, Rs + (size_t)i * w, tmp);
    }
    trace_copy(tr->g, g, d), trace_copy(tr->M0, M, w);
    trace_copy(tr->qv0, qv, d), trace_copy(tr->lex0, lex, d);
    trace_copy(tr->R0_0, Rs, w);
    // 5. evidence routing
    for (int i = 0; i < R_; i++)
        routing_layer(&rp, i, O, T, M, Rs);
    trace_copy(tr->R_0, Rs, w);
    // 6. summary over each question's options
    linear(Q, d, w, qv, ten(&rp, w, d, "question_projection.weight"), NULL, B);
    summary(r, w, Rs, B, S);
    // 7. F = B + LN_option_summary_norm(S) + W_g g + type_embedding[type]
    layernorm(Q, w, S, ten(&rp, w, 0, "option_summary_norm.weight"),
              ten(&rp, w, 0, "option_summary_norm.bias"), F);
    add_inplace((size_t)Q * w, F, B);
    linear(1, d, w, g, ten(&rp, w, d, "global_projection.weight"), NULL, gw);
    const double *temb = ten(&rp, 3, w, "type_embedding.weight");
    for (int q = 0; q < Q; q++) {
        add_inplace(w, F + (size_t)q * w, gw);
        add_inplace(w, F + (size_t)q * w, temb + (size_t)r->qtype[q] * w);
    }
    // 8. field layers, then field_norm
    for (int j = 0; j < L; j++)
        field_layer(&rp, j, Q, T, M, F);
    layernorm(Q, w, F, ten(&rp, w, 0, "field_norm.weight"),
              ten(&rp, w, 0, "field_norm.bias"), tmp); // F̂ (Q, w)
    trace_copy(tr->Fhat0, tmp, w);
    // 9. scoring
    layernorm(O, w, Rs, ten(&rp, w, 0, "option_norm.weight"),
              ten(&rp, w, 0, "option_norm.bias"), Nn);
    const double kp = kappa(*ten(&rp, 0, 0, "prior_logit_scale"));
    for (int i = 0; i < O; i++) {
        const int q = owner[i];
        for (int k = 0; k < d; k++)
            an[k] = qv[(size_t)q * d + k] + g[k];
        double nl = fmax(norm2(d, lex + (size_t)i * d), REF_NORMALIZE_EPS);
        double na = fmax(norm2(d, an), REF_NORMALIZE_EPS);
        double prior = 0.0;
        for (int k = 0; k < d; k++)
            prior += (lex[(size_t)i * d + k] / nl) * (an[k] / na);
        double cos, res;
        z[i] = score_option(&rp, i, tmp + (size_t)q * w, Nn + (size_t)i * w,
                            kp * prior, &cos, &res);
        if (tr->prior)
            tr->prior[i] = kp * prior;
        if (tr->cos)
            tr->cos[i] = cos;
        if (tr->res)
            tr->res[i] = res;
    }
    // 10. loss over questions with a target
    double loss = 0.0;
    for (int q = 0; q < Q; q++) {
        if (!r->has_target[q])
            continue;
        const int o0 = r->opt_off[q], n = r->opt_off[q + 1] - o0;
        double *y = clef_test_dalloc(n);
        clef_test_to_double(r->target + o0, y, n);
        loss += question_loss(n, z + o0, y, r->qtype[q] == CLEF_QTYPE_SCORE, o);
        free(y);
    }
    if (logits)
        memcpy(logits, z, sizeof(double) * O);
    free(X), free(M), free(qv), free(ctx), free(lex), free(Rs), free(tmp);
    free(B), free(S), free(F), free(Nn), free(z), free(gw), free(an);
    free(owner);
    return loss;
}

// ---- a random record ----

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (!c)
        abort();
    memcpy(c, s, n);
    return c;
}

// A random half-open span [s, e) of [0, T) with length in [1, T].
static void random_span(int T, uint64_t *rng, int *span)
{
    int len = clef_test_rand_int(rng, 1, T);
    int s = clef_test_rand_int(rng, 0, T - len);
    span[0] = s;
    span[1] = s + len;
}

void clef_test_random_record(clef_record *r, int T, int d, int Q,
                             const int *qtype, const int *nopt, const int *soft,
                             int V, uint64_t *rng)
{
    memset(r, 0, sizeof(*r));
    int O = 0;
    for (int q = 0; q < Q; q++)
        O += nopt[q];
    r->id = dup_str("random-0");
    r->split = CLEF_SPLIT_TRAIN;
    r->T = T, r->d = d, r->Q = Q, r->O = O;
    r->H = clef_test_falloc((size_t)T * d);
    for (int t = 0; t < T; t++) {
        // rows with their own offset and scale: LayerNorm must centre them
        float mu = (float)(clef_test_rand_unit(rng) * 2 - 1);
        float sd = (float)(0.5 + clef_test_rand_unit(rng));
        clef_test_fill_normal(r->H + (size_t)t * d, d, mu, sd, rng);
    }
    r->ids = clef_test_ialloc(T);
    for (int t = 0; t < T; t++)
        r->ids[t] = clef_test_rand_int(rng, 0, V - 1);
    r->qtype = clef_test_ialloc(Q);
    r->qspan = clef_test_ialloc((size_t)2 * Q);
    r->opt_off = clef_test_ialloc(Q + 1);
    r->has_target = clef_test_ialloc(Q);
    r->label = clef_test_ialloc(Q);
    r->ospan = clef_test_ialloc((size_t)2 * O);
    r->target = clef_test_falloc(O);
    for (int q = 0; q < Q; q++) {
        r->qtype[q] = qtype[q];
        random_span(T, rng, r->qspan + 2 * q);
        r->opt_off[q + 1] = r->opt_off[q] + nopt[q];
        r->has_target[q] = 1;
        float *y = r->target + r->opt_off[q];
        if (soft[q]) {
            r->label[q] = -1;
            double s = 0.0;
            for (int i = 0; i < nopt[q]; i++)
                s += (y[i] = (float)(0.1 + clef_test_rand_unit(rng)));
            for (int i = 0; i < nopt[q]; i++)
                y[i] = (float)(y[i] / s);
        } else {
            r->label[q] = clef_test_rand_int(rng, 0, nopt[q] - 1);
            y[r->label[q]] = 1.f;
        }
    }
    for (int i = 0; i < O; i++)
        random_span(T, rng, r->ospan + 2 * i);
    // the edge cases: a span that ends at T, a span over the whole record
    int len = clef_test_rand_int(rng, 1, T);
    r->qspan[0] = T - len, r->qspan[1] = T;
    r->ospan[0] = 0, r->ospan[1] = T;
}

void clef_test_batch_init(clef_test_batch *b, const clef_config *cfg,
                          uint64_t seed, const clef_test_batch_spec *spec)
{
    memset(b, 0, sizeof(*b));
    cr_assert_leq(spec->n, CLEF_TEST_BATCH_MAX);
    b->cfg = *cfg;
    b->n = spec->n;
    clef_err err = {0};
    cr_assert_eq(clef_head_alloc(&b->hd, &b->cfg, &err), 0, "%s", err.msg);
    clef_head_init_random(&b->hd, seed);
    uint64_t rng = seed * spec->rng_mul + spec->rng_add;
    // off the init values (LayerNorms, zero biases, scalars)
    for (size_t i = 0; i < b->hd.nparams; i++)
        b->hd.params[i] += 0.05f * (float)(clef_test_rand_unit(&rng) - 0.5);
    b->V = spec->V;
    b->E = clef_test_falloc((size_t)b->V * b->cfg.d);
    clef_test_fill_normal(b->E, (size_t)b->V * b->cfg.d, 0.f, 1.f, &rng);
    for (int i = 0; i < b->n; i++) {
        int soft[4] = {i & 1, 0, 1, 0};
        clef_test_random_record(&b->recs[i], spec->T[i], b->cfg.d, spec->Q[i],
                                spec->types[i], spec->nopt[i], soft, b->V,
                                &rng);
        cr_assert_eq(clef_record_prepare(&clef_scalar_kernels, &b->recs[i],
                                         b->E, b->V, &err),
                     0, "%s", err.msg);
        b->ptr[i] = &b->recs[i];
    }
}

clef_train_opts clef_test_train_opts(void)
{
    clef_train_opts o;
    clef_train_opts_default(&o);
    o.lr = 1e-2;
    o.smoothing = 0.1;
    o.brier = 0.25;
    o.ordinal = 0.3;
    return o;
}

void clef_test_batch_free(clef_test_batch *b)
{
    for (int i = 0; i < b->n; i++)
        clef_record_free(&b->recs[i]);
    free(b->E);
    clef_head_free(&b->hd);
}

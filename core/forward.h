// Helpers shared by the forward and backward passes (private to core/): a
// few building blocks, and a layer's tensors and saved activations as small
// structs, built from the head's clef_route_tensors / clef_field_tensors
// (params or grads: the same layout) and the workspace's route_acts /
// field_acts.
#ifndef CLEF_FORWARD_H
#define CLEF_FORWARD_H

#include "acts.h"
#include "dropout.h"
#include "head.h"
#include "kernels.h"
#include "memattn.h"

// y (rows, out) = x (rows, in) Wᵀ (out, in) + b (out); b may be NULL.
void clef_linear_fwd(const clef_kernels *k, int rows, int out, int in,
                     const float *x, const float *W, const float *b, float *y);
// κ(s) = exp(min(s, ln 100)); σ(x) = 1 / (1 + e^−x)
float clef_kappa(float s);
float clef_sigmoid(float x);
#define CLEF_LN100 4.605170185988091f

// ---- a layer's tensors: params, or their grads ----

// A LayerNorm's γ, β (n) each. LN(t, name) is the one a tensors struct
// names name_w, name_b: LN(p, n2) = {p->n2_w, p->n2_b}.
typedef struct ln_tensors {
    float *w, *b;
} ln_tensors;
#define LN(t, name) ((ln_tensors){(t)->name##_w, (t)->name##_b})

// out = x + W₂ gelu(W₁ LN(x) + b₁) + b₂: W₁ (f, w), b₁ (f), W₂ (w, f),
// b₂ (w).
typedef struct ffn_tensors {
    ln_tensors ln;
    float *w1, *b1, *w2, *b2;
} ffn_tensors;

// An attention's in_proj (3w, w), (3w) and out_proj (w, w), (w).
typedef struct mha_tensors {
    clef_inproj in;
    float *out_w, *out_b;
} mha_tensors;

static inline ffn_tensors route_ffn(const clef_route_tensors *t)
{
    return (ffn_tensors){LN(t, fn), t->ff1_w, t->ff1_b, t->ff2_w, t->ff2_b};
}

static inline ffn_tensors field_ffn(const clef_field_tensors *t)
{
    return (ffn_tensors){LN(t, n3), t->l1_w, t->l1_b, t->l2_w, t->l2_b};
}

static inline mha_tensors route_mha(const clef_route_tensors *t)
{
    return (mha_tensors){{t->in_w, t->in_b}, t->out_w, t->out_b};
}

static inline mha_tensors field_sa(const clef_field_tensors *t) // self-attn
{
    return (mha_tensors){{t->sa_in_w, t->sa_in_b}, t->sa_out_w, t->sa_out_b};
}

static inline mha_tensors field_ca(const clef_field_tensors *t) // cross-attn
{
    return (mha_tensors){{t->ca_in_w, t->ca_in_b}, t->ca_out_w, t->ca_out_b};
}

// ---- a layer's saved activations ----

// A feed-forward block's: LN(x) (rows, w), h1 = W₁ LN(x) + b₁ and
// u = gelu(h1) (rows, f).
typedef struct ffn_acts {
    ln_acts ln;
    float *h1, *u;
} ffn_acts;

static inline ffn_acts route_ffn_acts(const route_acts *a)
{
    return (ffn_acts){a->fn, a->h1, a->u};
}

static inline ffn_acts field_ffn_acts(const field_acts *a)
{
    return (ffn_acts){a->n3, a->h1, a->u};
}

// ---- dropout (core/dropout.h) ----

// One dropout site over rows grouped by record (nb records, rows
// [off[b], off[b+1]) of record b): off when !clef_dropout_on(d).
typedef struct drop_rows {
    const clef_dropout *d;
    uint64_t site;
    int nb;
    const int *off;
} drop_rows;

// A feed-forward block's two sites: after the GELU (in) and on its output
// before the residual add (out); t (rows, w) is the output's scratch.
typedef struct ffn_drop {
    drop_rows in, out;
    float *t;
} ffn_drop;

// Site `site` of layer `layer` (dropout.h) over rows grouped by record at
// off, in the workspace's current dropout state: d NULL when off.
drop_rows clef_drop_at(const clef_ws *ws, int site, int layer, const int *off);
// A feed-forward's sites in_site and out_site of layer `layer`.
ffn_drop clef_ffn_drop(const clef_ws *ws, int in_site, int out_site, int layer,
                       const int *off);

// Dropout on one record's attention weights: record b of the sub-batch.
typedef struct clef_att_drop {
    const clef_dropout *d;
    uint64_t site;
    int b;
} clef_att_drop;

// Attention as the attention_fwd / attention_bwd kernels compute it (the
// same arguments) with dropout on the weights (core/attention_dropout.c).
// Scratch: nq·nk floats forward, 2·nq·nk backward.
void clef_attention_drop_fwd(const clef_kernels *k, const clef_att_drop *ad,
                             int nq, int nk, int heads, int dh, const float *Q,
                             int ldq, const float *K, int ldk, const float *V,
                             int ldv, float *A, float *O, int ldo, float *scr);
void clef_attention_drop_bwd(const clef_kernels *k, const clef_att_drop *ad,
                             int nq, int nk, int heads, int dh, const float *Q,
                             int ldq, const float *K, int ldk, const float *V,
                             int ldv, const float *A, const float *dO, int lddo,
                             float *dQ, int lddq, float *dK, int lddk,
                             float *dV, int lddv, float *scr);

// Which rows of the batch a per-record attention sees: queries from
// q_off[b], keys from k_off[b], maps at m_off[b].
typedef struct att_rows {
    const int *q_off, *k_off;
    const size_t *m_off;
} att_rows;

// A memory attention over the batch as the forward pass saves it (nb
// records, width w, h heads): queries q (nq, w), K | V in kv (nk, ldkv: K
// in the first w columns, V in the next w), the probabilities att (h·maps),
// the output o (nq, w). When absorbed, ab is its absorbed form (the same q
// and att; no K | V: core/memattn.h). Dropout: on the output (out, rows
// q_off, scratch dt (nq, w)) and, when weights_on, on the weights (site
// weights, scratch wscr: 2·nq_b·nk_b floats for record b at 2·m_off[b];
// never with the absorbed form).
typedef struct mha_view {
    int nb, w, h;
    att_rows rows;
    float *q, *kv, *att, *o;
    int ldkv;
    int absorbed;
    clef_mem_absorb ab;
    drop_rows out;
    float *dt;
    int weights_on;
    uint64_t weights;
    float *wscr;
} mha_view;

// Routing layer i's attention over memory_norm(M), and field layer j's
// cross-attention over M (their K | V: layer j's columns of ws->kvc).
// (*v filled in place: a returned view was a 300-byte rep movs per call.)
void clef_route_view(mha_view *v, const clef_ws *ws, int i);
void clef_field_view(mha_view *v, const clef_ws *ws, int j);

#endif

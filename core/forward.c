// The head's forward pass (HEAD.md §5) for a packed batch of records, on
// any backend. Every activation the backward pass needs is saved in the
// workspace. Row-wise ops run once over all the batch's rows; attention and
// the per-question softmaxes run per record.
#include "acts.h"
#include "batch.h"
#include "forward.h"
#include "memattn.h"
#include "mm.h"
#include "par.h"
#include "rows.h"

#include <math.h>
#include <string.h>

// ---- building blocks, shared with backward.c ----

// y (rows, out) = x (rows, in) Wᵀ (out, in) + b (out); b may be NULL.
void clef_linear_fwd(const clef_kernels *k, int rows, int out, int in,
                     const float *x, const float *W, const float *b, float *y)
{
    clef_mm_nt(k, rows, out, in, x, in, W, in, y, out, 0);
    if (b)
        clef_rows_bias_add(k, rows, out, b, y);
}

// a (rows, n) = LayerNorm p of x (rows, n), with x̂ and 1/σ saved.
static void ln_fwd(const clef_kernels *k, int rows, int n, const float *x,
                   ln_tensors p, const ln_acts *a)
{
    clef_rows_layernorm_fwd(k, rows, n, x, p.w, p.b, a->y, a->xhat, a->rstd);
}

// One row: y (n) = x (n) ⊙ γ + β. omp simd: -O2's cheap vectorizer leaves
// this loop scalar.
static void affine_row(int n, const float *restrict x,
                       const float *restrict gamma, const float *restrict beta,
                       float *restrict y)
{
#pragma omp simd
    for (int i = 0; i < n; i++)
        y[i] = x[i] * gamma[i] + beta[i];
}

// y (rows, n) = x̂ ⊙ γ + β: the hidden_norm of frozen, pre-normalised rows.
static void affine_rows(int rows, int n, const float *xhat, const float *gamma,
                        const float *beta, float *y)
{
    CLEF_PAR_FOR((size_t)rows * n > (1 << 16), int, r, rows,
        affine_row(n, xhat + (size_t)r * n, gamma, beta, y + (size_t)r * n);
    );
}

// The same from a bf16 row of x̂ (exact in float).
static void affine_row16(int n, const uint16_t *restrict x,
                         const float *restrict gamma,
                         const float *restrict beta, float *restrict y)
{
#pragma omp simd
    for (int i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)x[i] << 16;
        float v;
        memcpy(&v, &u, sizeof(v));
        y[i] = v * gamma[i] + beta[i];
    }
}

// X (T, d) = x̂ ⊙ γ + β over the batch's memory rows, each read from its
// record (ws->xrec, or ws->xrec16 for a record kept in bf16).
static void affine_memory(const clef_ws *ws, const float *gamma,
                          const float *beta, float *X)
{
    const int d = ws->cfg.d;
    CLEF_PAR_FOR((size_t)ws->T * d > (1 << 16), int, r, ws->T,
        int b = 0;
        while (ws->t_off[b + 1] <= r)
            b++;
        const size_t row = (size_t)(r - ws->t_off[b]) * d;
        if (ws->xrec16[b])
            affine_row16(d, ws->xrec16[b] + row, gamma, beta,
                         X + (size_t)r * d);
        else
            affine_row(d, ws->xrec[b] + row, gamma, beta, X + (size_t)r * d);
    );
}

// One record's attention (the attention_fwd kernel's arguments), with
// dropout on its weights when ad is non-NULL (scratch scr, nq·nk floats).
static void record_attention_fwd(const clef_kernels *k, const clef_att_drop *ad,
                                 int nq, int nk, int h, int dh, const float *Q,
                                 int ldq, const float *K, int ldk,
                                 const float *V, int ldv, float *A, float *O,
                                 int ldo, float *scr)
{
    if (ad)
        clef_attention_drop_fwd(k, ad, nq, nk, h, dh, Q, ldq, K, ldk, V, ldv, A,
                                O, ldo, scr);
    else
        k->attention_fwd(nq, nk, h, dh, Q, ldq, K, ldk, V, ldv, A, O, ldo);
}

// K | V attention of each record over its own rows (project form): o from
// v->q and v->kv, the maps into v->att. Records are independent: one thread
// per record when several.
static void attention_records(const clef_kernels *k, const mha_view *v)
{
    const int w = v->w, h = v->h, ldkv = v->ldkv;
    const att_rows *ar = &v->rows;
    CLEF_PAR_FOR(v->nb > 1, int, b, v->nb,
        const int q0 = ar->q_off[b], k0 = ar->k_off[b];
        const float *kvb = v->kv + (size_t)k0 * ldkv;
        const clef_att_drop ad = {v->out.d, v->weights, b};
        record_attention_fwd(k, v->weights_on ? &ad : NULL,
                             ar->q_off[b + 1] - q0, ar->k_off[b + 1] - k0, h,
                             w / h, v->q + (size_t)q0 * w, w, kvb, ldkv,
                             kvb + w, ldkv, v->att + h * ar->m_off[b],
                             v->o + (size_t)q0 * w, w,
                             v->wscr + 2 * ar->m_off[b]);
    );
}

// y (rows, out) = resid + drop(x Wᵀ + b) for x (rows, in): an attention's
// out_proj or a feed-forward's second linear, and the residual add. With
// dropout off (the reference's eval), the product accumulates onto the
// residual; on, it goes through the scratch t (rows, out).
static void residual_linear_fwd(const clef_kernels *k, int rows, int out,
                                int in, const float *x, const float *W,
                                const float *b, const float *resid,
                                drop_rows dr, float *t, float *y)
{
    if (clef_dropout_on(dr.d)) {
        clef_linear_fwd(k, rows, out, in, x, W, b, t);
        clef_dropout_add_rows(dr.d, dr.site, dr.nb, dr.off, out, t, resid, y);
        return;
    }
    memcpy(y, resid, sizeof(float) * (size_t)rows * out);
    clef_mm_nt(k, rows, out, in, x, in, W, in, y, out, 1);
    clef_rows_bias_add(k, rows, out, b, y);
}

// y (nq, w) = resid + MHA(xq (nq, w), K | V) with packed in_proj p, over the
// whole batch: projections are one GEMM each, attention runs per record.
// K | V are computed here from xkv (nk, w) when xkv is non-NULL (then
// v->ldkv = 2w), else already in v->kv. Saves v's q, kv, att and o (or the
// absorbed form's state).
static void mha_fwd(const clef_kernels *k, const mha_view *v, mha_tensors p,
                    const float *xq, const float *xkv, const float *resid,
                    float *y)
{
    const int w = v->w, nq = v->rows.q_off[v->nb], nk = v->rows.k_off[v->nb];
    clef_linear_fwd(k, nq, w, w, xq, p.in.w, p.in.b, v->q);
    if (v->absorbed) { // K and V never formed (core/memattn.h)
        clef_memattn_fwd(k, &v->ab, p.in, v->o);
    } else {
        if (xkv)
            clef_linear_fwd(k, nk, 2 * w, w, xkv, p.in.w + (size_t)w * w,
                            p.in.b + w, v->kv);
        attention_records(k, v);
    }
    residual_linear_fwd(k, nq, w, w, v->o, p.out_w, p.out_b, resid, v->out,
                        v->dt, y);
}

// out (rows, w) = x + drop(W₂ drop(gelu(W₁ LN(x) + b₁)) + b₂), saving a
// (a.u holds the dropped gelu, what W₂ multiplies).
static void ffn_fwd(const clef_kernels *k, const clef_config *c, int rows,
                    ffn_tensors p, ffn_acts a, ffn_drop dr, const float *x,
                    float *out)
{
    const int w = c->w, f = c->f;
    ln_fwd(k, rows, w, x, p.ln, &a.ln);
    clef_linear_fwd(k, rows, f, w, a.ln.y, p.w1, p.b1, a.h1);
    clef_rows_gelu_fwd(k, (size_t)rows * f, a.h1, a.u);
    if (clef_dropout_on(dr.in.d))
        clef_dropout_rows(dr.in.d, dr.in.site, dr.in.nb, dr.in.off, f, a.u, f);
    residual_linear_fwd(k, rows, w, f, a.u, p.w2, p.b2, x, dr.out, dr.t, out);
}

// xa (Q, w) = x0 + SA(LN1 x0) of field layer a, whose LN1 is done: Q, K, V
// from the same normalised stream (Q, 3w), attention per record.
static void self_attn_fwd(const clef_kernels *k, const clef_ws *ws, int j,
                          const field_acts *a, mha_tensors p, const float *x0)
{
    const int w = ws->cfg.w, h = ws->cfg.h, Q = ws->Q;
    clef_linear_fwd(k, Q, 3 * w, w, a->n1.y, p.in.w, p.in.b, a->qkv);
    const drop_rows out =
        clef_drop_at(ws, CLEF_DROP_FIELD_SA_OUT, j, ws->q_off);
    const uint64_t sa_w =
        out.d ? clef_dropout_site(out.d, CLEF_DROP_FIELD_SA_W, j) : 0;
    CLEF_PAR_FOR(ws->nb > 1, int, b, ws->nb,
        const int q0 = ws->q_off[b], nq = ws->q_off[b + 1] - q0;
        const float *qkv = a->qkv + (size_t)q0 * 3 * w;
        const clef_att_drop ad = {out.d, sa_w, b};
        record_attention_fwd(k, out.d ? &ad : NULL, nq, nq, h, w / h,
                             qkv, 3 * w, qkv + w, 3 * w, qkv + 2 * w, 3 * w,
                             a->sa + h * ws->qq_off[b],
                             a->sa_o + (size_t)q0 * w, w,
                             ws->mascr + 2 * ws->qq_off[b]);
    );
    residual_linear_fwd(k, Q, w, w, a->sa_o, p.out_w, p.out_b, x0, out,
                        ws->drop_t, a->xa);
}

// ---- the head ----

drop_rows clef_drop_at(const clef_ws *ws, int site, int layer, const int *off)
{
    if (!clef_dropout_on(&ws->drop))
        return (drop_rows){0};
    return (drop_rows){&ws->drop, clef_dropout_site(&ws->drop, site, layer),
                       ws->nb, off};
}

ffn_drop clef_ffn_drop(const clef_ws *ws, int in_site, int out_site, int layer,
                       const int *off)
{
    return (ffn_drop){clef_drop_at(ws, in_site, layer, off),
                      clef_drop_at(ws, out_site, layer, off), ws->drop_t};
}

// A layer's buffers of its view: queries, maps, output, and the absorbed
// form's qt and mt.
typedef struct view_bufs {
    float *q, *att, *o, *qt, *mt;
} view_bufs;

// What the views of the memory attentions share: the batch, the rows each
// record's attention sees, the memory mem (T, w) and its packs pk, the
// absorbed form's scratch and the layer's buffers b. Filled in place, field
// by field: a compound literal of the whole view compiled to rep stos and
// rep movs, whose start cost (tens of cycles each) showed in the tiny
// head's ~13 views per update.
static void memory_view(mha_view *v, const clef_ws *ws, att_rows rows,
                        const float *mem, const clef_mempack *pk, view_bufs b)
{
    const int w = ws->cfg.w, h = ws->cfg.h;
    memset(v, 0, sizeof *v);
    v->nb = ws->nb, v->w = w, v->h = h, v->rows = rows;
    clef_memattn *ma = &v->ab.ma;
    ma->nb = ws->nb, ma->w = w, ma->h = h;
    ma->q_off = rows.q_off, ma->t_off = rows.k_off, ma->m_off = rows.m_off;
    ma->mem = mem, ma->ldm = w;
    ma->pk = ws->pk || ws->pk_t ? pk : NULL;
    ma->mem16 = ws->round_mem ? pk->m16 : NULL;
    v->ab.scr = ws->mscr1;
    v->ab.scr2 = ws->mscr2;
    v->ab.ascr = ws->mascr;
    v->q = b.q;
    v->ab.q = b.q;
    v->att = v->ab.att = b.att;
    v->o = b.o;
    v->ab.qt = b.qt;
    v->ab.mt = b.mt;
}

void clef_route_view(mha_view *v, const clef_ws *ws, int i)
{
    const route_acts *a = &ws->route[i];
    const att_rows rows = {ws->o_off, ws->t_off, ws->ot_off};
    memory_view(v, ws, rows, a->mn.y, &a->mpk,
                (view_bufs){a->q, a->att, a->o, a->qt, a->mt});
    v->absorbed = ws->absorb_route;
    v->kv = a->kv;
    v->ldkv = 2 * ws->cfg.w;
    v->out = clef_drop_at(ws, CLEF_DROP_ROUTE_ATT_OUT, i, ws->o_off);
    v->dt = ws->drop_t;
}

void clef_field_view(mha_view *v, const clef_ws *ws, int j)
{
    const field_acts *a = &ws->field[j];
    const int w = ws->cfg.w;
    const att_rows rows = {ws->q_off, ws->t_off, ws->qt_off};
    memory_view(v, ws, rows, ws->M, &ws->field_mpk,
                (view_bufs){a->qc, a->ca, a->ca_o, a->qt, a->mt});
    v->absorbed = ws->absorb_field;
    v->kv = ws->kvc + (size_t)j * 2 * w; // layer j's columns of (T, L·2w)
    v->ldkv = ws->cfg.L * 2 * w;
    v->out = clef_drop_at(ws, CLEF_DROP_FIELD_CA_OUT, j, ws->q_off);
    v->dt = ws->drop_t;
    v->weights_on = v->out.d != NULL; // never absorbed then (batch_forward)
    v->weights =
        v->out.d ? clef_dropout_site(v->out.d, CLEF_DROP_FIELD_CA_W, j) : 0;
    v->wscr = ws->mascr;
}

// Evidence routing layer i: options attend to their record's memory, never
// to each other.
static void route_fwd(const clef_kernels *k, clef_ws *ws, int i,
                      const clef_route_tensors *p, const float *R)
{
    const route_acts *a = &ws->route[i];
    const int w = ws->cfg.w, O = ws->O, T = ws->T;
    ln_fwd(k, T, w, ws->M, LN(p, mn), &a->mn); // M̃ (T, w)
    ln_fwd(k, O, w, R, LN(p, qn), &a->qn);     // (O, w)
    mha_view v;
    clef_route_view(&v, ws, i);
    if (v.absorbed)
        clef_memattn_prepare(k, &v.ab.ma);
    mha_fwd(k, &v, route_mha(p), a->qn.y, a->mn.y, R, a->r1);
    const ffn_drop dr = clef_ffn_drop(ws, CLEF_DROP_ROUTE_FFN_IN,
                                      CLEF_DROP_ROUTE_FFN_OUT, i, ws->o_off);
    ffn_fwd(k, &ws->cfg, O, route_ffn(p), route_ffn_acts(a), dr, a->r1, a->out);
}

// Pre-norm decoder layer j over the field slots (questions of each record).
static void field_fwd(const clef_kernels *k, clef_ws *ws, int j,
                      const clef_field_tensors *p, const float *x0)
{
    const field_acts *a = &ws->field[j];
    const int w = ws->cfg.w, Q = ws->Q;
    ln_fwd(k, Q, w, x0, LN(p, n1), &a->n1);
    self_attn_fwd(k, ws, j, a, field_sa(p), x0);
    // cross-attention to the RAW memory M (no norm on the memory side)
    ln_fwd(k, Q, w, a->xa, LN(p, n2), &a->n2);
    mha_view v;
    clef_field_view(&v, ws, j);
    mha_fwd(k, &v, field_ca(p), a->n2.y, NULL, a->xa, a->xb);
    const ffn_drop dr = clef_ffn_drop(ws, CLEF_DROP_FIELD_FFN_IN,
                                      CLEF_DROP_FIELD_FFN_OUT, j, ws->q_off);
    ffn_fwd(k, &ws->cfg, Q, field_ffn(p), field_ffn_acts(a), dr, a->xb, a->out);
}

float clef_kappa(float s)
{
    return expf(s < CLEF_LN100 ? s : CLEF_LN100);
}

float clef_sigmoid(float x)
{
    return 1.f / (1.f + expf(-x));
}

// Section 9: prior, cosine and residual scores → the logits z (O).
static void score_fwd(const clef_kernels *k, const clef_head *hd, clef_ws *ws,
                      float *z)
{
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    const int Q = ws->Q, O = ws->O, d = c->d, w = c->w;
    // f_o = F̂[owner(o)] (O, w); n_o = option_norm(R_o) (O, w)
    k->gather_rows(O, ws->owner, w, ws->fnorm.y, ws->fo);
    ln_fwd(k, O, w, ws->R, LN(P, on), &ws->onorm);
    const float *n = ws->onorm.y;
    k->cosine_fwd(O, w, ws->fo, n, ws->fhat, ws->nhat, ws->fnrm, ws->nnrm,
                  ws->cos);
    // residual scorer on [f; n; f⊙n; |f−n|] (O, 4w)
    for (int o = 0; o < O; o++) {
        const float *fr = ws->fo + (size_t)o * w, *nr = n + (size_t)o * w;
        float *ft = ws->feat + (size_t)o * 4 * w;
        for (int i = 0; i < w; i++) {
            ft[i] = fr[i];
            ft[w + i] = nr[i];
            ft[2 * w + i] = fr[i] * nr[i];
            ft[3 * w + i] = fabsf(fr[i] - nr[i]);
        }
    }
    clef_linear_fwd(k, O, w, 4 * w, ws->feat, P->rs0_w, P->rs0_b, ws->v1);
    clef_rows_gelu_fwd(k, (size_t)O * w, ws->v1, ws->u1);
    const drop_rows dr = clef_drop_at(ws, CLEF_DROP_SCORER, 0, ws->o_off);
    if (dr.d) // u1 holds the dropped gelu, what residual_scorer.3 multiplies
        clef_dropout_rows(dr.d, dr.site, dr.nb, dr.off, w, ws->u1, w);
    clef_linear_fwd(k, O, 1, w, ws->u1, P->rs3_w, P->rs3_b, ws->res);
    // prior in d-space: κ(s_p) normalize(lex_o) · normalize(qv_q + g), with
    // normalize(lex) a constant of the record (clef_record_prepare)
    float *anchor = ws->dqv; // scratch (Q, d): qv + g of the question's record
    for (int q = 0; q < Q; q++) {
        const float *g = ws->g + (size_t)ws->qrec[q] * d;
        for (int i = 0; i < d; i++)
            anchor[(size_t)q * d + i] = ws->qv[(size_t)q * d + i] + g[i];
    }
    k->normalize_fwd(Q, d, CLEF_NORMALIZE_EPS, anchor, ws->a, ws->anrm);
    const float kp = clef_kappa(*P->prior_scale);
    const float kj = clef_kappa(*P->joint_scale);
    const float gate = clef_sigmoid(*P->gate);
    for (int o = 0; o < O; o++) {
        const float *l = ws->lhat + (size_t)o * d;
        const float *a = ws->a + (size_t)ws->owner[o] * d;
        float dot = 0.f;
        for (int i = 0; i < d; i++)
            dot += l[i] * a[i];
        ws->prior[o] = kp * dot;
        z[o] = ws->prior[o] + gate * (kj * ws->cos[o] + ws->res[o]);
    }
}

static void mempack_bind(clef_mempack *m, const clef_ws *ws)
{
    m->ops = ws->pk ? ws->pk : ws->pk_t;
    m->nt_off = ws->pk_nt_off;
    m->nn_off = ws->pk_nn_off;
    m->transposed = ws->pk_t != NULL;
}

static void mempacks_bind(clef_ws *ws)
{
    mempack_bind(&ws->field_mpk, ws);
    for (int i = 0; i < ws->cfg.R; i++)
        mempack_bind(&ws->route[i].mpk, ws);
}

// Which pre-packed operands this batch uses (ws->pk, NULL for none) and
// where each record's packs start.
static void prepack_setup(const clef_kernels *k, clef_ws *ws)
{
    const int w = ws->cfg.w;
    const int on = k->prepack && !ws->prepack_off;
    // bf16: no float panels (k->prepack is NULL); the memories are rounded
    // once per batch instead (clef_mempack.m16)
    ws->round_mem = k->mm != NULL && !ws->prepack_off;
    ws->pk = on && clef_ws_prepacks(&ws->cfg) ? k->prepack : NULL;
    // too narrow to pack: the memories transposed, read by gemm_nt_bt, when
    // the table's gemm_nt is the one whose bits that gives
    ws->pk_t = on && !ws->pk && k->prepack->gemm_nt_bt &&
                       k->prepack->gemm_nt == k->gemm_nt
                   ? k->prepack
                   : NULL;
    if (ws->pk_t)
        mempacks_bind(ws);
    if (!ws->pk)
        return;
    ws->pk_nt_off[0] = ws->pk_nn_off[0] = 0;
    for (int b = 0; b < ws->nb; b++) {
        const int T = ws->t_off[b + 1] - ws->t_off[b];
        ws->pk_nt_off[b + 1] =
            ws->pk_nt_off[b] + clef_mempack_nt_floats(ws->pk, T, w);
        ws->pk_nn_off[b + 1] =
            ws->pk_nn_off[b] + clef_mempack_nn_floats(ws->pk, T, w);
    }
    // the packs' buffers are the workspace's (carve); their layout is this
    // batch's
    mempacks_bind(ws);
}

// Sections 1-2: X = x̂ ⊙ γ + β (T, d); M = X W_mᵀ (T, w); the span means
// qv (Q, d), ctx (O, d) and g (nb, d).
static void memory_fwd(const clef_kernels *k, const clef_head *hd, clef_ws *ws)
{
    const clef_tensors *P = &hd->p;
    const int T = ws->T, d = hd->cfg.d, w = hd->cfg.w;
    affine_memory(ws, P->hn_w, P->hn_b, ws->X);
    clef_mm_nt(k, T, w, d, ws->X, d, P->W_m, d, ws->M, w, 0);
    affine_rows(ws->Q, d, ws->qvhat, P->hn_w, P->hn_b, ws->qv);
    affine_rows(ws->O, d, ws->ctxhat, P->hn_w, P->hn_b, ws->ctx);
    for (int b = 0; b < ws->nb; b++) // g_b = X at the record's own T−1
        memcpy(ws->g + (size_t)b * d,
               ws->X + (size_t)(ws->t_off[b + 1] - 1) * d, sizeof(float) * d);
}

// Section 4: R⁰ = ctx W_cᵀ + lex W_lᵀ + (qv W_oqᵀ)[owner] (O, w).
static void queries_fwd(const clef_kernels *k, const clef_head *hd, clef_ws *ws)
{
    const clef_tensors *P = &hd->p;
    const int Q = ws->Q, O = ws->O, d = hd->cfg.d, w = hd->cfg.w;
    clef_mm_nt(k, O, w, d, ws->ctx, d, P->W_c, d, ws->r0, w, 0);
    clef_mm_nt(k, O, w, d, ws->lex, d, P->W_l, d, ws->r0, w, 1);
    clef_mm_nt(k, Q, w, d, ws->qv, d, P->W_oq, d, ws->qo, w, 0);
    for (int o = 0; o < O; o++)
        for (int i = 0; i < w; i++)
            ws->r0[(size_t)o * w + i] += ws->qo[(size_t)ws->owner[o] * w + i];
}

// Sections 6-7, from the option states ws->R (O, w): B = qv W_qᵀ (Q, w);
// s_o = R_o·B_q/√w; α per question; S_q = Σ α_o R_o; then
// F⁰ = B + LN(S) + W_g g + type_embedding[type] (Q, w).
static void summary_fwd(const clef_kernels *k, const clef_head *hd, clef_ws *ws)
{
    const clef_tensors *P = &hd->p;
    const int Q = ws->Q, O = ws->O, d = hd->cfg.d, w = hd->cfg.w;
    const float *R = ws->R;
    clef_mm_nt(k, Q, w, d, ws->qv, d, P->W_q, d, ws->B, w, 0);
    const float inv_sqrt_w = 1.f / sqrtf((float)w);
    for (int o = 0; o < O; o++) {
        const float *ro = R + (size_t)o * w;
        const float *bq = ws->B + (size_t)ws->owner[o] * w;
        float dot = 0.f;
        for (int i = 0; i < w; i++)
            dot += ro[i] * bq[i];
        ws->s[o] = dot * inv_sqrt_w;
    }
    k->softmax_seg_fwd(Q, ws->opt_off, ws->s, ws->alpha);
    memset(ws->S, 0, sizeof(float) * (size_t)Q * w);
    for (int o = 0; o < O; o++)
        for (int i = 0; i < w; i++)
            ws->S[(size_t)ws->owner[o] * w + i] +=
                ws->alpha[o] * R[(size_t)o * w + i];
    ln_fwd(k, Q, w, ws->S, LN(P, sum), &ws->sum);
    clef_mm_nt(k, ws->nb, w, d, ws->g, d, P->W_g, d, ws->gw, w, 0); // (nb, w)
    for (int q = 0; q < Q; q++) {
        const float *te = P->type_emb + (size_t)ws->qtype[q] * w;
        const float *gw = ws->gw + (size_t)ws->qrec[q] * w;
        for (int i = 0; i < w; i++) {
            size_t qi = (size_t)q * w + i;
            ws->F0[qi] = ws->B[qi] + ws->sum.y[qi] + gw[i] + te[i];
        }
    }
}

// Section 8: the field layers from F⁰, then F̂ = field_norm(F). Their
// cross-attention K | V all come from the raw memory: one GEMM (T, L·2w)
// for every layer. (In the absorbed form there are no K | V to project:
// core/memattn.h.)
static void fields_fwd(const clef_kernels *k, const clef_head *hd, clef_ws *ws)
{
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    const int w = c->w;
    for (int j = 0; j < c->L && !ws->absorb_field; j++) {
        memcpy(ws->kvw + (size_t)j * 2 * w * w,
               P->field[j].ca_in_w + (size_t)w * w, sizeof(float) * 2 * w * w);
        memcpy(ws->kvb + (size_t)j * 2 * w, P->field[j].ca_in_b + w,
               sizeof(float) * 2 * w);
    }
    if (c->L && !ws->absorb_field)
        clef_linear_fwd(k, ws->T, c->L * 2 * w, w, ws->M, ws->kvw, ws->kvb,
                        ws->kvc);
    const float *F = ws->F0;
    for (int j = 0; j < c->L; j++) {
        field_fwd(k, ws, j, &P->field[j], F);
        F = ws->field[j].out;
    }
    ln_fwd(k, ws->Q, w, F, LN(P, fn), &ws->fnorm);
}

void clef_batch_forward(const clef_kernels *k, const clef_head *hd,
                        const clef_record *const *recs, int n, clef_ws *ws,
                        float *z)
{
    const clef_config *c = &hd->cfg;
    clef_batch_index(ws, recs, n, k->mm != NULL);
    const int T = ws->T, w = c->w;
    ws->absorb_route =
        clef_memattn_absorbs(ws->memattn, w, c->h, (double)ws->ot_off[n], T);
    // dropout on the field cross-attention's weights needs its maps formed
    ws->absorb_field =
        !clef_dropout_on(&ws->drop) &&
        clef_memattn_absorbs(ws->memattn, w, c->h, (double)ws->qt_off[n], T);

    memory_fwd(k, hd, ws);  // 1-2. X, M, span means
    queries_fwd(k, hd, ws); // 4. R⁰

    // the memories' packs for the absorbed attentions (memattn.h)
    prepack_setup(k, ws);
    if (ws->absorb_field && c->L) {
        mha_view v;
        clef_field_view(&v, ws, 0);
        clef_memattn_prepare(k, &v.ab.ma);
    }

    // 5. evidence routing
    const float *R = ws->r0;
    for (int i = 0; i < c->R; i++) {
        route_fwd(k, ws, i, &hd->p.route[i], R);
        R = ws->route[i].out;
    }
    ws->R = (float *)R;

    summary_fwd(k, hd, ws);  // 6-7. F⁰
    fields_fwd(k, hd, ws);   // 8. F̂
    score_fwd(k, hd, ws, z); // 9. logits
}

void clef_head_forward(const clef_kernels *k, const clef_head *hd,
                       const clef_record *r, clef_ws *ws, float *z)
{
    clef_batch_forward(k, hd, &r, 1, ws, z);
}

// The head's backward pass for a packed batch (HEAD.md §7, Appendix A):
// reverse mode through the activations the forward pass saved, into
// hd->grads (core/backward.h: added to, except the weight gradients an
// update's first pass writes). Weight gradients are single GEMMs over all
// the batch's rows (a fixed reduction order); only attention runs per
// record. The parts run in reverse order of the forward pass's sections,
// ending in the memory projection's D, which core/train.c may share with
// AdamW.
#include "acts.h"
#include "backward.h"
#include "forward.h"
#include "memattn.h"
#include "mm.h"
#include "par.h"
#include "rows.h"
#include "safetensors.h"

#include <math.h>
#include <string.h>

static void zero(float *x, size_t n)
{
    clef_rows_zero(x, n);
}

// What every part of one backward pass reads: the kernels, the head (its
// params hd->p and grads hd->g), the workspace of the batch's forward pass,
// and acc, the accumulate flag of the weight gradients a GEMM (or one loop)
// owns: 0 on an update's first pass, which writes them outright
// (clef_grads_prepare), 1 when they add.
typedef struct bwd {
    const clef_kernels *k;
    clef_head *hd;
    clef_ws *ws;
    int acc;
} bwd;

// Zero by construction: a key bias shifts every score of a query row equally,
// which softmax ignores, so ∂L/∂b_k = 0 exactly; and every question's logits
// gradient sums to 0 (HEAD.md §6), so ∂L/∂residual_scorer.3.bias = 0 exactly.
// These gradients are left at exactly 0 instead of summed rounding noise,
// which AdamW (m / (√v + eps)) would otherwise turn into real updates.

// The gradients of a packed in_proj bias: sums (ld) = Σ_rows of x (rows, ld)
// (one colsum kernel call into ws->dbias), then db[i] += sums[off + i] for
// the w-wide blocks kept (offs, nblocks).
static void bias_blocks(const bwd *bw, int rows, int ld, const float *x,
                        const int *offs, int nblocks, float *db)
{
    float *sums = bw->ws->dbias;
    const int n = bw->hd->cfg.w;
    memset(sums, 0, sizeof(float) * ld);
    bw->k->colsum(rows, ld, x, sums);
    for (int b = 0; b < nblocks; b++)
        for (int i = 0; i < n; i++)
            db[offs[b] + i] += sums[offs[b] + i];
}

// LayerNorm backward over rows of width w, with γ = p.w and the saved a:
// dx += LN-back(dy); the γ, β gradients g accumulate.
static void ln_bwd(const bwd *bw, int rows, const ln_acts *a, ln_tensors p,
                   ln_tensors g, const float *dy, float *dx)
{
    bw->k->layernorm_bwd(rows, bw->hd->cfg.w, dy, a->xhat, a->rstd, p.w, dx,
                         g.w, g.b);
}

// The gradient of what a dropout site dropped, given dy (rows, n) of its
// output: dy itself when the site is off, else mask ⊙ dy / (1 − p) in t.
static const float *drop_grad(drop_rows dr, int n, const float *dy, float *t)
{
    if (!clef_dropout_on(dr.d))
        return dy;
    memcpy(t, dy, sizeof(float) * (size_t)dr.off[dr.nb] * n);
    clef_dropout_rows(dr.d, dr.site, dr.nb, dr.off, n, t, n);
    return t;
}

// Backward of out = x + drop(W₂ drop(gelu(W₁ LN(x) + b₁)) + b₂) (params p,
// grads g, saved a, sites dr): dx (rows, w) = dout + LN-back(FFN-back(dout)),
// overwritten. Scratch: ws->dA (du), ws->dB_ (dh) (rows, f); ws->dC (dln)
// (rows, w); dr.t.
static void ffn_bwd(const bwd *bw, int rows, ffn_tensors p, ffn_tensors g,
                    ffn_acts a, ffn_drop dr, const float *dout, float *dx)
{
    const clef_kernels *k = bw->k;
    const int w = bw->hd->cfg.w, f = bw->hd->cfg.f, acc = bw->acc;
    float *du = bw->ws->dA, *dh = bw->ws->dB_, *dln = bw->ws->dC;
    const float *dy = drop_grad(dr.out, w, dout, dr.t); // ∂L/∂(W₂u + b₂)
    clef_mm_tn(k, w, f, rows, dy, w, a.u, f, g.w2, f, acc); // dW₂ += dyᵀ u
    k->colsum(rows, w, dy, g.b2);
    clef_mm_nn(k, rows, f, w, dy, w, p.w2, f, du, f, 0); // du = dy W₂
    if (clef_dropout_on(dr.in.d))
        clef_dropout_rows(dr.in.d, dr.in.site, dr.in.nb, dr.in.off, f, du, f);
    zero(dh, (size_t)rows * f);
    clef_rows_gelu_bwd(k, (size_t)rows * f, a.h1, du, dh);
    clef_mm_tn(k, f, w, rows, dh, f, a.ln.y, w, g.w1, w, acc); // dW₁ += dhᵀ LN
    k->colsum(rows, f, dh, g.b1);
    clef_mm_nn(k, rows, w, f, dh, f, p.w1, w, dln, w, 0); // dln = dh W₁
    clef_rows_copy(dx, dout, (size_t)rows * w);
    ln_bwd(bw, rows, &a.ln, p.ln, g.ln, dln, dx);
}

// Where an attention's key / value gradients go: dK | dV are added to dkv
// (nk, ld: dK in the first w columns, dV in the next w), which the caller
// zeroed, in the project form; the absorbed form adds the memory gradient
// to dmem (T, w) instead.
typedef struct kv_grad {
    float *dkv;
    int ld;
    float *dmem;
} kv_grad;

// One record's attention backward (the attention_bwd kernel's arguments),
// with dropout on its weights when ad is non-NULL (scratch scr: 2·nq·nk
// floats then, nq·nk for the kernel).
static void record_attention_bwd(const clef_kernels *k, const clef_att_drop *ad,
                                 int nq, int nk, int h, int dh, const float *Q,
                                 int ldq, const float *K, int ldk,
                                 const float *V, int ldv, const float *A,
                                 const float *dO, int lddo, float *dQ, int lddq,
                                 float *dK, int lddk, float *dV, int lddv,
                                 float *scr)
{
    if (ad)
        clef_attention_drop_bwd(k, ad, nq, nk, h, dh, Q, ldq, K, ldk, V, ldv, A,
                                dO, lddo, dQ, lddq, dK, lddk, dV, lddv, scr);
    else
        k->attention_bwd(nq, nk, h, dh, Q, ldq, K, ldk, V, ldv, A, dO, lddo, dQ,
                         lddq, dK, lddk, dV, lddv, scr);
}

// The project form's attention backward, record by record: dq (nq, w) from
// dO (nq, w), overwritten; dK | dV added to d. Each record has its own slice
// of ws->att_scratch at its map offset, so records run in parallel.
static void attention_bwd_records(const bwd *bw, const mha_view *v,
                                  const float *dO, float *dq, kv_grad d)
{
    const clef_kernels *k = bw->k;
    const int w = v->w, h = v->h, ldkv = v->ldkv, ld = d.ld;
    const att_rows *ar = &v->rows;
    float *scr = bw->ws->att_scratch;
    zero(dq, (size_t)ar->q_off[v->nb] * w);
    CLEF_PAR_FOR(v->nb > 1, int, b, v->nb,
        const int q0 = ar->q_off[b], k0 = ar->k_off[b];
        const size_t qr = (size_t)q0 * w;
        const float *kvb = v->kv + (size_t)k0 * ldkv;
        float *dkvb = d.dkv + (size_t)k0 * ld;
        const clef_att_drop ad = {v->out.d, v->weights, b};
        record_attention_bwd(k, v->weights_on ? &ad : NULL,
                             ar->q_off[b + 1] - q0, ar->k_off[b + 1] - k0, h,
                             w / h, v->q + qr, w, kvb, ldkv, kvb + w, ldkv,
                             v->att + h * ar->m_off[b], dO + qr, w, dq + qr,
                             w, dkvb, ld, dkvb + w, ld,
                             v->weights_on ? v->wscr + 2 * ar->m_off[b]
                                           : scr + ar->m_off[b]);
    );
}

// Backward of y = resid + MHA(xq, K | V) over the batch (view v, params p,
// grads g), query side (the residual part is the caller's): out_proj,
// attention and the query rows of in_proj. dxq (nq, w) is overwritten; the
// K | V gradients go to d. In the absorbed form (core/memattn.h) the
// key / value side is done here too: the W_k, W_v, b_v gradients, and the
// memory gradient into d.dmem. Scratch: ws->dA (dO), ws->dB_ (dq) (nq, w).
static void mha_bwd_q(const bwd *bw, const mha_view *v, mha_tensors p,
                      mha_tensors g, const float *dy, const float *xq,
                      kv_grad d, float *dxq)
{
    const clef_kernels *k = bw->k;
    const int w = v->w, nq = v->rows.q_off[v->nb], acc = bw->acc;
    float *dO = bw->ws->dA, *dq = bw->ws->dB_;
    dy = drop_grad(v->out, w, dy, v->dt); // ∂L/∂(O W_oᵀ + b_o)
    clef_mm_tn(k, w, w, nq, dy, w, v->o, w, g.out_w, w, acc); // dW_o += dyᵀ O
    k->colsum(nq, w, dy, g.out_b);
    clef_mm_nn(k, nq, w, w, dy, w, p.out_w, w, dO, w, 0); // dO (nq, w) = dy W_o
    if (v->absorbed)
        clef_memattn_bwd(k, &v->ab, p.in, g.in, dO, dq, d.dmem, acc);
    else
        attention_bwd_records(bw, v, dO, dq, d);
    clef_mm_tn(k, w, w, nq, dq, w, xq, w, g.in.w, w, acc); // dW_q += dqᵀ xq
    k->colsum(nq, w, dq, g.in.b);
    clef_mm_nn(k, nq, w, w, dq, w, p.in.w, w, dxq, w, 0);
}

// Key/value side of an attention whose K | V = xkv [W_k; W_v]ᵀ + b over nk
// rows, given dkv (nk, 2w) with dK in its first w columns and dV in the
// next w: [dW_k; dW_v] (2w, w) += dkvᵀ xkv, b_v += Σ dV (b_k: see above), and
// dxkv (nk, w) = dkv [W_k; W_v].
static void mha_bwd_kv(const bwd *bw, int nk, mha_tensors p, mha_tensors g,
                       const float *dkv, const float *xkv, float *dxkv)
{
    const clef_kernels *k = bw->k;
    const int w = bw->hd->cfg.w, lddkv = 2 * w, v_only[1] = {w};
    clef_mm_tn(k, 2 * w, w, nk, dkv, lddkv, xkv, w, g.in.w + (size_t)w * w, w,
               bw->acc);
    bias_blocks(bw, nk, lddkv, dkv, v_only, 1, g.in.b + w); // b_v
    clef_mm_nn(k, nk, w, 2 * w, dkv, lddkv, p.in.w + (size_t)w * w, w, dxkv, w,
               0);
}

// Backward of xa = x0 + SA(LN1 x0) of field layer a (params p, grads g),
// given dxa (Q, w): query, key and value gradients all land on LN1, so
// dln (Q, w) = ∂L/∂LN1(x0), overwritten. Scratch: ws->dA (dO) (Q, w),
// ws->dB_ (dQ | dK | dV) (Q, 3w), ws->att_scratch (a slice per record).
static void self_attn_bwd(const bwd *bw, int j, const field_acts *a,
                          mha_tensors p, mha_tensors g, const float *dxa,
                          float *dln)
{
    const clef_kernels *k = bw->k;
    const clef_ws *ws = bw->ws;
    const int w = bw->hd->cfg.w, h = bw->hd->cfg.h, Q = ws->Q;
    float *dO = ws->dA, *dqkv = ws->dB_;
    const drop_rows out =
        clef_drop_at(ws, CLEF_DROP_FIELD_SA_OUT, j, ws->q_off);
    const uint64_t sa_w =
        out.d ? clef_dropout_site(out.d, CLEF_DROP_FIELD_SA_W, j) : 0;
    dxa = drop_grad(out, w, dxa, ws->drop_t); // ∂L/∂(SA W_oᵀ + b_o)
    clef_mm_tn(k, w, w, Q, dxa, w, a->sa_o, w, g.out_w, w, bw->acc);
    k->colsum(Q, w, dxa, g.out_b);
    clef_mm_nn(k, Q, w, w, dxa, w, p.out_w, w, dO, w, 0);
    zero(dqkv, (size_t)Q * 3 * w);
    CLEF_PAR_FOR(ws->nb > 1, int, b, ws->nb,
        const int q0 = ws->q_off[b], nq = ws->q_off[b + 1] - q0;
        const size_t r3 = (size_t)q0 * 3 * w;
        const clef_att_drop ad = {out.d, sa_w, b};
        record_attention_bwd(k, out.d ? &ad : NULL, nq, nq, h, w / h,
                             a->qkv + r3, 3 * w, a->qkv + r3 + w, 3 * w,
                             a->qkv + r3 + 2 * w, 3 * w,
                             a->sa + h * ws->qq_off[b], dO + (size_t)q0 * w, w,
                             dqkv + r3, 3 * w, dqkv + r3 + w, 3 * w,
                             dqkv + r3 + 2 * w, 3 * w,
                             out.d ? ws->mascr + 2 * ws->qq_off[b]
                                   : ws->att_scratch + ws->qq_off[b]);
    );
    clef_mm_tn(k, 3 * w, w, Q, dqkv, 3 * w, a->n1.y, w, g.in.w, w, bw->acc);
    const int q_and_v[2] = {0, 2 * w}; // b_k: zero by construction
    bias_blocks(bw, Q, 3 * w, dqkv, q_and_v, 2, g.in.b);
    clef_mm_nn(k, Q, w, 3 * w, dqkv, 3 * w, p.in.w, w, dln, w, 0);
}

// The field layers' cross-attention K | V were one stacked GEMM over the raw
// memory (forward.c); their backward is one too, once every layer has added
// its dK | dV to ws->dkvc (T, L·2w): the stacked weight gradient
// dkvcᵀ M (L·2w, w) is split back into each layer's in_proj rows, and
// dM += dkvc [W_k; W_v]_stacked.
static void field_kv_bwd(const bwd *bw)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const clef_config *c = &hd->cfg;
    const int w = c->w, T = ws->T, L2w = c->L * 2 * w;
    if (!c->L)
        return;
    clef_mm_tn(k, L2w, w, T, ws->dkvc, L2w, ws->M, w, ws->dkvw, w, 0);
    memset(ws->dbias, 0, sizeof(float) * L2w);
    k->colsum(T, L2w, ws->dkvc, ws->dbias);
    for (int j = 0; j < c->L; j++) {
        clef_field_tensors *g = &hd->g.field[j];
        float *dst = g->ca_in_w + (size_t)w * w; // rows [w, 3w)
        const float *src = ws->dkvw + (size_t)j * 2 * w * w;
        if (!bw->acc)
            memcpy(dst, src, sizeof(float) * 2 * w * w);
        else
            for (size_t i = 0; i < (size_t)2 * w * w; i++)
                dst[i] += src[i];
        const float *sv = ws->dbias + (size_t)j * 2 * w + w; // b_v only
        for (int i = 0; i < w; i++)
            g->ca_in_b[2 * w + i] += sv[i];
    }
    clef_mm_nn(k, T, w, L2w, ws->dkvc, L2w, ws->kvw, w, ws->dM, w, 1);
}

// Section 9's scalars: z = prior + σ(γ)(κ_j cos + res). The prior and joint
// scales' gradients, the gate's, and ws->dcos, ws->dres (O).
static void scalars_bwd(const bwd *bw, const float *dz)
{
    const clef_tensors *P = &bw->hd->p;
    clef_tensors *G = &bw->hd->g;
    clef_ws *ws = bw->ws;
    const float kj = clef_kappa(*P->joint_scale);
    const float gate = clef_sigmoid(*P->gate);
    float g_sp = 0.f, g_gate = 0.f, g_sj = 0.f;
    for (int o = 0; o < ws->O; o++) {
        float gj = gate * dz[o];
        g_sp += dz[o] * ws->prior[o];
        g_gate += dz[o] * (kj * ws->cos[o] + ws->res[o]);
        g_sj += gj * ws->cos[o];
        ws->dcos[o] = kj * gj;
        ws->dres[o] = gj;
    }
    if (*P->prior_scale <= CLEF_LN100)
        *G->prior_scale += g_sp;
    *G->gate += gate * (1.f - gate) * g_gate;
    if (*P->joint_scale <= CLEF_LN100)
        *G->joint_scale += kj * g_sj;
}

// The residual scorer res = W_b gelu(W_a feat + b_a) + b_b, from ws->dres:
// its weight gradients and dfeat (O, 4w) = ws->dC.
// Scratch: ws->dA (du1), ws->dB_ (dv1) (O, w).
static void residual_scorer_bwd(const bwd *bw)
{
    const clef_kernels *k = bw->k;
    const clef_tensors *P = &bw->hd->p;
    clef_tensors *G = &bw->hd->g;
    clef_ws *ws = bw->ws;
    const int O = ws->O, w = bw->hd->cfg.w, acc = bw->acc;
    float *du1 = ws->dA, *dv1 = ws->dB_, *dfeat = ws->dC;
    clef_mm_tn(k, 1, w, O, ws->dres, 1, ws->u1, w, G->rs3_w, w, acc);
    clef_mm_nn(k, O, w, 1, ws->dres, 1, P->rs3_w, w, du1, w, 0);
    const drop_rows dr = clef_drop_at(ws, CLEF_DROP_SCORER, 0, ws->o_off);
    if (dr.d)
        clef_dropout_rows(dr.d, dr.site, dr.nb, dr.off, w, du1, w);
    zero(dv1, (size_t)O * w);
    clef_rows_gelu_bwd(k, (size_t)O * w, ws->v1, du1, dv1);
    clef_mm_tn(k, w, 4 * w, O, dv1, w, ws->feat, 4 * w, G->rs0_w, 4 * w, acc);
    k->colsum(O, w, dv1, G->rs0_b);
    clef_mm_nn(k, O, 4 * w, w, dv1, w, P->rs0_w, 4 * w, dfeat, 4 * w, 0);
}

// The features [f; n; f⊙n; |f−n|] and the cosine, from dfeat (ws->dC) and
// ws->dcos: dR (O, w) += the option_norm path, ws->dF (Q, w) = ∂L/∂F̂
// gathered per question. sign(0) = 0. Scratch: ws->dA (df), ws->dB_ (dn).
static void features_bwd(const bwd *bw)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const int O = ws->O, w = hd->cfg.w;
    const float *dfeat = ws->dC, *n = ws->onorm.y;
    float *df = ws->dA, *dn = ws->dB_; // (O, w)
    for (int o = 0; o < O; o++) {
        const float *fr = ws->fo + (size_t)o * w, *nr = n + (size_t)o * w;
        const float *a = dfeat + (size_t)o * 4 * w;
        float *dfr = df + (size_t)o * w, *dnr = dn + (size_t)o * w;
        for (int i = 0; i < w; i++) {
            float diff = fr[i] - nr[i];
            float sgn = (diff > 0.f) - (diff < 0.f);
            dfr[i] = a[i] + a[2 * w + i] * nr[i] + a[3 * w + i] * sgn;
            dnr[i] = a[w + i] + a[2 * w + i] * fr[i] - a[3 * w + i] * sgn;
        }
    }
    k->cosine_bwd(O, w, ws->fhat, ws->nhat, ws->fnrm, ws->nnrm, ws->dcos, df,
                  dn);
    ln_bwd(bw, O, &ws->onorm, LN(&hd->p, on), LN(&hd->g, on), dn, ws->dR);
    // ∂L/∂F̂_q = Σ_{o∈q} df_o
    zero(ws->dF, (size_t)ws->Q * w);
    k->scatter_add_rows(O, ws->owner, w, df, ws->dF);
}

// The prior κ(s_p) normalize(lex_o) · â_q, â_q = normalize(qv_q + g): dqv
// (Q, d) = ∂L/∂qv and dg (nb, d) += ∂L/∂g. Nothing flows into E.
// Scratch: ws->dsum (da) (Q, d).
static void prior_bwd(const bwd *bw, const float *dz)
{
    clef_ws *ws = bw->ws;
    const int Q = ws->Q, d = bw->hd->cfg.d;
    const float kp = clef_kappa(*bw->hd->p.prior_scale);
    float *da = ws->dsum;
    zero(da, (size_t)Q * d);
    for (int o = 0; o < ws->O; o++) {
        float coef = kp * dz[o];
        float *dar = da + (size_t)ws->owner[o] * d;
        const float *l = ws->lhat + (size_t)o * d;
        for (int i = 0; i < d; i++)
            dar[i] += coef * l[i];
    }
    bw->k->normalize_bwd(Q, d, CLEF_NORMALIZE_EPS, ws->a, ws->anrm, da,
                         ws->dqv);
    for (int q = 0; q < Q; q++) { // dqv is still only t_q: dg_b += Σ_q t_q
        float *dg = ws->dg + (size_t)ws->qrec[q] * d;
        for (int i = 0; i < d; i++)
            dg[i] += ws->dqv[(size_t)q * d + i];
    }
}

// Section 9 backward: from dz (O) to dR (O, w) += option-norm path,
// ws->dF (Q, w) = ∂L/∂F̂ gathered per question, dqv (Q, d) and dg (d) from
// the prior anchor, and the scalar / residual-scorer gradients.
static void score_bwd(const bwd *bw, const float *dz)
{
    scalars_bwd(bw, dz);     // → dcos, dres
    residual_scorer_bwd(bw); // → dfeat
    features_bwd(bw);        // → dR, dF
    prior_bwd(bw, dz);       // → dqv, dg
}

// Field layer j's backward: dio (Q, w) holds ∂L/∂out on entry and ∂L/∂x0 on
// exit.
static void field_bwd(const bwd *bw, int j, float *dio)
{
    clef_ws *ws = bw->ws;
    const int w = bw->hd->cfg.w, Q = ws->Q;
    const clef_field_tensors *p = &bw->hd->p.field[j];
    clef_field_tensors *g = &bw->hd->g.field[j];
    const field_acts *a = &ws->field[j];
    float *dxb = ws->dxb, *dxa = ws->dxa, *dln = ws->dC; // (Q, w)

    // out = xb + FFN(LN3 xb)
    const ffn_drop dr = clef_ffn_drop(ws, CLEF_DROP_FIELD_FFN_IN,
                                      CLEF_DROP_FIELD_FFN_OUT, j, ws->q_off);
    ffn_bwd(bw, Q, field_ffn(p), field_ffn(g), field_ffn_acts(a), dr, dio, dxb);
    // xb = xa + CA(LN2 xa, M): dK | dV into this layer's columns of dkvc
    // (absorbed form: the memory gradient goes straight into dM)
    mha_view v;
    clef_field_view(&v, ws, j);
    const kv_grad d = {ws->dkvc + (size_t)j * 2 * w, v.ldkv, ws->dM};
    mha_bwd_q(bw, &v, field_ca(p), field_ca(g), dxb, a->n2.y, d, dln);
    memcpy(dxa, dxb, sizeof(float) * (size_t)Q * w);
    ln_bwd(bw, Q, &a->n2, LN(p, n2), LN(g, n2), dln, dxa);
    // xa = x0 + SA(LN1 x0)
    self_attn_bwd(bw, j, a, field_sa(p), field_sa(g), dxa, dln);
    memcpy(dio, dxa, sizeof(float) * (size_t)Q * w);
    ln_bwd(bw, Q, &a->n1, LN(p, n1), LN(g, n1), dln, dio);
}

// Routing layer i's backward: dio (O, w) holds ∂L/∂out on entry and ∂L/∂R
// on exit; the memory gradient goes through memory_norm into dM.
static void route_bwd(const bwd *bw, int i, float *dio)
{
    clef_ws *ws = bw->ws;
    const int w = bw->hd->cfg.w, O = ws->O, T = ws->T;
    const clef_route_tensors *p = &bw->hd->p.route[i];
    clef_route_tensors *g = &bw->hd->g.route[i];
    const route_acts *a = &ws->route[i];

    const ffn_drop dr = clef_ffn_drop(ws, CLEF_DROP_ROUTE_FFN_IN,
                                      CLEF_DROP_ROUTE_FFN_OUT, i, ws->o_off);
    ffn_bwd(bw, O, route_ffn(p), route_ffn(g), route_ffn_acts(a), dr, dio,
            ws->dR1);
    mha_view v;
    clef_route_view(&v, ws, i);
    // dmt (T, w) = ∂L/∂memory_norm(M): the absorbed form adds into it
    if (v.absorbed)
        zero(ws->dmt, (size_t)T * w);
    else
        zero(ws->dkv, (size_t)T * 2 * w);
    const kv_grad d = {ws->dkv, 2 * w, ws->dmt};
    mha_bwd_q(bw, &v, route_mha(p), route_mha(g), ws->dR1, a->qn.y, d, ws->dC);
    if (!v.absorbed)
        mha_bwd_kv(bw, T, route_mha(p), route_mha(g), ws->dkv, a->mn.y,
                   ws->dmt);
    clef_rows_layernorm_bwd(bw->k, T, w, ws->dmt, a->mn.xhat, a->mn.rstd,
                            p->mn_w, ws->dM, g->mn_w, g->mn_b, ws->ln_part);
    memcpy(dio, ws->dR1, sizeof(float) * (size_t)O * w);
    ln_bwd(bw, O, &a->qn, LN(p, qn), LN(g, qn), ws->dC, dio);
}

// Sections 7 and 6 backward: field input F⁰ → B, type embedding, W_g, g,
// and the summary softmax into R and B; then W_q and qv.
static void summary_bwd(const bwd *bw)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    clef_tensors *G = &hd->g;
    const int Q = ws->Q, O = ws->O, d = c->d, w = c->w, nb = ws->nb;
    const float *dF0 = ws->dF; // (Q, w)
    float *dB = ws->dx;        // (Q, w)

    memcpy(dB, dF0, sizeof(float) * (size_t)Q * w);
    k->scatter_add_rows(Q, ws->qtype, w, dF0, G->type_emb);
    float *sum = ws->dvec; // (nb, w) Σ_{q of record b} ∂L/∂F⁰_q
    zero(sum, (size_t)nb * w);
    for (int b = 0; b < nb; b++)
        k->colsum(ws->q_off[b + 1] - ws->q_off[b], w,
                  dF0 + (size_t)ws->q_off[b] * w, sum + (size_t)b * w);
    clef_mm_tn(k, w, d, nb, sum, w, ws->g, d, G->W_g, d, bw->acc);
    clef_mm_nn(k, nb, d, w, sum, w, P->W_g, d, ws->dg, d, 1); // dg += sum W_g
    // dS (Q, w) = ∂L/∂S through option_summary_norm
    float *dS = ws->dxa;
    zero(dS, (size_t)Q * w);
    ln_bwd(bw, Q, &ws->sum, LN(P, sum), LN(G, sum), dF0, dS);

    // S_q = Σ α_o R_o ;  s_o = R_o · B_q / √w
    const float *R = ws->R;
    for (int o = 0; o < O; o++) {
        const float *ds = dS + (size_t)ws->owner[o] * w;
        const float *ro = R + (size_t)o * w;
        float *dro = ws->dR + (size_t)o * w;
        float dot = 0.f;
        for (int i = 0; i < w; i++) {
            dro[i] += ws->alpha[o] * ds[i];
            dot += ds[i] * ro[i];
        }
        ws->dalpha[o] = dot;
    }
    zero(ws->ds, O);
    k->softmax_seg_bwd(Q, ws->opt_off, ws->alpha, ws->dalpha, ws->ds);
    const float inv_sqrt_w = 1.f / sqrtf((float)w);
    for (int o = 0; o < O; o++) {
        const float gs = ws->ds[o] * inv_sqrt_w;
        const float *bq = ws->B + (size_t)ws->owner[o] * w;
        const float *ro = R + (size_t)o * w;
        float *dro = ws->dR + (size_t)o * w;
        float *dbq = dB + (size_t)ws->owner[o] * w;
        for (int i = 0; i < w; i++) {
            dro[i] += gs * bq[i];
            dbq[i] += gs * ro[i];
        }
    }
    clef_mm_tn(k, w, d, Q, dB, w, ws->qv, d, G->W_q, d, bw->acc);
    clef_mm_nn(k, Q, d, w, dB, w, P->W_q, d, ws->dqv, d, 1); // dqv += dB W_q
}

// Section 4 backward: R⁰ = ctx W_cᵀ + lex W_lᵀ + (qv W_oqᵀ)[owner].
static void queries_bwd(const bwd *bw)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    clef_tensors *G = &hd->g;
    const int Q = ws->Q, O = ws->O, d = c->d, w = c->w;
    const float *dR0 = ws->dR; // (O, w)
    const int acc = bw->acc;
    clef_mm_tn(k, w, d, O, dR0, w, ws->ctx, d, G->W_c, d, acc);
    clef_mm_nn(k, O, d, w, dR0, w, P->W_c, d, ws->dctx, d, 0); // (O, d)
    clef_mm_tn(k, w, d, O, dR0, w, ws->lex, d, G->W_l, d, acc);
    float *Pq = ws->dx; // (Q, w) Σ_{o∈q} dR⁰_o
    zero(Pq, (size_t)Q * w);
    k->scatter_add_rows(O, ws->owner, w, dR0, Pq);
    clef_mm_tn(k, w, d, Q, Pq, w, ws->qv, d, G->W_oq, d, acc);
    clef_mm_nn(k, Q, d, w, Pq, w, P->W_oq, d, ws->dqv, d, 1);
}

// Sections 1-2 backward. X = x̂ ⊙ γ + β is never differentiated row by row:
// with D = dMᵀ x̂ (w, d) and c = Σ_t dM_t (w), one T×d×w product gives
//   dW_m += D ⊙ γ + c βᵀ,  dγ += Σ_j W_m ⊙ D,  dβ += cᵀ W_m,
// and the span means add dγ += dqv ⊙ q̂v + dctx ⊙ ĉtx + dg ⊙ x̂_{T−1}.
// D (w, d) = dMᵀ x̂ = Σ_b dM_bᵀ x̂_b (records in order: x̂ stays in each
// record) is computed in d_chunks column blocks, fixed by the shape and
// never by the thread count (a block's bits do not depend on who runs it),
// so that the update's AdamW can share the team with it (core/train.c,
// d_beside_adamw): about one block per ws->d_block_flops of D (default
// 2 GFLOP: ~20 ms on one core; the team then waits at most about the last,
// smallest block; 1 GFLOP split mid batch 4's D in two and cost it 1-2 %),
// at most 8. dM is packed once for all of them when the backend pre-packs
// (ws->pk, dm_pk), else each block packs all of dM again (a w×T copy). The
// blocks shrink towards the end (d_bound), so the thread that ends AdamW
// and the one that ends the last large block wait little for each other.
// Released, batch 4, 2 threads: 4 equal blocks left one thread idle 40 ms
// of the 170 ms; 8 shrinking ones end within 3 ms of each other at 150 ms.
// Mid, batch 16: one block (D twice AdamW) kept a thread idle 26 ms of 45.
static int d_chunks(const clef_ws *ws, int d, int w)
{
    const double n = ceil(2.0 * d * w * ws->T / ws->d_block_flops);
    // at most √(64-column units): the last block, 1/n² of d, is a unit
    int most = (int)sqrt((double)((d + 63) / 64));
    most = most < 1 ? 1 : most < 8 ? most : 8;
    return n < 1 ? 1 : n < most ? (int)n : most;
}

// Start of block i of nc (i = nc: d): 1 − (1 − i/nc)² of d in whole
// 64-column units, so block sizes fall linearly from about 2d/nc to d/nc²
// (at least one unit: nc² ≤ units), none empty.
static int d_bound(int d, int nc, int i)
{
    const double x = 1.0 - (double)(nc - i) * (nc - i) / ((double)nc * nc);
    const int b = (int)(x * ((d + 63) / 64) + 0.5) * 64;
    return b < d ? b : d;
}

// Block ch of D: Σ_b dM_bᵀ x̂_b over the records in order (x̂ stays in
// each record), through dM_b pre-packed when the backend pre-packs.
static void d_chunk(const clef_kernels *k, clef_ws *ws, int w, int d, int nc,
                    int ch)
{
    const int j0 = d_bound(d, nc, ch), j1 = d_bound(d, nc, ch + 1);
    for (int b = 0; b < ws->nb; b++) {
        const int t0 = ws->t_off[b], Tb = ws->t_off[b + 1] - t0;
        float *D = ws->dwd + j0;
        if (ws->xrec16[b]) { // x̂ kept in bf16: dM's bf16 copy against it
            clef_mm_tn16(k, w, j1 - j0, Tb, ws->dm16 + (size_t)t0 * w, w,
                         ws->xrec16[b] + j0, d, D, d, b > 0);
            continue;
        }
        const float *xb = ws->xrec[b] + j0;
        if (ws->pk &&
            ws->pk->gemm_pa(0, w, j1 - j0, Tb, ws->dm_pk + ws->pk_a_off[b], xb,
                            d, D, d, b > 0) == 0)
            continue;
        clef_mm_tn(k, w, j1 - j0, Tb, ws->dM + (size_t)t0 * w, w, xb, d, D, d,
                   b > 0);
    }
}

// dM_bᵀ of every record as op(A) of D's products, packed once for all the
// blocks (records in parallel, or the panels of one record).
static void d_pack(clef_ws *ws, int w)
{
    ws->pk_a_off[0] = 0;
    for (int b = 0; b < ws->nb; b++)
        ws->pk_a_off[b + 1] =
            ws->pk_a_off[b] +
            ((ws->pk->a_size(w, ws->t_off[b + 1] - ws->t_off[b]) + 15) &
             ~(size_t)15);
    CLEF_PAR_FOR(ws->nb > 1, int, b, ws->nb,
        const int t0 = ws->t_off[b];
        ws->pk->pack_a(1, w, ws->t_off[b + 1] - t0, ws->dM + (size_t)t0 * w, w,
                       ws->dm_pk + ws->pk_a_off[b]);
    );
}

int clef_memory_bwd_blocks(const clef_ws *ws)
{
    return d_chunks(ws, ws->cfg.d, ws->cfg.w);
}

void clef_memory_bwd_block(const clef_kernels *k, clef_ws *ws, int i)
{
    const int d = ws->cfg.d, w = ws->cfg.w;
    d_chunk(k, ws, w, d, d_chunks(ws, d, w), i);
}

// Column block blk of dW_m (w, d) = D ⊙ γ + c βᵀ (added unless fresh),
// and of dγ += Σ_j W_m ⊙ D, dβ += cᵀ W_m, summed over rows j in order, from
// D (w, d) and c (w). Blocks of 256 columns: each row's segment is 1 KiB of
// four streams (64 columns left the prefetchers behind and the loop took
// 15 ms of a released update).
#define WM_BLOCK 256
static void wm_grad_cols(clef_head *hd, int blk, const float *restrict D,
                         const float *restrict c, int fresh)
{
    const int w = hd->cfg.w, d = hd->cfg.d, i0 = blk * WM_BLOCK;
    const int i1 = d - i0 < WM_BLOCK ? d : i0 + WM_BLOCK;
    const float *restrict gamma = hd->p.hn_w, *restrict beta = hd->p.hn_b;
    float *restrict g_gamma = hd->g.hn_w, *restrict g_beta = hd->g.hn_b;
    for (int j = 0; j < w; j++) {
        const float *restrict Dj = D + (size_t)j * d;
        const float *restrict Wj = hd->p.W_m + (size_t)j * d;
        float *restrict gWj = hd->g.W_m + (size_t)j * d;
        const float cj = c[j];
        if (fresh) { // 0 + …: the sums of adding to a zeroed gradient
#pragma omp simd
            for (int i = i0; i < i1; i++)
                gWj[i] = 0.f + Dj[i] * gamma[i] + cj * beta[i];
        } else {
#pragma omp simd
            for (int i = i0; i < i1; i++)
                gWj[i] = gWj[i] + Dj[i] * gamma[i] + cj * beta[i];
        }
#pragma omp simd
        for (int i = i0; i < i1; i++) {
            g_gamma[i] += Wj[i] * Dj[i];
            g_beta[i] += Wj[i] * cj;
        }
    }
}

// hidden_norm's share of the span means and g: dγ += dqv ⊙ q̂v + dctx ⊙ ĉtx
// + dg ⊙ x̂_{T−1}, dβ += dqv + dctx + dg, in that order.
static void span_means_bwd(clef_head *hd, const clef_ws *ws)
{
    const int Q = ws->Q, O = ws->O, d = hd->cfg.d;
    float *g_gamma = hd->g.hn_w, *g_beta = hd->g.hn_b;
    for (int q = 0; q < Q; q++)
        for (int i = 0; i < d; i++) {
            const size_t qi = (size_t)q * d + i;
            g_gamma[i] += ws->dqv[qi] * ws->qvhat[qi];
            g_beta[i] += ws->dqv[qi];
        }
    for (int o = 0; o < O; o++)
        for (int i = 0; i < d; i++) {
            const size_t oi = (size_t)o * d + i;
            g_gamma[i] += ws->dctx[oi] * ws->ctxhat[oi];
            g_beta[i] += ws->dctx[oi];
        }
    for (int b = 0; b < ws->nb; b++) { // g_b = X at the record's T−1
        const size_t last = (size_t)(ws->t_off[b + 1] - ws->t_off[b] - 1) * d;
        const float *xlast = ws->xrec16[b] ? NULL : ws->xrec[b] + last;
        const uint16_t *x16 = ws->xrec16[b] ? ws->xrec16[b] + last : NULL;
        const float *dg = ws->dg + (size_t)b * d;
        for (int i = 0; i < d; i++) {
            g_gamma[i] += dg[i] * (xlast ? xlast[i] : clef_bf16_to_f32(x16[i]));
            g_beta[i] += dg[i];
        }
    }
}

void clef_memory_bwd_finish(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                            int acc)
{
    const int d = hd->cfg.d, w = hd->cfg.w;
    const float *D = ws->dwd; // (w, d), from the blocks
    float *cs = ws->dvec;     // c (w) = Σ_t dM_t
    zero(cs, w);
    k->colsum(ws->T, w, ws->dM, cs);
    // threads own column blocks; each column sums over j in order
    const int nblk = (d + WM_BLOCK - 1) / WM_BLOCK;
    CLEF_PAR_FOR((size_t)w * d > (1 << 16), int, blk, nblk,
        wm_grad_cols(hd, blk, D, cs, !acc);
    );
    span_means_bwd(hd, ws);
}

// 1 when g is a weight gradient one GEMM (or, for W_m and the field layers'
// stacked K | V rows, one loop) writes in full during a backward pass.
static int owned_by_a_pass(const clef_head *hd, const float *g)
{
    const clef_tensors *G = &hd->g;
    if (g == G->W_m || g == G->W_q || g == G->W_oq || g == G->W_g ||
        g == G->W_c || g == G->W_l || g == G->rs0_w || g == G->rs3_w)
        return 1;
    for (int i = 0; i < hd->cfg.R; i++) {
        const clef_route_tensors *r = &G->route[i];
        if (g == r->in_w || g == r->out_w || g == r->ff1_w || g == r->ff2_w)
            return 1;
    }
    for (int j = 0; j < hd->cfg.L; j++) {
        const clef_field_tensors *f = &G->field[j];
        if (g == f->sa_in_w || g == f->sa_out_w || g == f->ca_in_w ||
            g == f->ca_out_w || g == f->l1_w || g == f->l2_w)
            return 1;
    }
    return 0;
}

// One memset per run of adjacent tensors to clear, and the ~40 pointer
// compares of owned_by_a_pass only for matrices (every weight it names is
// one): on a tiny head, per-tensor calls and compares were 3 % of an update.
void clef_grads_prepare(clef_head *hd)
{
    size_t r0 = 0, rn = 0; // the run being gathered
    for (int t = 0; t < hd->ntensors; t++) {
        const clef_tensor_info *ti = &hd->tensors[t];
        if (ti->ndim == 2 && owned_by_a_pass(hd, hd->grads + ti->offset))
            continue;
        if (rn && r0 + rn == ti->offset) {
            rn += ti->numel;
            continue;
        }
        if (rn)
            memset(hd->grads + r0, 0, sizeof(float) * rn);
        r0 = ti->offset, rn = ti->numel;
    }
    if (rn)
        memset(hd->grads + r0, 0, sizeof(float) * rn);
}

void clef_backward_upto_d(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                          const float *dz, int acc)
{
    const bwd bw = {k, hd, ws, acc};
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    clef_tensors *G = &hd->g;
    const int T = ws->T, Q = ws->Q, O = ws->O, d = c->d, w = c->w;
    zero(ws->dM, (size_t)T * w);
    zero(ws->dR, (size_t)O * w);
    zero(ws->dqv, (size_t)Q * d);
    zero(ws->dg, (size_t)ws->nb * d);

    score_bwd(&bw, dz); // → dR, dF = ∂L/∂F̂, dqv, dg
    // field_norm, then the field layers in reverse
    memcpy(ws->dx, ws->dF, sizeof(float) * (size_t)Q * w);
    zero(ws->dF, (size_t)Q * w);
    ln_bwd(&bw, Q, &ws->fnorm, LN(P, fn), LN(G, fn), ws->dx, ws->dF);
    if (!ws->absorb_field)
        zero(ws->dkvc, (size_t)T * c->L * 2 * w);
    for (int j = c->L - 1; j >= 0; j--)
        field_bwd(&bw, j, ws->dF);
    if (!ws->absorb_field)
        field_kv_bwd(&bw);
    summary_bwd(&bw); // dF = ∂L/∂F⁰ → dR, dqv, dg
    for (int i = c->R - 1; i >= 0; i--)
        route_bwd(&bw, i, ws->dR);
    queries_bwd(&bw);
    if (ws->pk) // op(A) = dM_bᵀ of every block of D, packed once
        d_pack(ws, w);
    if (ws->nb && ws->xrec16[0]) // bf16 x̂: D's dM in bf16, once
        k->cvt_f32_bf16((size_t)T * w, ws->dM, ws->dm16);
}

void clef_backward(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                   const float *dz, int acc)
{
    clef_backward_upto_d(k, hd, ws, dz, acc);
    const int nd = clef_memory_bwd_blocks(ws);
    for (int i = 0; i < nd; i++) // D (w, d)
        clef_memory_bwd_block(k, ws, i);
    clef_memory_bwd_finish(k, hd, ws, acc);
}

void clef_batch_backward(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                         const float *dz)
{
    clef_backward(k, hd, ws, dz, 1);
}

void clef_head_backward(const clef_kernels *k, clef_head *hd,
                        const clef_record *r, clef_ws *ws, const float *dz)
{
    (void)r; // the record of the last forward on ws
    clef_batch_backward(k, hd, ws, dz);
}

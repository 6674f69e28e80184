// The head's backward pass for a packed batch (HEAD.md §7, Appendix A):
// reverse mode through the activations the forward pass saved, accumulating
// into hd->grads (zeroed by the caller once per update). Weight gradients
// are single GEMMs over all the batch's rows (a fixed reduction order); only
// attention runs per record.
#include "acts.h"
#include "backward.h"
#include "forward.h"
#include "memattn.h"
#include "par.h"
#include "rows.h"

#include <math.h>
#include <string.h>

static void zero(float *x, size_t n) { clef_rows_zero(x, n); }

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

// The gradients of a packed in_proj bias: sums (ld) = Σ_rows of x (rows, ld)
// (one colsum kernel call), then db[i] += sums[off + i] for the blocks kept.
static void bias_blocks(const clef_kernels *k, int rows, int ld,
                        const float *x, float *sums, int n, const int *offs,
                        int nblocks, float *db)
{
    memset(sums, 0, sizeof(float) * ld);
    k->colsum(rows, ld, x, sums);
    for (int b = 0; b < nblocks; b++)
        for (int i = 0; i < n; i++)
            db[offs[b] + i] += sums[offs[b] + i];
}

// Zero by construction: a key bias shifts every score of a query row equally,
// which softmax ignores, so ∂L/∂b_k = 0 exactly; and every question's logits
// gradient sums to 0 (HEAD.md §6), so ∂L/∂residual_scorer.3.bias = 0 exactly.
// These gradients are left at exactly 0 instead of summed rounding noise,
// which AdamW (m / (√v + eps)) would otherwise turn into real updates.

// LayerNorm backward: dx += LN-back(dy); γ, β gradients accumulate.
static void ln_bwd(const clef_kernels *k, int rows, int n, const float *dy,
                   const ln_acts *a, const float *gamma, float *dx,
                   float *dgamma, float *dbeta)
{
    k->layernorm_bwd(rows, n, dy, a->xhat, a->rstd, gamma, dx, dgamma, dbeta);
}

// Backward of out = x + W₂ gelu(W₁ LN(x) + b₁) + b₂:
// dx (rows, w) = dout + LN-back(FFN-back(dout)), overwritten.
// Scratch: du, dh (rows, f); dln (rows, w).
static void ffn_bwd(const clef_kernels *k, const clef_config *c, int rows,
                    const float *dout, const ln_acts *ln, const float *ln_w,
                    float *g_ln_w, float *g_ln_b, const float *w1, float *g_w1,
                    float *g_b1, const float *h1, const float *u,
                    const float *w2, float *g_w2, float *g_b2, float *du,
                    float *dh, float *dln, float *dx, int acc)
{
    const int w = c->w, f = c->f;
    k->gemm_tn(w, f, rows, dout, w, u, f, g_w2, f, acc); // dW₂ (w, f) += doutᵀ u
    k->colsum(rows, w, dout, g_b2);
    k->gemm_nn(rows, f, w, dout, w, w2, f, du, f, 0); // du (rows, f) = dout W₂
    zero(dh, (size_t)rows * f);
    clef_rows_gelu_bwd(k, (size_t)rows * f, h1, du, dh);
    k->gemm_tn(f, w, rows, dh, f, ln->y, w, g_w1, w, acc); // dW₁ (f, w) += dhᵀ LN
    k->colsum(rows, f, dh, g_b1);
    k->gemm_nn(rows, w, f, dh, f, w1, w, dln, w, 0); // dln (rows, w) = dh W₁
    clef_rows_copy(dx, dout, (size_t)rows * w);
    ln_bwd(k, rows, w, dln, ln, ln_w, dx, g_ln_w, g_ln_b);
}

// Backward of y = resid + MHA(xq, K | V) over the batch, query side (the
// residual part is the caller's): out_proj, attention and the query rows of
// in_proj. dxq (nq, w) is overwritten; the K | V gradients are ADDED to dkv
// (nk, lddkv), which the caller zeroed. kv (nk, ldkv) as in the forward.
// Scratch: dO, dq (nq, w); att_scratch (Σ nq·nk over records: each record
// has its own slice at its map offset, so records run in parallel).
// With ab (the absorbed form, core/memattn.h) the key/value side is done
// here too: W_k, W_v, b_v gradients, and the memory gradient added to dmem
// (T, lddm); dkv is not used.
static void mha_bwd_q(const clef_kernels *k, const clef_config *c, int nb,
                      const att_rows *ar, const float *dy, const float *xq,
                      const float *in_w, const float *out_w, float *g_in_w,
                      float *g_in_b, float *g_out_w, float *g_out_b,
                      const float *q, const float *kv, int ldkv,
                      const float *att, const float *o, float *dO, float *dq,
                      float *dkv, int lddkv, float *att_scratch, float *dxq,
                      const clef_mem_absorb *ab, float *dmem, int lddm,
                      int acc)
{
    const int w = c->w, h = c->h, nq = ar->q_off[nb];
    k->gemm_tn(w, w, nq, dy, w, o, w, g_out_w, w, acc); // dW_o += dyᵀ O
    k->colsum(nq, w, dy, g_out_b);
    k->gemm_nn(nq, w, w, dy, w, out_w, w, dO, w, 0); // dO (nq, w) = dy W_o
    if (ab)
        clef_memattn_bwd(k, ab, (clef_inproj){(float *)in_w, NULL},
                         (clef_inproj){g_in_w, g_in_b}, dO, dq, dmem, acc);
    else
        zero(dq, (size_t)nq * w);
    CLEF_PAR_FOR(!ab && nb > 1, int, b, ab ? 0 : nb,
        const int q0 = ar->q_off[b], k0 = ar->k_off[b];
        const size_t qr = (size_t)q0 * w;
        const float *kvb = kv + (size_t)k0 * ldkv;
        float *dkvb = dkv + (size_t)k0 * lddkv;
        k->attention_bwd(ar->q_off[b + 1] - q0, ar->k_off[b + 1] - k0, h,
                         w / h, q + qr, w, kvb, ldkv, kvb + w, ldkv,
                         att + h * ar->m_off[b], dO + qr, w, dq + qr, w, dkvb,
                         lddkv, dkvb + w, lddkv, att_scratch + ar->m_off[b]);
    );
    k->gemm_tn(w, w, nq, dq, w, xq, w, g_in_w, w, acc); // dW_q += dqᵀ xq
    k->colsum(nq, w, dq, g_in_b);
    k->gemm_nn(nq, w, w, dq, w, in_w, w, dxq, w, 0);
}

// Key/value side of an attention whose K | V = xkv [W_k; W_v]ᵀ + b over nk
// rows, given dkv (nk, 2w) with dK in its first w columns and dV in the
// next w: [dW_k; dW_v] (2w, w) += dkvᵀ xkv, b_v += Σ dV (b_k: see above), and
// dxkv (nk, w) = or += dkv [W_k; W_v].
static void mha_bwd_kv(const clef_kernels *k, const clef_config *c, int nk,
                       const float *dkv, const float *xkv, const float *in_w,
                       float *g_in_w, float *g_in_b, float *sums, float *dxkv,
                       int accumulate, int acc)
{
    const int w = c->w, lddkv = 2 * w, v_only[1] = {w};
    k->gemm_tn(2 * w, w, nk, dkv, lddkv, xkv, w, g_in_w + (size_t)w * w, w, acc);
    bias_blocks(k, nk, lddkv, dkv, sums, w, v_only, 1, g_in_b + w); // b_v
    k->gemm_nn(nk, w, 2 * w, dkv, lddkv, in_w + (size_t)w * w, w, dxkv, w,
               accumulate);
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
    k->gemm_tn(L2w, w, T, ws->dkvc, L2w, ws->M, w, ws->dkvw, w, 0);
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
    k->gemm_nn(T, w, L2w, ws->dkvc, L2w, ws->kvw, w, ws->dM, w, 1);
}

// Section 9 backward: from dz (O) to dR (O, w) += option-norm path,
// ws->dF (Q, w) = ∂L/∂F̂ gathered per question, dqv (Q, d) and dg (d) from
// the prior anchor, and the scalar / residual-scorer gradients.
static void score_bwd(const bwd *bw, const float *dz)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    clef_tensors *G = &hd->g;
    const int Q = ws->Q, O = ws->O, d = c->d, w = c->w;
    const float kp = clef_kappa(*P->prior_scale);
    const float kj = clef_kappa(*P->joint_scale);
    const float gate = clef_sigmoid(*P->gate);

    // scalars: z = prior + σ(γ)(κ_j cos + res)
    float g_sp = 0.f, g_gate = 0.f, g_sj = 0.f;
    for (int o = 0; o < O; o++) {
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

    // residual scorer: res = W_b gelu(W_a feat + b_a) + b_b
    float *du1 = ws->dA, *dv1 = ws->dB_, *dfeat = ws->dC; // (O, w), (O, w), (O, 4w)
    const int acc = bw->acc;
    k->gemm_tn(1, w, O, ws->dres, 1, ws->u1, w, G->rs3_w, w, acc);
    k->gemm_nn(O, w, 1, ws->dres, 1, P->rs3_w, w, du1, w, 0);
    zero(dv1, (size_t)O * w);
    clef_rows_gelu_bwd(k, (size_t)O * w, ws->v1, du1, dv1);
    k->gemm_tn(w, 4 * w, O, dv1, w, ws->feat, 4 * w, G->rs0_w, 4 * w, acc);
    k->colsum(O, w, dv1, G->rs0_b);
    k->gemm_nn(O, 4 * w, w, dv1, w, P->rs0_w, 4 * w, dfeat, 4 * w, 0);

    // features [f; n; f⊙n; |f−n|] → df, dn (O, w); sign(0) = 0
    float *df = ws->dA, *dn = ws->dB_;
    const float *n = ws->onorm.y;
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
    ln_bwd(k, O, w, dn, &ws->onorm, P->on_w, ws->dR, G->on_w, G->on_b);
    // ∂L/∂F̂_q = Σ_{o∈q} df_o
    zero(ws->dF, (size_t)Q * w);
    k->scatter_add_rows(O, ws->owner, w, df, ws->dF);

    // prior: â_q = normalize(qv_q + g); nothing flows into E
    float *da = ws->dsum; // (Q, d)
    zero(da, (size_t)Q * d);
    for (int o = 0; o < O; o++) {
        float coef = kp * dz[o];
        float *dar = da + (size_t)ws->owner[o] * d;
        const float *l = ws->lhat + (size_t)o * d;
        for (int i = 0; i < d; i++)
            dar[i] += coef * l[i];
    }
    k->normalize_bwd(Q, d, CLEF_NORMALIZE_EPS, ws->a, ws->anrm, da, ws->dqv);
    for (int q = 0; q < Q; q++) { // dqv is still only t_q: dg_b += Σ_q t_q
        float *dg = ws->dg + (size_t)ws->qrec[q] * d;
        for (int i = 0; i < d; i++)
            dg[i] += ws->dqv[(size_t)q * d + i];
    }
}

// Field layer backward: dio (Q, w) holds ∂L/∂out on entry and ∂L/∂x0 on exit.
static void field_bwd(const bwd *bw, int j, float *dio)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const clef_config *c = &hd->cfg;
    const int w = c->w, h = c->h, Q = ws->Q;
    const att_rows ar = {ws->q_off, ws->t_off, ws->qt_off};
    const clef_field_tensors *p = &hd->p.field[j];
    clef_field_tensors *g = &hd->g.field[j];
    const field_acts *a = &ws->field[j];
    float *dxb = ws->dxb, *dxa = ws->dxa;

    // out = xb + FFN(LN3 xb)
    ffn_bwd(k, c, Q, dio, &a->n3, p->n3_w, g->n3_w, g->n3_b, p->l1_w, g->l1_w,
            g->l1_b, a->h1, a->u, p->l2_w, g->l2_w, g->l2_b, ws->dA, ws->dB_,
            ws->dC, dxb, bw->acc);
    // xb = xa + CA(LN2 xa, M): dK | dV into this layer's columns of dkvc
    const int L2w = c->L * 2 * w;
    // (absorbed form: the memory gradient goes straight into dM)
    const mha_view v = clef_field_view(ws, j);
    mha_bwd_q(k, c, ws->nb, &ar, dxb, a->n2.y, p->ca_in_w, p->ca_out_w,
              g->ca_in_w, g->ca_in_b, g->ca_out_w, g->ca_out_b, a->qc,
              ws->kvc + (size_t)j * 2 * w, L2w, a->ca, a->ca_o, ws->dA,
              ws->dB_, ws->dkvc + (size_t)j * 2 * w, L2w, ws->att_scratch,
              ws->dC, ws->absorb_field ? &v.ab : NULL, ws->dM, w,
              bw->acc);
    memcpy(dxa, dxb, sizeof(float) * (size_t)Q * w);
    ln_bwd(k, Q, w, ws->dC, &a->n2, p->n2_w, dxa, g->n2_w, g->n2_b);
    // xa = x0 + SA(LN1 x0): query, key and value gradients all land on LN1
    float *dO = ws->dA, *dqkv = ws->dB_, *dln = ws->dC;
    k->gemm_tn(w, w, Q, dxa, w, a->sa_o, w, g->sa_out_w, w, bw->acc);
    k->colsum(Q, w, dxa, g->sa_out_b);
    k->gemm_nn(Q, w, w, dxa, w, p->sa_out_w, w, dO, w, 0);
    zero(dqkv, (size_t)Q * 3 * w);
    CLEF_PAR_FOR(ws->nb > 1, int, b, ws->nb,
        const int q0 = ws->q_off[b], nq = ws->q_off[b + 1] - q0;
        const size_t r3 = (size_t)q0 * 3 * w;
        k->attention_bwd(nq, nq, h, w / h, a->qkv + r3, 3 * w,
                         a->qkv + r3 + w, 3 * w, a->qkv + r3 + 2 * w, 3 * w,
                         a->sa + h * ws->qq_off[b], dO + (size_t)q0 * w, w,
                         dqkv + r3, 3 * w, dqkv + r3 + w, 3 * w,
                         dqkv + r3 + 2 * w, 3 * w,
                         ws->att_scratch + ws->qq_off[b]);
    );
    k->gemm_tn(3 * w, w, Q, dqkv, 3 * w, a->n1.y, w, g->sa_in_w, w,
               bw->acc);
    const int q_and_v[2] = {0, 2 * w}; // b_k: zero by construction
    bias_blocks(k, Q, 3 * w, dqkv, ws->dbias, w, q_and_v, 2, g->sa_in_b);
    k->gemm_nn(Q, w, 3 * w, dqkv, 3 * w, p->sa_in_w, w, dln, w, 0);
    memcpy(dio, dxa, sizeof(float) * (size_t)Q * w);
    ln_bwd(k, Q, w, dln, &a->n1, p->n1_w, dio, g->n1_w, g->n1_b);
}

// Routing layer backward: dio (O, w) holds ∂L/∂out on entry and ∂L/∂R on
// exit; the memory gradient goes through memory_norm into dM.
static void route_bwd(const bwd *bw, int i, float *dio)
{
    const clef_kernels *k = bw->k;
    clef_head *hd = bw->hd;
    clef_ws *ws = bw->ws;
    const clef_config *c = &hd->cfg;
    const int w = c->w, O = ws->O, T = ws->T;
    const att_rows ar = {ws->o_off, ws->t_off, ws->ot_off};
    const clef_route_tensors *p = &hd->p.route[i];
    clef_route_tensors *g = &hd->g.route[i];
    const route_acts *a = &ws->route[i];

    ffn_bwd(k, c, O, dio, &a->fn, p->fn_w, g->fn_w, g->fn_b, p->ff1_w,
            g->ff1_w, g->ff1_b, a->h1, a->u, p->ff2_w, g->ff2_w, g->ff2_b,
            ws->dA, ws->dB_, ws->dC, ws->dR1, bw->acc);
    const mha_view v = clef_route_view(ws, i);
    // dmt (T, w) = ∂L/∂memory_norm(M): the absorbed form adds into it
    if (ws->absorb_route)
        zero(ws->dmt, (size_t)T * w);
    else
        zero(ws->dkv, (size_t)T * 2 * w);
    mha_bwd_q(k, c, ws->nb, &ar, ws->dR1, a->qn.y, p->in_w, p->out_w, g->in_w,
              g->in_b, g->out_w, g->out_b, a->q, a->kv, 2 * w, a->att, a->o,
              ws->dA, ws->dB_, ws->dkv, 2 * w, ws->att_scratch, ws->dC,
              ws->absorb_route ? &v.ab : NULL, ws->dmt, w, bw->acc);
    if (!ws->absorb_route)
        mha_bwd_kv(k, c, T, ws->dkv, a->mn.y, p->in_w, g->in_w, g->in_b,
                   ws->dbias, ws->dmt, 0, bw->acc);
    clef_rows_layernorm_bwd(k, T, w, ws->dmt, a->mn.xhat, a->mn.rstd, p->mn_w,
                            ws->dM, g->mn_w, g->mn_b, ws->ln_part);
    memcpy(dio, ws->dR1, sizeof(float) * (size_t)O * w);
    ln_bwd(k, O, w, ws->dC, &a->qn, p->qn_w, dio, g->qn_w, g->qn_b);
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
    k->gemm_tn(w, d, nb, sum, w, ws->g, d, G->W_g, d, bw->acc);
    k->gemm_nn(nb, d, w, sum, w, P->W_g, d, ws->dg, d, 1); // dg += sum W_g
    float *dS = ws->dxa; // (Q, w)
    zero(dS, (size_t)Q * w);
    ln_bwd(k, Q, w, dF0, &ws->sum, P->sum_w, dS, G->sum_w, G->sum_b);

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
    k->gemm_tn(w, d, Q, dB, w, ws->qv, d, G->W_q, d, bw->acc);
    k->gemm_nn(Q, d, w, dB, w, P->W_q, d, ws->dqv, d, 1); // dqv += dB W_q
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
    k->gemm_tn(w, d, O, dR0, w, ws->ctx, d, G->W_c, d, acc);
    k->gemm_nn(O, d, w, dR0, w, P->W_c, d, ws->dctx, d, 0); // (O, d)
    k->gemm_tn(w, d, O, dR0, w, ws->lex, d, G->W_l, d, acc);
    float *Pq = ws->dx; // (Q, w) Σ_{o∈q} dR⁰_o
    zero(Pq, (size_t)Q * w);
    k->scatter_add_rows(O, ws->owner, w, dR0, Pq);
    k->gemm_tn(w, d, Q, Pq, w, ws->qv, d, G->W_oq, d, acc);
    k->gemm_nn(Q, d, w, Pq, w, P->W_oq, d, ws->dqv, d, 1);
}

// Sections 1-2 backward. X = x̂ ⊙ γ + β is never differentiated row by row:
// with D = dMᵀ x̂ (w, d) and c = Σ_t dM_t (w), one T×d×w product gives
//   dW_m += D ⊙ γ + c βᵀ,  dγ += Σ_j W_m ⊙ D,  dβ += cᵀ W_m,
// and the span means add dγ += dqv ⊙ q̂v + dctx ⊙ ĉtx + dg ⊙ x̂_{T−1}.
// D (w, d) = dMᵀ x̂ = Σ_b dM_bᵀ x̂_b (records in order: x̂ stays in each
// record) is computed in d_chunks column blocks, fixed by the
// shape and never by the thread count (a block's bits do not depend on who
// runs it), so that the update's AdamW can share the team with it
// (core/train.c):
// about one block per ws->d_block_flops of D (default 2 GFLOP: ~20 ms on
// one core; the team then waits at most about the last, smallest block;
// 1 GFLOP split mid batch 4's D in two and cost it 1-2 %), at most 8. dM is
// packed once for all of them when the backend pre-packs (ws->pk, dm_pk),
// else each block packs all of dM again (a w×T copy). The blocks
// shrink towards the end (d_bound), so the thread that ends AdamW
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
        const float *xb = ws->xrec[b] + j0;
        float *D = ws->dwd + j0;
        if (ws->pk && ws->pk->gemm_pa(0, w, j1 - j0, Tb,
                                      ws->dm_pk + ws->pk_a_off[b], xb, d, D,
                                      d, b > 0) == 0)
            continue;
        k->gemm_tn(w, j1 - j0, Tb, ws->dM + (size_t)t0 * w, w, xb, d, D, d,
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

// Columns [i0, i1) of dW_m (w, d) = D ⊙ γ + c βᵀ (added unless fresh), and
// of dγ += Σ_j W_m ⊙ D, dβ += cᵀ W_m, summed over rows j in order. Blocks of
// 256 columns: each row's segment is 1 KiB of four streams (64 columns left
// the prefetchers behind and the loop took 15 ms of a released update).
#define WM_BLOCK 256
static void wm_grad_cols(int w, int d, int i0, int i1, const float *restrict D,
                         const float *restrict W, const float *restrict c,
                         const float *restrict gamma, const float *restrict beta,
                         float *restrict gW, float *restrict g_gamma,
                         float *restrict g_beta, int fresh)
{
    for (int j = 0; j < w; j++) {
        const float *Dj = D + (size_t)j * d, *Wj = W + (size_t)j * d;
        float *gWj = gW + (size_t)j * d;
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

void clef_memory_bwd_finish(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                            int acc)
{
    const clef_config *c = &hd->cfg;
    const clef_tensors *P = &hd->p;
    clef_tensors *G = &hd->g;
    const int T = ws->T, Q = ws->Q, O = ws->O, d = c->d, w = c->w;
    float *D = ws->dwd, *cs = ws->dvec; // D (w, d) from the blocks
    zero(cs, w);
    k->colsum(T, w, ws->dM, cs);
    // threads own column blocks; each column sums over j in order
    const int nblk = (d + WM_BLOCK - 1) / WM_BLOCK;
    CLEF_PAR_FOR((size_t)w * d > (1 << 16), int, blk, nblk,
        const int i0 = blk * WM_BLOCK, i1 = d - i0 < WM_BLOCK ? d : i0 + WM_BLOCK;
        wm_grad_cols(w, d, i0, i1, D, P->W_m, cs, P->hn_w, P->hn_b, G->W_m,
                     G->hn_w, G->hn_b, !acc);
    );
    for (int q = 0; q < Q; q++)
        for (int i = 0; i < d; i++) {
            G->hn_w[i] += ws->dqv[(size_t)q * d + i] * ws->qvhat[(size_t)q * d + i];
            G->hn_b[i] += ws->dqv[(size_t)q * d + i];
        }
    for (int o = 0; o < O; o++)
        for (int i = 0; i < d; i++) {
            G->hn_w[i] +=
                ws->dctx[(size_t)o * d + i] * ws->ctxhat[(size_t)o * d + i];
            G->hn_b[i] += ws->dctx[(size_t)o * d + i];
        }
    for (int b = 0; b < ws->nb; b++) { // g_b = X at the record's T−1
        const float *xlast =
            ws->xrec[b] + (size_t)(ws->t_off[b + 1] - ws->t_off[b] - 1) * d;
        const float *dg = ws->dg + (size_t)b * d;
        for (int i = 0; i < d; i++) {
            G->hn_w[i] += dg[i] * xlast[i];
            G->hn_b[i] += dg[i];
        }
    }
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

void clef_grads_prepare(clef_head *hd)
{
    for (int t = 0; t < hd->ntensors; t++) {
        float *g = hd->grads + hd->tensors[t].offset;
        if (!owned_by_a_pass(hd, g))
            memset(g, 0, sizeof(float) * hd->tensors[t].numel);
    }
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
    ln_bwd(k, Q, w, ws->dx, &ws->fnorm, P->fn_w, ws->dF, G->fn_w, G->fn_b);
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

// Floating-point work of one training update, counted from the GEMMs and
// attention products the head executes (core/forward.c, core/backward.c):
// 2·M·N·K per product. Elementwise ops, LayerNorms and AdamW are not
// counted (they are memory-bound), so a FLOP rate computed from this is a
// lower bound on the work done.
#include "head.h"
#include "memattn.h"

// The forward work of one memory attention of nq queries over T rows: the
// K | V projections and the core (Q Kᵀ, A V), or the absorbed form
// (core/memattn.h): q W_k,h and mt W_v,hᵀ per head, then qt memᵀ and A mem
// over all heads. Either way the backward pass does each product twice.
static double memattn_flops(const clef_config *c, double T, double nq,
                            int absorb)
{
    const double w = c->w, h = c->h;
    if (absorb)
        return 2 * nq * w * w * 2        // q W_k,h and mt W_v,hᵀ, all h
               + 2 * h * nq * T * w * 2; // qt memᵀ and A mem
    return 2 * T * 2 * w * w             // K, V of memory
           + 2 * nq * T * w * 2;         // Q Kᵀ and A V
}

// Σ over records of one record's products, forward only or forward+backward;
// absorb_route / absorb_field: the form each memory attention ran in.
static double record_flops(const clef_config *c, double T, double Q, double O,
                           int backward, int absorb_route, int absorb_field)
{
    const double d = c->d, w = c->w, f = c->f;
    double fwd = 0, bwd = 0;
    // memory projection: forward M = X W_mᵀ; backward one product dMᵀ x̂
    fwd += 2 * T * w * d;
    bwd += 2 * T * w * d;
    // option queries: ctx W_cᵀ, lex W_lᵀ, qv W_oqᵀ; backward: dW_c, dctx,
    // dW_l (lex is frozen: no input gradient), dW_oq, dqv
    fwd += 2 * O * w * d * 2 + 2 * Q * w * d;
    bwd += 2 * O * w * d * 3 + 2 * Q * w * d * 2;
    for (int i = 0; i < c->R; i++) {
        double lin = 2 * O * w * w * 2    // queries, out_proj
                     + 2 * O * f * w * 2; // feed-forward
        fwd += lin;
        bwd += 2 * lin; // weight + input grads
        fwd += memattn_flops(c, T, O, absorb_route);
        bwd += 2 * memattn_flops(c, T, O, absorb_route);
    }
    // summary keys B = qv W_qᵀ, W_g g, residual scorer
    double head_lin = 2 * Q * w * d + 2 * w * d + 2 * O * w * 4 * w + 2 * O * w;
    fwd += head_lin;
    bwd += 2 * head_lin;
    for (int j = 0; j < c->L; j++) {
        double lin = 2 * Q * 3 * w * w + 2 * Q * w * w // self-attn
                     + 2 * Q * w * w * 2               // cross-attn q, out
                     + 2 * Q * f * w * 2;              // feed-forward
        double att = 2 * Q * Q * w * 2;                // self-attn core
        fwd += lin + att;
        bwd += 2 * lin + 2 * att;
        fwd += memattn_flops(c, T, Q, absorb_field);
        bwd += 2 * memattn_flops(c, T, Q, absorb_field);
    }
    return backward ? fwd + bwd : fwd;
}

// The forms auto picks for this batch (clef_batch_forward's rule).
static void batch_forms(const clef_config *c, const clef_record *const *recs,
                        int n, int mode, int *route, int *field)
{
    double T = 0, OT = 0, QT = 0;
    for (int b = 0; b < n; b++) {
        T += recs[b]->T;
        OT += (double)recs[b]->O * recs[b]->T;
        QT += (double)recs[b]->Q * recs[b]->T;
    }
    *route = clef_memattn_absorbs(mode, c->w, c->h, OT, T);
    *field = clef_memattn_absorbs(mode, c->w, c->h, QT, T);
}

double clef_update_flops(const clef_config *c, const clef_record *const *recs,
                         int n, const char *memory_attention)
{
    int mode = clef_memattn_mode(memory_attention), ar, af;
    if (mode < 0) // NULL or unknown: auto
        mode = CLEF_MEMATTN_AUTO;
    batch_forms(c, recs, n, mode, &ar, &af);
    double s = 0;
    for (int b = 0; b < n; b++)
        s += record_flops(c, recs[b]->T, recs[b]->Q, recs[b]->O, 1, ar, af);
    return s;
}

double clef_forward_flops(const clef_config *c, const clef_record *r)
{
    int ar, af;
    batch_forms(c, &r, 1, CLEF_MEMATTN_AUTO, &ar, &af);
    return record_flops(c, r->T, r->Q, r->O, 0, ar, af);
}

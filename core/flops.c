// Floating-point work of one training update, counted from the GEMMs and
// attention products the head executes (core/forward.c, core/backward.c):
// 2·M·N·K per product. Elementwise ops, LayerNorms and AdamW are not
// counted (they are memory-bound), so a FLOP rate computed from this is a
// lower bound on the work done.
#include "head.h"

// Σ over records of one record's products, forward only or forward+backward.
static double record_flops(const clef_config *c, double T, double Q, double O,
                           int backward)
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
        double lin = 2 * T * 2 * w * w           // K, V of memory
                     + 2 * O * w * w * 2         // queries, out_proj
                     + 2 * O * f * w * 2;        // feed-forward
        double att = 2 * O * T * w * 2;          // Q Kᵀ and A V
        fwd += lin + att;
        bwd += 2 * lin + 2 * att;                // weight + input grads
    }
    // summary keys B = qv W_qᵀ, W_g g, residual scorer
    double head_lin = 2 * Q * w * d + 2 * w * d + 2 * O * w * 4 * w + 2 * O * w;
    fwd += head_lin;
    bwd += 2 * head_lin;
    for (int j = 0; j < c->L; j++) {
        double lin = 2 * Q * 3 * w * w + 2 * Q * w * w      // self-attn
                     + 2 * Q * w * w * 2 + 2 * T * 2 * w * w // cross-attn
                     + 2 * Q * f * w * 2;                   // feed-forward
        double att = 2 * Q * Q * w * 2 + 2 * Q * T * w * 2;
        fwd += lin + att;
        bwd += 2 * lin + 2 * att;
    }
    return backward ? fwd + bwd : fwd;
}

double clef_update_flops(const clef_config *c, const clef_record *const *recs,
                         int n)
{
    double s = 0;
    for (int b = 0; b < n; b++)
        s += record_flops(c, recs[b]->T, recs[b]->Q, recs[b]->O, 1);
    return s;
}

double clef_forward_flops(const clef_config *c, const clef_record *r)
{
    return record_flops(c, r->T, r->Q, r->O, 0);
}

// Activations saved by the forward pass of one record and the scratch the
// backward pass needs (private to core/forward.c and core/backward.c).
// Sizes are for the workspace's maxima Tmax, Qmax, Omax.
#ifndef CLEF_ACTS_H
#define CLEF_ACTS_H

#include "head.h"

// A LayerNorm's saved state: y (rows, n), xhat (rows, n), rstd (rows).
typedef struct ln_acts {
    float *y, *xhat, *rstd;
} ln_acts;

typedef struct route_acts {
    ln_acts mn;  // memory_norm(M)        (T, w)
    float *kv;   // K | V of memory       (T, 2w)
    ln_acts qn;  // query_norm(R)         (O, w)
    float *q;    // queries               (O, w)
    float *att;  // probabilities         (h, O, T)
    float *o;    // attention output      (O, w)
    float *r1;   // R' = R + MHA          (O, w)
    ln_acts fn;  // feedforward_norm(R')  (O, w)
    float *h1;   // pre-GELU              (O, f)
    float *u;    // GELU(h1)              (O, f)
    float *out;  // R' + FFN              (O, w)
} route_acts;

typedef struct field_acts {
    ln_acts n1;   // norm1(x0)            (Q, w)
    float *qkv;   // self-attn Q | K | V  (Q, 3w)
    float *sa;    // probabilities        (h, Q, Q)
    float *sa_o;  // self-attn output     (Q, w)
    float *xa;    // x0 + SA              (Q, w)
    ln_acts n2;   // norm2(xa)            (Q, w)
    float *qc;    // cross-attn queries   (Q, w)
    float *kvc;   // K | V of raw memory  (T, 2w)
    float *ca;    // probabilities        (h, Q, T)
    float *ca_o;  // cross-attn output    (Q, w)
    float *xb;    // xa + CA              (Q, w)
    ln_acts n3;   // norm3(xb)            (Q, w)
    float *h1;    // pre-GELU             (Q, f)
    float *u;     // GELU(h1)             (Q, f)
    float *out;   // xb + FFN             (Q, w)
} field_acts;

struct clef_ws {
    clef_config cfg;
    int Tmax, Qmax, Omax;
    float *arena;
    // ---- forward ----
    float *X;      // X = xhat ⊙ γ + β         (T, d)
    float *M;      // memory X W_mᵀ             (T, w)
    float *qv;     // question vectors          (Q, d)
    float *ctx;    // option context means      (O, d)
    float *g;      // global vector X[T-1]      (d)
    float *qo;     // qv W_oqᵀ                  (Q, w)
    float *r0;     // option queries R⁰         (O, w)
    route_acts *route; // [R]
    float *R;      // final option states       (O, w)
    float *B;      // question keys qv W_qᵀ     (Q, w)
    float *s;      // summary scores            (O)
    float *alpha;  // summary softmax           (O)
    float *S;      // summaries                 (Q, w)
    ln_acts sum;   // option_summary_norm(S)    (Q, w)
    float *gw;     // W_g g                     (w)
    float *F0;     // field stream input        (Q, w)
    field_acts *field; // [L]
    ln_acts fnorm; // field_norm(F^L) = F̂       (Q, w)
    float *fo;     // f_o = F̂[owner(o)]         (O, w)
    ln_acts onorm; // option_norm(R) = n        (O, w)
    float *fhat, *nhat, *fnrm, *nnrm; // cosine state (O, w), (O)
    float *cos;    // cos_o                     (O)
    float *feat;   // [f; n; f⊙n; |f−n|]        (O, 4w)
    float *v1;     // residual_scorer.0 output  (O, w)
    float *u1;     // GELU(v1)                  (O, w)
    float *res;    // residual scores           (O)
    float *lhat, *lnrm; // normalize(lex)       (O, d), (O)
    float *a, *anrm;    // normalize(qv + g)    (Q, d), (Q)
    float *prior;  // prior_o                   (O)
    int *owner;    // question of each option   (O)
    float *z, *p, *dz; // logits, probabilities, ∂L/∂z (O) for training
    // ---- backward scratch ----
    float *dM;            // (T, w)
    float *dkv, *dmt;     // (T, 2w), (T, w)
    float *dA, *dB_, *dC; // (max(O,Q), max(4w, f, 3w)) each
    float *dR, *dR1;      // (O, w)
    float *dF, *dx;       // (Q, w)
    float *dqv, *dctx;    // (Q, d), (O, d)
    float *dg;            // (d)
    float *dsum;          // (max(Q,1), max(w, d))
    float *att_scratch;   // (max(O, Q) · max(T, Q))
    float *dcos, *dres;   // (O) ∂L/∂cos, ∂L/∂res
    float *dalpha, *ds;   // (O) summary softmax gradients
    float *dxa, *dxb;     // (Q, w) field residual stream gradients
    float *dwd;           // (w, d) dMᵀ x̂ for the memory projection
    float *dvec;          // (max(w, d)) a column sum
};

#endif

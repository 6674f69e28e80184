// Activations saved by the forward pass of one batch and the scratch the
// backward pass needs (private to core/). A batch is packed: the memory rows,
// question rows and option rows of its records are stacked (T = Σ T_b rows,
// Q = Σ Q_b, O = Σ O_b), so every row-wise op (projections, LayerNorms,
// FFNs) is one large call over the whole batch and no padding is ever
// computed; only attention and the per-question softmaxes see record bounds.
// Sizes below are batch totals, bounded by the workspace's clef_ws_limits.
#ifndef CLEF_ACTS_H
#define CLEF_ACTS_H

#include "dropout.h"
#include "head.h"
#include "memattn.h"

// A LayerNorm's saved state: y (rows, n), xhat (rows, n), rstd (rows).
typedef struct ln_acts {
    float *y, *xhat, *rstd;
} ln_acts;

typedef struct route_acts {
    ln_acts mn;       // memory_norm(M)        (T, w)
    float *kv;        // K | V of memory       (T, 2w)
    ln_acts qn;       // query_norm(R)         (O, w)
    float *q;         // queries               (O, w)
    float *att;       // probabilities         (h, O, T)
    float *qt, *mt;   // absorbed form (core/memattn.h)   (h·O, w) each
    clef_mempack mpk; // mn.y pre-packed (nt, nn: clef_mempack_bound each)
                      // or transposed (t: T·w when too narrow to pack)
    float *o;         // attention output      (O, w)
    float *r1;        // R' = R + MHA          (O, w)
    ln_acts fn;       // feedforward_norm(R')  (O, w)
    float *h1;        // pre-GELU              (O, f)
    float *u;         // GELU(h1)              (O, f)
    float *out;       // R' + FFN              (O, w)
} route_acts;

typedef struct field_acts {
    ln_acts n1;     // norm1(x0)            (Q, w)
    float *qkv;     // self-attn Q | K | V  (Q, 3w)
    float *sa;      // probabilities        (h, Q, Q)
    float *sa_o;    // self-attn output     (Q, w)
    float *xa;      // x0 + SA              (Q, w)
    ln_acts n2;     // norm2(xa)            (Q, w)
    float *qc;      // cross-attn queries   (Q, w)
    float *ca;      // probabilities        (h, Q, T)
    float *qt, *mt; // absorbed form (core/memattn.h)  (h·Q, w) each
    float *ca_o;    // cross-attn output    (Q, w)
    float *xb;      // xa + CA              (Q, w)
    ln_acts n3;     // norm3(xb)            (Q, w)
    float *h1;      // pre-GELU             (Q, f)
    float *u;       // GELU(h1)             (Q, f)
    float *out;     // xb + FFN             (Q, w)
} field_acts;

struct clef_ws {
    clef_config cfg;
    clef_ws_limits lim;
    float *arena;
    size_t arena_bytes; // clef_big_free's size
    // ---- the batch's index (clef_batch_index) ----
    int nb;                           // records in the batch
    int T, Q, O;                      // total rows
    int *t_off, *q_off, *o_off;       // (nb+1) row offsets per record
    size_t *ot_off, *qt_off, *qq_off; // (nb+1) offsets of attention maps
    int *qrec;                        // (Q) record of each question
    int *qtype;                       // (Q)
    int *is_score;                    // (Q)
    int *opt_off;                     // (Q+1) batch-global option offsets
    int all_targets;                  // every question has a target
    // memory attentions: CLEF_MEMATTN_* requested, and for this batch
    // whether the routing / field layers run the absorbed form
    int memattn, absorb_route, absorb_field;
    double d_block_flops; // the memory backward's D blocks (backward.c)
    // Pre-packed GEMM operands (kernels.h) for this batch, or NULL: the
    // memories of the absorbed attentions and dM for D. prepack_off: the
    // workspace was told not to (clef_ws_set_prepack, CLEF_PREPACK=0).
    const clef_gemm_prepack *pk;
    // a head too narrow to pack keeps its memories transposed instead
    // (clef_mempack.transposed): the table doing that, or NULL
    const clef_gemm_prepack *pk_t;
    int prepack_off;
    int round_mem; // bf16: the memories rounded once (clef_mempack.m16)
    size_t *pk_nt_off, *pk_nn_off; // (nb+1) record offsets in every pack
    clef_mempack field_mpk;        // M pre-packed (clef_mempack_bound each)
                                   // or transposed (t: T·w, narrow heads)
    float *dm_pk;                  // dM pre-packed as op(A) of D, per record
    size_t *pk_a_off;              // (nb+1) record offsets in dm_pk
    // packed per-record constants (pointers into the record when nb == 1)
    // x̂ stays in each record (a T_b×d copy would be the batch's largest
    // stream): xrec[b] is record b's (T_b, d), read per record
    const float **xrec;      // (B)
    const uint16_t **xrec16; // (B) the records' bf16 x̂ (keep_bf16), or NULL
    uint16_t *dm16;          // (T, w) dM in bf16 for D when x̂ is bf16
    const float *qvhat, *ctxhat, *lex, *lhat;
    float *qvhat_b, *ctxhat_b, *lex_b, *lhat_b; // copies for nb > 1
    float *target;                              // (O) targets, packed
    // ---- forward ----
    float *X;          // X = x̂ ⊙ γ + β            (T, d)
    float *M;          // memory X W_mᵀ             (T, w)
    float *qv;         // question vectors          (Q, d)
    float *ctx;        // option context means      (O, d)
    float *g;          // global vectors X[T_b-1]   (nb, d)
    float *qo;         // qv W_oqᵀ                  (Q, w)
    float *r0;         // option queries R⁰         (O, w)
    route_acts *route; // [R]
    float *R;          // final option states       (O, w)
    float *B;          // question keys qv W_qᵀ     (Q, w)
    float *s;          // summary scores            (O)
    float *alpha;      // summary softmax           (O)
    float *S;          // summaries                 (Q, w)
    ln_acts sum;       // option_summary_norm(S)    (Q, w)
    float *gw;         // g W_gᵀ                    (nb, w)
    float *F0;         // field stream input        (Q, w)
    field_acts *field; // [L]
    // The field layers' cross-attentions all read the raw memory M, so their
    // K | V projections are one GEMM: kvw stacks the L layers' [W_k; W_v]
    // (L·2w, w), kvb their biases (L·2w), kvc = M kvwᵀ + kvb (T, L·2w);
    // layer j's K | V are columns [2wj, 2wj + 2w).
    float *kvw, *kvb, *kvc;
    ln_acts fnorm;                    // field_norm(F^L) = F̂       (Q, w)
    float *fo;                        // f_o = F̂[owner(o)]         (O, w)
    ln_acts onorm;                    // option_norm(R) = n        (O, w)
    float *fhat, *nhat, *fnrm, *nnrm; // cosine state (O, w), (O)
    float *cos;                       // cos_o                     (O)
    float *feat;                      // [f; n; f⊙n; |f−n|]        (O, 4w)
    float *v1;                        // residual_scorer.0 output  (O, w)
    float *u1;                        // GELU(v1)                  (O, w)
    float *res;                       // residual scores           (O)
    float *a, *anrm;                  // normalize(qv + g)    (Q, d), (Q)
    float *prior;                     // prior_o                   (O)
    int *owner;                       // question of each option   (O)
    float *z, *p, *dz; // logits, probabilities, ∂L/∂z (O) for training
    // ---- backward scratch ----
    float *dM;            // (T, w)
    float *dkv, *dmt;     // (T, 2w), (T, w)
    float *dA, *dB_, *dC; // (max(O,Q), max(4w, f, 3w)) each
    float *dR, *dR1;      // (O, w)
    float *dF, *dx;       // (Q, w)
    float *dqv, *dctx;    // (Q, d), (O, d)
    float *dg;            // (nb, d)
    float *dsum;          // (max(Q,1), max(w, d))
    float
        *att_scratch; // (max(Σ O_b·T_b, Σ Q_b·T_b, Σ Q_b²)): a slice per record
    float *dcos, *dres;   // (O) ∂L/∂cos, ∂L/∂res
    float *dalpha, *ds;   // (O) summary softmax gradients
    float *dxa, *dxb;     // (Q, w) field residual stream gradients
    float *dwd;           // (w, d) dMᵀ x̂ for the memory projection
    float *dvec;          // (max(nb·w, d)) column sums
    float *dkvc, *dkvw;   // (T, L·2w), (L·2w, w): the stacked K | V grads
    float *dbias;         // (max(3w, L·2w)) packed in_proj bias sums
    float *ln_part;       // memory_norm backward's chunk sums (rows.h)
    float *mscr1, *mscr2; // (h·max(O,Q), w) absorbed-form scratch
    float *mascr; // (2·h·max(Σ O_b·T_b, Σ Q_b·T_b, Σ Q_b²)) its dA,
                  // dS; the weights' dropout scratch (mha_view)
    // ---- dropout (core/dropout.h): set per sub-batch by clef_train_step,
    // off for every other forward ----
    clef_dropout drop;
    float *drop_t; // (max(O,Q), w) an output's dropout scratch
};

#endif

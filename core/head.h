// The joint schema head (HEAD.md): configuration, the flat parameter buffer,
// records, forward, loss, backward and AdamW.
#ifndef CLEF_HEAD_H
#define CLEF_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "kernels.h"

// ---- configuration (HEAD.md §1) ----
typedef struct clef_config {
    int d; // hidden_size: backbone width
    int w; // width
    int h; // heads (dh = w / h)
    int f; // feedforward
    int R; // routing_layers
    int L; // layers
} clef_config;

// The largest hidden_size, width or feedforward accepted from any file.
#define CLEF_DIM_MAX 65536
// Checks the configuration (positive sizes, w divisible by h, sizes at most
// CLEF_DIM_MAX, the head's memory within the machine's). 0 or error.
int clef_config_check(const clef_config *c, const char *file, clef_err *err);
size_t clef_param_count(const clef_config *c);
int clef_tensor_count(const clef_config *c); // 22 + 14R + 18L

// ---- parameters: one flat buffer, the 122 tensors in state-dict order ----
#define CLEF_NAME_MAX 96
typedef struct clef_tensor_info {
    char name[CLEF_NAME_MAX]; // state-dict key
    int ndim;                 // 0 (scalar), 1 or 2
    int shape[2];
    size_t offset; // in floats, into params / grads / m / v
    size_t numel;
    int decays_in_weights_scope; // 1: decays under --decay-scope weights
} clef_tensor_info;

enum { CLEF_QTYPE_NOUL = 0, CLEF_QTYPE_CHOICE = 1, CLEF_QTYPE_SCORE = 2 };

// Pointers into a flat buffer for one routing (evidence) layer.
typedef struct clef_route_tensors {
    float *qn_w, *qn_b;   // query_norm (w)
    float *mn_w, *mn_b;   // memory_norm (w)
    float *in_w, *in_b;   // attention.in_proj (3w, w), (3w)
    float *out_w, *out_b; // attention.out_proj (w, w), (w)
    float *fn_w, *fn_b;   // feedforward_norm (w)
    float *ff1_w, *ff1_b; // feedforward.0 (f, w), (f)
    float *ff2_w, *ff2_b; // feedforward.3 (w, f), (w)
} clef_route_tensors;

// Pointers into a flat buffer for one field (decoder) layer.
typedef struct clef_field_tensors {
    float *sa_in_w, *sa_in_b;   // self_attn.in_proj (3w, w), (3w)
    float *sa_out_w, *sa_out_b; // self_attn.out_proj (w, w), (w)
    float *ca_in_w, *ca_in_b;   // multihead_attn.in_proj (3w, w), (3w)
    float *ca_out_w, *ca_out_b; // multihead_attn.out_proj (w, w), (w)
    float *l1_w, *l1_b;         // linear1 (f, w), (f)
    float *l2_w, *l2_b;         // linear2 (w, f), (w)
    float *n1_w, *n1_b, *n2_w, *n2_b, *n3_w, *n3_b; // norm1..3 (w)
} clef_field_tensors;

// Every tensor of the head, as pointers into one flat buffer (params, grads,
// AdamW m or v: they share the layout).
typedef struct clef_tensors {
    float *prior_scale, *joint_scale, *gate;   // scalars s_p, s_j, γ
    float *hn_w, *hn_b;                        // hidden_norm (d)
    float *W_m, *W_q, *W_oq, *W_g, *W_c, *W_l; // projections (w, d)
    float *type_emb;                           // (3, w)
    clef_route_tensors *route;                 // [R]
    float *sum_w, *sum_b;                      // option_summary_norm (w)
    clef_field_tensors *field;                 // [L]
    float *fn_w, *fn_b;                        // field_norm (w)
    float *on_w, *on_b;                        // option_norm (w)
    float *rs0_w, *rs0_b;                      // residual_scorer.0 (w, 4w), (w)
    float *rs3_w, *rs3_b;                      // residual_scorer.3 (1, w), (1)
} clef_tensors;

typedef struct clef_head {
    clef_config cfg;
    int ntensors;
    clef_tensor_info *tensors; // [ntensors], state-dict order
    size_t nparams;
    float *params, *grads, *m, *v; // (nparams) each, same layout
    clef_tensors p, g;             // views of params and grads
    long step;                     // AdamW steps taken
} clef_head;

// Allocates a head with zeroed parameters, gradients and moments.
int clef_head_alloc(clef_head *hd, const clef_config *cfg, clef_err *err);
void clef_head_free(clef_head *hd);
// Index of tensor `name`, or -1.
int clef_head_find(const clef_head *hd, const char *name);
// Fresh PyTorch-style initialisation (HEAD.md §8) from a seeded generator.
void clef_head_init_random(clef_head *hd, uint64_t seed);
// Views of any flat buffer laid out like the parameters. Caller frees with
// clef_tensors_free (only the layer arrays are allocated).
int clef_tensors_view(const clef_config *c, float *base, clef_tensors *t);
void clef_tensors_free(clef_tensors *t);

// ---- one record (HEAD.md §3) ----
typedef struct clef_record {
    char *id;
    int split; // CLEF_SPLIT_*
    int T, d;
    float *H;     // (T, d) frozen hidden states
    uint16_t *Hh; // (T, d) the same as the shard stores them, F16 or BF16
    int Hh_f16;   // (clef_package_read_half): H is NULL then; 1 for F16
    int *ids;     // (T) lexical rows
    int Q, O;
    int *qtype;    // (Q) CLEF_QTYPE_*
    int *is_score; // (Q) qtype == score (set by clef_record_prepare)
    int *qspan;    // (Q, 2) half-open
    int *
        opt_off; // (Q+1) option o of question q: opt_off[q] <= o < opt_off[q+1]
    int *ospan;  // (O, 2)
    int *has_target; // (Q) 0 for a test record question without label/target
    int *label;      // (Q) label index, or -1 when a soft target is given
    float *target; // (O) target distribution per question (one-hot for a label)
    char **qid;    // (Q) question ids (may be NULL in tests)
    char **oid;    // (O) option ids (may be NULL in tests)
    // Per-record constants (clef_record_prepare): H and E are frozen.
    float *xhat;      // (T, d) (H − μ) / σ per row
    uint16_t *xhat16; // (T, d) x̂ in bf16 (clef_record_keep_bf16: then
                      // xhat and H are NULL; clef_record_add_bf16: beside)
    float *qvhat;     // (Q, d) span means of xhat over question spans
    float *ctxhat;    // (O, d) span means of xhat over option spans
    float *lex;       // (O, d) span means of E[ids] over option spans
    float *lhat;      // (O, d) normalize(lex): the prior's lexical side
} clef_record;

enum { CLEF_SPLIT_TRAIN = 0, CLEF_SPLIT_VALIDATION = 1, CLEF_SPLIT_TEST = 2 };

// Computes xhat, qvhat, ctxhat and lex from H and the lexical table E (V, d).
int clef_record_prepare(const clef_kernels *k, clef_record *r, const float *E,
                        int V, clef_err *err);
void clef_record_free(clef_record *r); // frees every member, not r itself
// For a head that runs in bf16 (core/mm.h): keeps x̂ rounded to bf16 by k
// (a quarter of x̂ and H in fp32) and frees xhat and H, which nothing reads
// once the record is prepared. Such a record runs only on a bf16 table.
// 0, or -1 when out of memory (the record unchanged).
int clef_record_keep_bf16(const clef_kernels *k, clef_record *r);
// x̂ rounded to bf16 by k beside the float x̂ (both kept): a record that
// runs on fp32 and bf16 tables alike, each reading its own copy, so each
// gives the bits of a record prepared for it alone. 0, or -1 when out of
// memory (the record unchanged).
int clef_record_add_bf16(const clef_kernels *k, clef_record *r);

// ---- forward / backward workspace for a batch of records ----
// A batch is executed packed (core/acts.h): the workspace is sized by the
// largest batch totals it will see.
typedef struct clef_ws_limits {
    int B;             // records per batch
    int T, Q, O;       // Σ T_b, Σ Q_b, Σ O_b
    size_t OT, QT, QQ; // Σ O_b·T_b, Σ Q_b·T_b, Σ Q_b² (attention maps)
} clef_ws_limits;
typedef struct clef_ws clef_ws; // opaque: activations saved for backward
clef_ws *clef_ws_create_limits(const clef_config *c, const clef_ws_limits *l);
// One record of at most Tmax positions, Qmax questions and Omax options.
clef_ws *clef_ws_create(const clef_config *c, int Tmax, int Qmax, int Omax);
// Limits that cover any batch of up to B of these records (the sums of the
// B largest of each quantity).
void clef_ws_limits_for(const clef_record *recs, int nrec, int B,
                        clef_ws_limits *l);
void clef_ws_free(clef_ws *ws);
// How the six memory attentions run (docs/DESIGN.md): "auto" (the default:
// per batch, the form with fewer multiply-adds), "project" (K and V of every
// memory row, as the reference computes them) or "absorb" (the projections
// folded into the few queries: core/memattn.h). Returns 0, or -1 for an
// unknown name. The numbers agree to float rounding either way.
int clef_ws_set_memory_attention(clef_ws *ws, const char *mode);
// The work per column block of the memory backward's D = dMᵀ x̂ (the
// blocks that share the team with AdamW, core/train.c): about one block
// per `flops` (default CLEF_D_BLOCK_FLOPS), at most 8. Tests set it small to
// split D on small heads; results match for any value to float rounding.
#define CLEF_D_BLOCK_FLOPS 2e9
void clef_ws_set_d_block_flops(clef_ws *ws, double flops);
// Pre-packed GEMM operands (kernels.h, clef_gemm_prepack): with a backend
// that has them and a head of width ≥ 64 (clef_ws_prepacks), each record's
// memory is packed once per batch for every memory attention that reads it,
// and dM once for every block of D. On by default; `on` 0 (or
// CLEF_PREPACK=0 at creation) packs per product instead. Same bits either
// way whenever the plain GEMMs take their packed path.
void clef_ws_set_prepack(clef_ws *ws, int on);
// Dropout (core/dropout.h) for the next forward and backward passes on ws:
// probability p (0: off), masks of update `step` of a run seeded `seed`,
// the batch's first record being record rec0 of its update. clef_train_step
// sets it per pass and turns it off after; tests set it directly.
void clef_ws_set_dropout(clef_ws *ws, double p, uint64_t seed, long step,
                         int rec0);
int clef_ws_prepacks(const clef_config *c);

// Forward (HEAD.md §5) of a batch: z (Σ O_b) = the records' logits, packed in
// order. Saves activations in ws.
void clef_batch_forward(const clef_kernels *k, const clef_head *hd,
                        const clef_record *const *recs, int n, clef_ws *ws,
                        float *z);
// Backward (HEAD.md §7, Appendix A) of the last batch forward on ws, given
// dz (Σ O_b) = ∂L/∂z: accumulates into hd->grads.
void clef_batch_backward(const clef_kernels *k, clef_head *hd, clef_ws *ws,
                         const float *dz);
// The same for one record.
void clef_head_forward(const clef_kernels *k, const clef_head *hd,
                       const clef_record *r, clef_ws *ws, float *z);
void clef_head_backward(const clef_kernels *k, clef_head *hd,
                        const clef_record *r, clef_ws *ws, const float *dz);

// ---- loss and training ----
// Settings are doubles, like PyTorch's Python scalars: bias corrections and
// step sizes are computed in double and rounded to float once.
typedef struct clef_train_opts {
    double lr, beta1, beta2, eps, weight_decay;
    int decay_all;        // 1: --decay-scope all; 0: weights
    double max_grad_norm; // 0: no clipping
    double smoothing, brier, ordinal;
    // dropout (core/dropout.h) in the training forward and backward only:
    // probability 0 ≤ p < 1 (0: off) and the seed of its masks
    double dropout;
    uint64_t dropout_seed;
} clef_train_opts;
void clef_train_opts_default(clef_train_opts *o); // CLI.md defaults

// Grouped loss of one record given its logits z, normalised by the batch's
// question counts: p (O) probabilities, dz (O) = ∂L/∂z. Returns the record's
// share of L. Questions without a target get p only (dz = 0, no loss).
double clef_record_loss(const clef_kernels *k, const clef_record *r,
                        const float *z, const clef_train_opts *o, int n_q,
                        int n_score, float *p, float *dz);
// Loss of the last batch forward on ws (logits z, packed): p, dz (Σ O_b).
double clef_batch_loss(const clef_kernels *k, clef_ws *ws, const float *z,
                       const clef_train_opts *o, float *p, float *dz);
// Questions with a target in records[0..n) and how many of them are score
// questions: the normalisers N and N_score of HEAD.md §6.
void clef_batch_counts(const clef_record *const *recs, int n, int *n_q,
                       int *n_score);

// One update: zero gradients, forward + loss + backward over the batch,
// optional clipping, AdamW. Returns the batch loss (before the update).
double clef_train_step(const clef_kernels *k, clef_head *hd,
                       const clef_record *const *recs, int n, clef_ws *ws,
                       const clef_train_opts *o);
// The same update in pieces, for data-parallel training (cli/dp.c):
// clef_train_begin (step += 1, the bf16 copy), then the gradient of each
// shard of the batch, combined by the caller into hd->grads, then
// clef_train_apply (clipping, AdamW of step hd->step). A shard is records
// recs[0..n) starting at record rec0 of the update (its dropout masks) of
// n_q / n_score questions (clef_batch_counts of the whole batch): its
// gradient replaces hd->grads; returns its share of the loss.
void clef_train_begin(const clef_kernels *k, clef_head *hd);
double clef_shard_grads(const clef_kernels *k, clef_head *hd,
                        const clef_record *const *recs, int n, int rec0,
                        int n_q, int n_score, clef_ws *ws,
                        const clef_train_opts *o);
void clef_train_apply(const clef_kernels *k, clef_head *hd,
                      const clef_train_opts *o);
// GEMM and attention FLOPs of one update over recs (forward + backward) and
// of one record's forward (core/flops.c): the work FLOP rates are quoted for,
// in the memory-attention form that runs (memory_attention: "auto", "project",
// "absorb"; NULL = auto).
double clef_update_flops(const clef_config *c, const clef_record *const *recs,
                         int n, const char *memory_attention);
double clef_forward_flops(const clef_config *c, const clef_record *r);
// Global gradient L2 norm (double accumulation, fixed order).
double clef_grad_norm(const clef_head *hd);
// The tensor of the first non-finite value (NaN, ±Inf) in x, a (nparams)
// array in the head's layout (params, m or v), and its index within that
// tensor; -1 when every value is finite.
int clef_first_nonfinite(const clef_head *hd, const float *x, size_t *at);
// AdamW over every tensor with the current grads (step += 1 first).
void clef_adamw_step(const clef_kernels *k, clef_head *hd,
                     const clef_train_opts *o);

#endif

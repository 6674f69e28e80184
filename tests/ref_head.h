// An independent double-precision reference of the whole joint schema head
// (HEAD.md §1-§6), written from the spec alone, for finite-difference checks
// of the float forward/backward in core/ and for the golden record.
//
// Parameters are a double copy of a flat buffer laid out like hd->params; the
// reference finds every tensor by its state-dict name in hd->tensors (name,
// shape, offset) and never uses core's views or kernels.
#ifndef CLEF_TEST_REF_HEAD_H
#define CLEF_TEST_REF_HEAD_H

#include <stdint.h>

#include "dropout.h"
#include "head.h"

// Loss settings of HEAD.md §6 and the batch normalisers N and N_score.
typedef struct clef_ref_loss_opts {
    double smoothing; // ε
    double brier;     // β
    double ordinal;   // λ
    int n_q;          // N: questions with a target in the batch
    int n_score;      // N_score: score questions with a target in the batch
    // dropout with these masks (core/dropout.h: only which elements it
    // keeps, record 0 of its batch, and its scale), NULL for none
    const clef_dropout *drop;
} clef_ref_loss_opts;

// The record's share of the loss (HEAD.md §6), everything in double from
// r->H, r->ids, the spans, types and targets (r->xhat, r->qvhat, r->ctxhat
// are not used). lex is recomputed from the lexical table E (V, d) when E is
// given; with E = NULL the record's float r->lex is used. logits (O), if not
// NULL, receives z. Questions without a target add no loss. Aborts with a
// message if a tensor is missing or has the wrong shape.
double clef_ref_head_loss(const clef_head *hd, const double *params,
                          const clef_record *r, const float *E, int V,
                          const clef_ref_loss_opts *o, double *logits);

// Intermediates of HEAD.md §5 (the ones the golden expected.json lists); any
// pointer may be NULL.
typedef struct clef_ref_trace {
    double *g;     // (d) X[T−1]
    double *M0;    // (w) memory row 0
    double *qv0;   // (d) question vector 0
    double *lex0;  // (d) lexical mean of option 0
    double *R0_0;  // (w) option query R⁰ of option 0
    double *R_0;   // (w) option 0 after the routing layers
    double *Fhat0; // (w) F̂ of question 0
    double *prior; // (O) prior term (κ(s_p) included)
    double *cos;   // (O) cosine(f, n)
    double *res;   // (O) residual scorer output
} clef_ref_trace;

// clef_ref_head_loss that also fills tr (may be NULL).
double clef_ref_head_loss_trace(const clef_head *hd, const double *params,
                                const clef_record *r, const float *E, int V,
                                const clef_ref_loss_opts *o, double *logits,
                                clef_ref_trace *tr);

// A random record for tests: T positions of width d over a lexical table of V
// rows; Q questions with types qtype[Q] and nopt[Q] options; soft[q] != 0
// gives question q a random soft target, otherwise a random label. Spans have
// random lengths in [1, T] (overlaps allowed); question 0's span ends at T
// and option 0's span is the whole record. H ~ N(row offset, row scale²) so
// hidden_norm does real work. Every question has a target. r is overwritten;
// free with clef_record_free. Not prepared: call clef_record_prepare.
void clef_test_random_record(clef_record *r, int T, int d, int Q,
                             const int *qtype, const int *nopt, const int *soft,
                             int V, uint64_t *rng);

// A head and a batch of random records for the batch and thread tests: the
// head drawn from seed and moved off its init values (every gradient
// non-zero), an N(0, 1) lexical table of V rows, record b of T[b]
// positions with Q[b] questions of types[b] and nopt[b] options (question 0
// soft-targeted on odd records), prepared with the scalar kernels. The
// draws come from one generator seeded seed · rng_mul + rng_add.
#define CLEF_TEST_BATCH_MAX 8
typedef struct clef_test_batch {
    clef_config cfg;
    clef_head hd;
    int n;
    clef_record recs[CLEF_TEST_BATCH_MAX];
    const clef_record *ptr[CLEF_TEST_BATCH_MAX];
    float *E; // (V, d)
    int V;
} clef_test_batch;
typedef struct clef_test_batch_spec {
    int n, V;
    const int *T, *Q;
    const int (*types)[4], (*nopt)[4];
    uint64_t rng_mul, rng_add;
} clef_test_batch_spec;
void clef_test_batch_init(clef_test_batch *b, const clef_config *cfg,
                          uint64_t seed, const clef_test_batch_spec *spec);
void clef_test_batch_free(clef_test_batch *b);
// Training options with every loss term on (lr 1e-2, label smoothing 0.1,
// Brier 0.25, ordinal 0.3), for the batch and thread tests.
clef_train_opts clef_test_train_opts(void);

#endif

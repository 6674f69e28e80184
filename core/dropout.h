// Dropout (the reference head's `dropout`, PyTorch's inverted dropout:
// kept elements scaled by 1/(1−p)) from a counter-based generator: whether
// an element is kept is a hash of (seed, update step, site, layer, record
// of the update, row within the record, column), so the forward and the
// backward pass draw the same mask without storing it, and the masks do not
// depend on the thread count, the sub-batches an update is cut into or a
// resume. p = 0 turns every site off: the head then runs exactly the code
// it runs without dropout.
#ifndef CLEF_DROPOUT_H
#define CLEF_DROPOUT_H

#include <stdint.h>

// The sites, as the reference places nn.Dropout: after each routing
// attention, inside (after the GELU) and after each feed-forward, the field
// layers' self- and cross-attention outputs and attention weights (as
// nn.TransformerDecoderLayer and its nn.MultiheadAttention apply them), and
// inside the residual scorer.
enum clef_drop_site {
    CLEF_DROP_ROUTE_ATT_OUT,
    CLEF_DROP_ROUTE_FFN_IN,
    CLEF_DROP_ROUTE_FFN_OUT,
    CLEF_DROP_FIELD_SA_W,
    CLEF_DROP_FIELD_SA_OUT,
    CLEF_DROP_FIELD_CA_W,
    CLEF_DROP_FIELD_CA_OUT,
    CLEF_DROP_FIELD_FFN_IN,
    CLEF_DROP_FIELD_FFN_OUT,
    CLEF_DROP_SCORER,
};

// One update's (or one sub-batch's) dropout state; p == 0: off.
typedef struct clef_dropout {
    float p;      // drop probability, 0 ≤ p < 1
    float scale;  // 1 / (1 − p), rounded to float
    uint32_t thr; // an element drops when its 32-bit draw is below thr
    uint64_t key; // hash of (seed, step)
    int rec0;     // the sub-batch's first record within the update
} clef_dropout;

// Sets d for update `step` (1-based: the AdamW step it makes) of a run
// seeded with `seed`, for the sub-batch whose first record is record rec0
// of the update. p ≤ 0 turns it off.
void clef_dropout_set(clef_dropout *d, double p, uint64_t seed, long step,
                      int rec0);

static inline int clef_dropout_on(const clef_dropout *d)
{
    return d && d->p > 0.f;
}

// The key of a site in layer `layer` (0 for the residual scorer).
uint64_t clef_dropout_site(const clef_dropout *d, int site, int layer);

// Rows grouped by record: record b of the sub-batch owns rows
// [off[b], off[b+1]) of a (rows, n) array with row stride ld. In place:
// x ← mask ⊙ x / (1 − p), element (r, c) keyed by (site, rec0 + b, r −
// off[b], c).
void clef_dropout_rows(const clef_dropout *d, uint64_t site, int nb,
                       const int *off, int n, float *x, int ld);
// y (rows, n) = resid + mask ⊙ x / (1 − p), the same mask as
// clef_dropout_rows (ld = n for all three).
void clef_dropout_add_rows(const clef_dropout *d, uint64_t site, int nb,
                           const int *off, int n, const float *x,
                           const float *resid, float *y);
// One attention map of record b of the sub-batch, head `head`: y (nq, nk) =
// mask ⊙ x / (1 − p), element (i, j) keyed as row head·nq + i, column j.
// x == y is allowed.
void clef_dropout_map(const clef_dropout *d, uint64_t site, int b, int head,
                      int nq, int nk, const float *x, float *y);
// Whether element (row, col) of record b is kept (tests).
int clef_dropout_keeps(const clef_dropout *d, uint64_t site, int b, int row,
                       int col);

#endif

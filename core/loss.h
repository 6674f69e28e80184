// The loss of a packed batch as one update computes it (private to core/;
// the public loss calls are in head.h).
#ifndef CLEF_LOSS_H
#define CLEF_LOSS_H

#include "head.h"

// Grouped loss (HEAD.md §6) of the last batch forward on ws, normalised by
// the whole update's question counts n_q and n_score (clef_batch_counts), so
// that the sub-batches of an update add up to the batch's loss: logits ws->z
// → probabilities ws->p and ∂L/∂z ws->dz (Σ O_b each). Returns the batch's
// share of L.
double clef_update_loss(const clef_kernels *k, clef_ws *ws,
                        const clef_train_opts *o, int n_q, int n_score);

#endif

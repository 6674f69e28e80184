// Packing a batch of records into a workspace (private to core/).
#ifndef CLEF_BATCH_H
#define CLEF_BATCH_H

#include "head.h"

// 1 when the n records fit the workspace's limits as one packed batch.
int clef_batch_fits(const clef_ws *ws, const clef_record *const *recs, int n);
// Fills the workspace's batch index and packed record constants. bf16: the
// pass runs in bf16 (a table with k->mm), and reads x̂ in bf16 from records
// that keep that copy (xhat16); else x̂ in float where the record has it. A
// record with one copy is read from that one.
void clef_batch_index(clef_ws *ws, const clef_record *const *recs, int n,
                      int bf16);

#endif

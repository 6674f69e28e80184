// clef-bench's program parts beyond the harness library: --train.
#ifndef CLEF_BENCH_BENCH_H
#define CLEF_BENCH_BENCH_H

#include <jansson.h>

#include "harness.h"

// Times whole training updates (forward, loss, backward, AdamW of one batch
// of one synthetic record) of a fresh head at each shape's geometry on each
// backend: updates/s and achieved GFLOP/s (matmul work of forward and
// backward). A row FAILs when the loss is not finite; SKIPs when the backend
// cannot run. Rows go to stdout and, when rows is not NULL, to the JSON.
void clef_bench_train(const clef_backend *const *backends, int nbackends,
                      const clef_bench_shape *const *shapes, int nshapes,
                      const clef_bench_opts *o, json_t *rows, int *passed,
                      int *failed, int *skipped);

#endif

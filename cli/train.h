// clef train, internal interface between its files.
#ifndef CLEF_CLI_TRAIN_H
#define CLEF_CLI_TRAIN_H

#include <stdlib.h>

#include "cli.h"

typedef struct train_cfg {
    const char *manifest, *run_dir, *pin, *json_out, *init, *resume;
    const char *backend;
    int epochs, batch, keep, threads, quiet, bucketed, decay_all;
    long checkpoint_every, eval_every;
    double lr, b1, b2, eps, wd, max_grad_norm, smoothing, brier, ordinal;
    uint64_t seed;
} train_cfg;

extern const char *cli_train_help;
int cli_train_parse(int argc, char **argv, train_cfg *c, clef_err *err);
void cli_train_opts(const train_cfg *c, clef_train_opts *o);
// The settings as JSON (FORMATS.md "train"); backend NULL leaves out backend
// and threads (the form stored in checkpoints).
json_t *cli_train_settings(const train_cfg *c, const char *backend,
                           int threads);
// A resumed run must keep the checkpoint's update settings.
int cli_train_check_resume(const train_cfg *c, const char *ckpt,
                           const char *train_json, clef_err *err);

// ---- batch plan (cli/train_plan.c) ----
typedef struct train_plan {
    int ntrain;
    int *order;   // (ntrain) record indices, batch after batch
    int nbatches; // updates per epoch
    int *boff;    // (nbatches + 1) batch b = order[boff[b] .. boff[b+1])
    int *perm;    // (nbatches) execution order of this epoch's batches
    int bucketed;
    uint64_t seed;
} train_plan;
// Shape buckets of the records of one split (split < 0: all), scheduler/
// buckets.h; bucket_of (nrecords) gets ids or −1. Returns 0 or −1.
struct clef_bucket_stats;
int cli_buckets(const clef_package *pkg, int split, int *bucket_of,
                struct clef_bucket_stats *st);
int cli_plan_build(const clef_package *pkg, int batch, int bucketed,
                   uint64_t seed, train_plan *p);
// Fixes p->perm for epoch e (identity for sequential).
void cli_plan_epoch(train_plan *p, long epoch);
void cli_plan_free(train_plan *p);

#endif

// clef train's run state, shared by cli/train.c, cli/train_es.c and
// cli/train_result.c; internal to `clef train` (cli/train.h is the
// interface of its files to the rest of cli/).
#ifndef CLEF_CLI_TRAIN_RUN_H
#define CLEF_CLI_TRAIN_RUN_H

#include <limits.h>

#include "mm.h"
#include "train.h"

// Early stopping (--patience): the state a checkpoint carries.
typedef struct early_stop {
    int on;
    double best_value; // of --metric: ±inf before the first evaluation
    long best_step;    // −1 before the first evaluation
    int bad;           // evaluations in a row without an improvement
    float *best;       // (nparams) the weights at best_step
    long written;      // best_step whose best-<step> file exists, or −1
    char *meta;        // the resumed checkpoint's "early_stopping" metadata
} early_stop;

typedef struct train_run {
    train_cfg c;
    clef_train_opts o;
    clef_kernels ktab; // --backend's table
    clef_kernels k16;  // --precision bf16: ktab with the bf16 context mm
    struct clef_mm mm;
    const clef_kernels *k;
    const clef_package *pkg; // own_pkg, or a sweep's shared package
    clef_package own_pkg;
    int shared; // pkg is not ours: no frozen check, no print
    clef_head hd;
    clef_ws *ws;
    train_plan plan;
    long start_step, total_steps;
    cli_eval before, after;
    char **frozen; // SHA-256 of every frozen buffer, before training
    int nfrozen;
    json_t *history;
    long *hist; // steps of this run's checkpoints, oldest first: those at or
    int nhist;  // before the step it resumed from, then those it wrote
    long *hbest; // (nhist) their early-stopping best_step: −1 none, −2 unknown
    early_stop es;
    int dp;      // data-parallel over the MPI ranks (cli/dp.c); else 0
    cli_dp dpx;  // its buffers
    double *rss; // (ranks) every rank's peak RSS (MB), for result.json
    char manifest_abs[PATH_MAX], run_abs[PATH_MAX];
    double t0, train_s;
} train_run;

// ---- early stopping (cli/train_es.c) ----
// best-<step>.safetensors in the run dir.
void train_best_path(const train_run *t, long step, char *out, size_t n);
const char *train_metric_name(const train_cfg *c);
// 1 when --patience evaluations in a row brought no improvement.
int train_es_stopped(const train_run *t);
// Before anything is written: --patience needs a validation record; a
// resumed run continues the checkpoint's early stopping (t->es.meta).
int train_es_setup(train_run *t, clef_err *err);
// One --eval-every evaluation of the validation split.
void train_es_observe(train_run *t, long step, const cli_eval *ev);
// The state for a checkpoint's metadata (malloc'd JSON), NULL on failure.
char *train_es_meta(const train_run *t);
// best-<best_step>.safetensors (atomic), before a checkpoint refers to it.
int train_es_write_best(train_run *t, clef_err *err);
// result.json's "early_stopping" (null when off).
json_t *train_es_json(const train_run *t);

// ---- results (cli/train_result.c) ----
// One point of result.json's "history": the step's train and validation
// loss and validation accuracy.
json_t *train_history_point(const clef_package *pkg, long step,
                            const cli_eval *ev);
// Every rank's peak RSS into t->rss (a collective under MPI).
void train_rss_gather(train_run *t);
// The whole result JSON; fail: the error that ended the run, or NULL;
// checks: frozen inputs, checkpoint reload, export parity (NULL: not run).
json_t *train_result_json(train_run *t, const clef_err *fail, int checks[3],
                          const char *weights);
// result.json in the run dir, and --json's file when given.
int train_write_results(train_run *t, json_t *res, clef_err *err);

// ---- cli/train.c ----
// Records per data-parallel shard: --shard-records, else the default.
int train_dp_shard(const train_cfg *c);

#endif

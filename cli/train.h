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
    double checkpoint_seconds; // --checkpoint-seconds S (0: none)
    int patience;              // --patience K (0: no early stopping)
    int metric_acc;            // --metric val_accuracy (else val_loss)
    double min_delta;          // --min-delta X
    int has_min_delta;
    long fault_step; // CLEF_FAULT_NAN_STEP: a NaN parameter after this update
    long kill_step; // CLEF_FAULT_KILL_STEP: SIGKILL once this checkpoint is out
    double lr, b1, b2, eps, wd, max_grad_norm, smoothing, brier, ordinal;
    double dropout;    // --dropout P, else the package's head.dropout
    int has_dropout;   // --dropout was given
    int bf16;          // --precision bf16 (else fp32)
    int export_bf16;   // --export-dtype bf16 (else f32)
    int shard_records; // --shard-records S: data-parallel shards (0: none)
    uint64_t seed;
} train_cfg;

extern const char *cli_train_help;
// One `clef train` with these flags. shared: a package already read,
// checked and prepared (a sweep's, with the same --package and --backend),
// used read-only instead of reading --package; the frozen-input check is
// then the caller's and nothing is printed. check_only: everything that can
// exit 2, then stop (nothing written). Returns the exit code; *err the why.
struct clef_package;
int cli_train_with(int argc, char **argv, const struct clef_package *shared,
                   int check_only, clef_err *err);
int cli_train_parse(int argc, char **argv, train_cfg *c, clef_err *err);
void cli_train_opts(const train_cfg *c, clef_train_opts *o);
// The settings as JSON (FORMATS.md "train"); backend NULL leaves out backend
// and threads (the form stored in checkpoints).
json_t *cli_train_settings(const train_cfg *c, const char *backend,
                           int threads);
// A resumed run must keep the checkpoint's update settings.
int cli_train_check_resume(const train_cfg *c, const char *ckpt,
                           const char *train_json, clef_err *err);

// ---- frozen inputs (cli/frozen.c) ----
// SHA-256 (hex) of every buffer training must never touch: E and, per
// record, H, xhat, qvhat, ctxhat and lex, into hashes (NULL: count only).
// Returns the count.
int cli_frozen_hashes(const struct clef_package *p, char **hashes);
char **cli_alloc_hashes(int n); // n hex buffers, or NULL
void cli_free_hashes(char **h, int n);
// 1 when the n digests of p now equal ref.
int cli_frozen_same(const struct clef_package *p, char **ref, int n);

// ---- evaluation of some splits (cli/eval.c) ----
// cli_evaluate on the records whose split is in mask (1 << CLEF_SPLIT_*);
// the others are not run (their z and p are 0, their split's nq 0).
int cli_evaluate_splits(const clef_kernels *k, const clef_head *hd,
                        const clef_package *pkg, clef_ws *ws,
                        const clef_train_opts *o, unsigned mask, cli_eval *ev,
                        clef_err *err);
// The same under MPI (cli/cli_mpi.h), a collective: rank r evaluates
// records [n·r/N, n·(r+1)/N), every rank gets every record's z and p, and the
// sums run over the records in order, so the results are bitwise those of
// one process. Outside MPI: cli_evaluate_splits.
int cli_evaluate_ranks(const clef_kernels *k, const clef_head *hd,
                       const clef_package *pkg, clef_ws *ws,
                       const clef_train_opts *o, unsigned mask, cli_eval *ev,
                       clef_err *err);

// ---- data-parallel updates (cli/dp.c) ----
// One update of a batch over the MPI ranks, the same bits for any number of
// ranks: the batch is cut into shards of S consecutive records (the last may
// be shorter), shard s on rank s mod N (round s / N), each one packed pass;
// each round every rank sends chunk j of its shard's gradient to rank j,
// which adds the round's shards into its chunk in shard order (the first
// copied); the chunks are then gathered to every rank, and clipping and
// AdamW run on every rank alike. One process (N = 1) gives the same bits.
#define CLI_DP_SHARD_DEFAULT 1 // records per shard under mpirun
typedef struct cli_dp {
    int rank, size;
    int shard;        // records per shard
    int *cnt, *off;   // (size) chunk j of the flat gradient: floats, offset
    int *rcnt, *roff; // (size) what rank j's part of a round lands in
    float *acc;       // (cnt[rank]) this rank's chunk of the sum
    float *recv;      // (size · cnt[rank]) a round's chunks, rank order
    double *loss;     // (size) a round's record losses
} cli_dp;
int cli_dp_init(cli_dp *d, size_t nparams, int shard);
void cli_dp_free(cli_dp *d);
double cli_dp_step(cli_dp *d, const clef_kernels *k, clef_head *hd,
                   const clef_record *const *recs, int n, clef_ws *ws,
                   const clef_train_opts *o);
// 1 when every rank holds the same parameters, m and v (a digest each).
int cli_dp_same_state(const clef_head *hd);

// ---- the run dir (cli/run_dir.c) ----
// Before anything is written: run_dir is absent (and creatable), empty but
// for stale temporaries, or the folder of --resume; a directory, writable,
// not a dangling link. 0 or CLEF_ERR_INPUT.
int cli_run_dir_check(const char *run_dir, const char *resume, clef_err *err);
// Removes the temporaries ("<output>.tmp.<pid>") that writers no longer
// running left in dir. Returns how many.
int cli_remove_stale_temps(const char *dir);
// No output (--json-out, the run dir's result.json and weights) is, or links
// to, an input (the package's files, --init, --resume). 0 or CLEF_ERR_INPUT.
int cli_outputs_not_inputs(const train_cfg *c, const clef_package *pkg,
                           clef_err *err);

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

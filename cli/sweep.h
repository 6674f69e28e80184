// clef sweep, internal interface between its files: the spec (axes, runs,
// names: sweep_spec.c), running the runs (sweep.c) and the leaderboard
// (sweep_board.c).
#ifndef CLEF_CLI_SWEEP_H
#define CLEF_CLI_SWEEP_H

#include "train.h"

#define SWEEP_MAX_RUNS_UNASKED 10000 // more need --yes

// One train setting a run sets: the flag without "--" and its value text.
typedef struct sweep_set {
    char *key, *val;
} sweep_set;

typedef struct sweep_run {
    char *name;     // "lr=3e-4,wd=0.01,seed=3408": also its folder in runs/
    sweep_set *set; // (nset) in axis order
    int nset;
    char *canon; // the parsed settings as JSON: duplicates compare equal
    long steps_per_epoch;
} sweep_run;

typedef struct sweep_spec {
    const char *manifest, *dir, *runs_file;
    const char *pin, *backend; // shared --package-sha256, --backend (or NULL)
    int metric_acc;            // --metric val_accuracy (else val_loss)
    int parallel, threads_per_run, seeds, yes;
    char **shared; // (nshared) the train flags every run gets, argv form
    int nshared;
    int user_ckpt; // --checkpoint-every or -seconds among the shared
    int all_bf16;  // every run trains in bf16: x̂ kept in bf16 once
    int any_bf16;  // some run does: x̂ also in bf16, beside the float x̂
    sweep_run *runs;
    int nruns;
} sweep_spec;

extern const char *cli_sweep_help;
// The sweep's flags and the runs they expand to, every run's flags parsed
// as `clef train` parses them. 0 or CLEF_ERR_INPUT (nothing written).
int sweep_spec_parse(int argc, char **argv, sweep_spec *s, clef_err *err);
void sweep_spec_free(sweep_spec *s);
// Run i's `clef train` argv (malloc'd, every string too: sweep_argv_free): the
// shared flags, the run's settings, --package, --run-dir DIR/runs/<name>,
// --quiet, --threads T, resume (may be NULL) as --resume, and
// --checkpoint-seconds SWEEP_CHECKPOINT_S unless the shared flags choose
// checkpoints. *argc is set.
#define SWEEP_CHECKPOINT_S 30
char **sweep_argv(const sweep_spec *s, int i, const char *run_dir,
                  const char *resume, int *argc);
void sweep_argv_free(char **argv, int argc);
// The spec as stored in DIR/sweep-spec.json (what a rerun must match).
json_t *sweep_spec_json(const sweep_spec *s, const char *package_sha256);

// ---- results and the leaderboard (sweep_board.c) ----
typedef struct sweep_result {
    int ok;            // result.json status "ok"
    char status[16];   // "ok", "error", "no result"
    double metric;     // the --metric (best with early stopping), or NAN
    long best_step;    // where the metric was reached
    long steps;        // updates done
    int stopped_early; // --patience stopped it
    double train_loss; // train loss after training (the exported weights)
    double updates_per_s, wall_s; // timings of the run's last process
} sweep_result;
// The result.json in run_dir. 0, or -1 when there is none (status says).
int sweep_result_read(const sweep_spec *s, const char *run_dir,
                      sweep_result *r);

// Reads every run's result.json, prints the table sorted by the metric,
// writes DIR/sweep.json and DIR/sweep.csv (atomically) and links
// DIR/best.safetensors to the best run's weights. frozen_ok: the package's
// frozen inputs hashed the same after the sweep as before it.
int sweep_board(const sweep_spec *s, const char *package_sha256, int frozen_ok,
                clef_err *err);

#endif

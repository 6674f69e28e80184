// The clef program: commands, flag parsing and helpers they share.
#ifndef CLEF_CLI_H
#define CLEF_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"
#include "head.h"
#include "package.h"

// ---- commands (cli/<name>.c): argc/argv start at the command's first flag
int cli_train(int argc, char **argv);
int cli_score(int argc, char **argv);
int cli_validate(int argc, char **argv);
int cli_fixture(int argc, char **argv);
int cli_inspect(int argc, char **argv);
int cli_sweep(int argc, char **argv);
// Python commands (cli/pytool.c): execv the interpreter on the script.
int cli_capture(int argc, char **argv);
int cli_report(int argc, char **argv);

// ---- flags (cli/args.c) ----
// 1 when argv[*i] is `name` (then *val = argv[*i + 1], *i advanced) or
// `name=V` (then *val = V). A flag without its value is a usage error (2).
// has_value 0: a switch (no value; *val untouched).
int cli_flag(int argc, char **argv, int *i, const char *name, int has_value,
             const char **val, clef_err *err);
int cli_parse_int(const char *flag, const char *s, long lo, long hi, int *out,
                  clef_err *err);
int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out,
                   clef_err *err);
// Decimal digits only, at most max.
int cli_parse_u64(const char *flag, const char *s, uint64_t max, uint64_t *out,
                  clef_err *err);
// Seeds are stored as JSON integers (signed 64-bit): [0, 2^63 - 1].
#define CLI_SEED_MAX ((uint64_t)INT64_MAX)
int cli_parse_double(const char *flag, const char *s, double lo, double hi,
                     double *out, clef_err *err);
// One of two words: *is_b = 0 for a, 1 for b; anything else is a usage
// error naming both.
int cli_parse_choice(const char *flag, const char *s, const char *a,
                     const char *b, int *is_b, clef_err *err);
// "B1,B2"
int cli_parse_pair(const char *flag, const char *s, double lo, double hi,
                   double *a, double *b, clef_err *err);
// Prints "clef <cmd>: <msg>" to stderr and returns the error code.
int cli_fail(const char *cmd, const clef_err *err);
// 1 if argv holds --help or -h.
int cli_wants_help(int argc, char **argv);

// ---- kernels (cli/backend.c) ----
// The kernels for --backend NAME ("auto", "scalar", ...) copied into out.
// Usage error (2) for an unknown or unavailable backend.
int cli_kernels(const char *name, clef_kernels *out, clef_err *err);
// Sets the thread count: --threads n, or (n <= 0) CLEF_NUM_THREADS,
// OMP_NUM_THREADS, the physical cores (scheduler/threads.h).
void cli_set_threads(int n);
// The physical core the calling thread's next cli_set_threads team starts at.
void cli_set_first_core(int core);
int cli_threads(void);
// Prints the backends this build carries ("kernels: ...").
void cli_print_backends(void);
// Applies CLEF_MEMORY_ATTENTION (auto | project | absorb; unset: auto) to ws.
// Usage error (2) for any other value.
int cli_memory_attention(clef_ws *ws, clef_err *err);

// ---- evaluation (cli/eval.c) ----
typedef struct cli_eval {
    double loss[3]; // mean loss over the split's questions with a target
    int nq[3];      // questions with a target per split
    int correct[3]; // correct predictions (questions with >= 2 options)
    int nacc[3];    // questions counted for accuracy
    size_t *zoff;   // (nrecords + 1) offsets into z and p
    float *z, *p;   // (total options) logits and probabilities
} cli_eval;
// Forward of every record of pkg with head hd; losses use o (ε, β, λ).
int cli_evaluate(const clef_kernels *k, const clef_head *hd,
                 const clef_package *pkg, clef_ws *ws, const clef_train_opts *o,
                 cli_eval *ev, clef_err *err);
void cli_eval_free(cli_eval *ev);
// Index of the largest entry (first on ties).
int cli_argmax(const float *x, int n);
// The target option of question q of r (label, or argmax of the target), -1.
int cli_true_option(const clef_record *r, int q);

// ---- files (cli/files.c) ----
// 1 if path does not exist or is an empty directory.
int cli_dir_absent_or_empty(const char *path);
// mkdir -p. 0 or -1 (errno).
int cli_mkdirs(const char *path);
// Writes a JSON value atomically (temp, fsync, rename). 0 or CLEF_ERR_RUN.
int cli_write_json(const char *path, json_t *v, size_t flags, clef_err *err);
// 1 if the parent folder of path exists and is writable.
int cli_parent_writable(const char *path);
// The folder of path ("." without a slash), trailing slashes ignored.
void cli_dirname(const char *path, char *out, size_t n);
double cli_now(void); // monotonic seconds

#endif

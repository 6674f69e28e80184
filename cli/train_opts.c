// clef train: flags, defaults and the settings JSON stored in checkpoints.
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

const char *cli_train_help =
    "usage: clef train --package DIR/package.json --run-dir DIR\n"
    "       [--package-sha256 HEX] [--json-out FILE] [--epochs N=1]\n"
    "       [--batch B=1] [--lr X=1e-3] [--betas B1,B2=0.9,0.999]\n"
    "       [--eps E=1e-4] [--weight-decay W=0.01]\n"
    "       [--decay-scope weights|all] [--max-grad-norm C=0]\n"
    "       [--label-smoothing E=0] [--brier B=0] [--ordinal L=0]\n"
    "       [--dropout P] [--precision fp32|bf16] [--export-dtype f32|bf16]\n"
    "       [--init WEIGHTS.safetensors] [--seed S=3407]\n"
    "       [--resume CHECKPOINT] [--checkpoint-every N=0]\n"
    "       [--checkpoint-seconds S=0]\n"
    "       [--keep-checkpoints K=3] [--eval-every N=0]\n"
    "       [--patience K] [--min-delta X=0]\n"
    "       [--metric val_loss|val_accuracy]\n"
    "       [--batching sequential|bucketed] [--backend NAME=auto]\n"
    "       [--threads N] [--shard-records S] [--quiet]\n"
    "\n"
    "Trains the package's train records and writes into --run-dir (created;\n"
    "a non-empty one is refused unless --resume points into it):\n"
    "weights.safetensors, checkpoint-<step>.safetensors and result.json\n"
    "(also written to --json-out). Every record is evaluated before and\n"
    "after training; `history` holds the train and validation losses at\n"
    "step 0 (or the resumed step), every --eval-every steps and at the end,\n"
    "with the validation accuracy overall and per question;\n"
    "metrics.per_question has n, options, accuracy, macro_f1, nll, ece\n"
    "(15 bins) and the confusion matrix per split and question, before and\n"
    "after. The --eval-every evaluations never run the test records.\n"
    "\n"
    "--patience K (K >= 1; needs --eval-every N > 0 and a validation\n"
    "record): early stopping. The evaluations at steps N, 2N, ... keep the\n"
    "weights of the best --metric (the lowest validation loss, default, or\n"
    "the highest validation accuracy; an improvement beats the best by more\n"
    "than --min-delta X, default 0); training stops after K evaluations in\n"
    "a row without one. weights.safetensors and best.safetensors, the metrics\n"
    "after training and the records' logits are those best weights;\n"
    "checkpoints hold the latest state plus the early-stopping state, and\n"
    "best-<step>.safetensors the best weights they refer to, so a resumed\n"
    "run stops and exports exactly as an uninterrupted one. result.json:\n"
    "early_stopping {patience, min_delta, metric, best_step, best_value,\n"
    "best_validation_loss (or _accuracy), stopped_at_step, stopped_early};\n"
    "last.safetensors holds the weights training stopped at. result.json's\n"
    "stop_reason: epochs, patience or error.\n"
    "\n"
    "--batching sequential: each epoch cuts the train records, in manifest\n"
    "order, into consecutive groups of B; one AdamW update per group, loss =\n"
    "mean over the group's questions. bucketed: records of the same geometry\n"
    "(T, Q, option counts) are grouped (buckets in order of first\n"
    "appearance), each bucket cut into consecutive groups of B, and the\n"
    "epoch's batches are shuffled by a generator seeded from --seed and the\n"
    "epoch number.\n"
    "--dropout P (0 <= P < 1; default: the package's head.dropout, else\n"
    "0): dropout in training, where the reference's head applies it (after\n"
    "each routing attention, inside and after each feed-forward, the field\n"
    "layers' attention outputs and weights, inside the residual scorer);\n"
    "never in evaluation. Masks are drawn from (--seed, update step,\n"
    "element): the same for any thread count and on resume.\n"
    "--precision bf16: mixed precision. Every matrix product of the head\n"
    "rounds its operands to bf16 (nearest even) and accumulates in fp32\n"
    "(AMX, AVX512-BF16 or oneDNN kernels where the CPU has them); the\n"
    "weights' bf16 copy is made once per update; everything else (norms,\n"
    "softmax, GELU, attention, the loss, AdamW on fp32 master weights) is\n"
    "fp32. x̂, the normalized hidden states, is kept in bf16 (half the\n"
    "memory). A memory attention's absorbed form (chosen per batch by\n"
    "cost; CLEF_MEMORY_ATTENTION=project|absorb fixes it) rounds other\n"
    "intermediates than the projected form, so in bf16 the two differ at\n"
    "bf16's scale. fp32 (the default) keeps the bits of an fp32 build.\n"
    "--export-dtype bf16: weights.safetensors (and last.safetensors) hold\n"
    "the weights rounded to BF16 (nearest even), half the size; the\n"
    "checkpoints keep the fp32 master weights either way.\n"
    "Under mpirun -np N (or srun) training is data-parallel: each batch is\n"
    "cut into shards of --shard-records S consecutive records (default\n"
    "1), shard s runs on rank s mod N, and the shards' gradients are summed\n"
    "in shard order, so the weights are the same bits for every N; S = B\n"
    "(one shard) gives the bits of clef train without mpirun.\n"
    "Rank 0 writes every file. --shard-records without mpirun runs the\n"
    "same sharded update in one process: the bits of any N ranks.\n"
    "Larger S packs more records per pass (faster per rank) but caps the\n"
    "ranks that have work at ceil(B / S).\n"
    "--init overrides the package's initial_weights; without either, a\n"
    "fresh head is drawn from --seed. --resume restores weights, AdamW\n"
    "moments and the step from a checkpoint of the same package and\n"
    "settings; --epochs is then the total, so N steps plus a resumed run to\n"
    "2N steps equal 2N uninterrupted steps bit for bit. Checkpoints: every\n"
    "--checkpoint-every steps (0: only at the end), after the first update\n"
    "that ends --checkpoint-seconds S after the last checkpoint (0: never),\n"
    "and at the end, keeping the newest --keep-checkpoints of this run's\n"
    "own history (0: keep all).\n"
    "Checkpoints are written only when every parameter and moment is\n"
    "finite; a stopped run names its last good checkpoint in result.json.\n"
    "Exit codes: 0 ok, 1 failure while running (for example a non-finite\n"
    "loss; result.json then has status \"error\"), 2 bad usage or input\n"
    "(nothing written).\n";

static int str_flag(int argc, char **argv, int *i, const char *name,
                    const char **dst, clef_err *err, int *matched)
{
    int r = cli_flag(argc, argv, i, name, 1, dst, err);
    if (r)
        *matched = 1;
    return r < 0 ? CLEF_ERR_INPUT : 0;
}

int cli_train_parse(int argc, char **argv, train_cfg *c, clef_err *err)
{
    memset(c, 0, sizeof(*c));
    c->epochs = 1;
    c->batch = 1;
    c->lr = 1e-3;
    c->b1 = 0.9;
    c->b2 = 0.999;
    c->eps = 1e-4;
    c->wd = 0.01;
    c->keep = 3;
    c->seed = 3407;
    c->backend = "auto";
    const long big = 1L << 30;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int m = 0, r;
        if (str_flag(argc, argv, &i, "--package", &c->manifest, err, &m) ||
            str_flag(argc, argv, &i, "--run-dir", &c->run_dir, err, &m) ||
            str_flag(argc, argv, &i, "--package-sha256", &c->pin, err, &m) ||
            str_flag(argc, argv, &i, "--json-out", &c->json_out, err, &m) ||
            str_flag(argc, argv, &i, "--init", &c->init, err, &m) ||
            str_flag(argc, argv, &i, "--resume", &c->resume, err, &m) ||
            str_flag(argc, argv, &i, "--backend", &c->backend, err, &m))
            return CLEF_ERR_INPUT;
        if (m)
            continue;
        if ((r = cli_flag(argc, argv, &i, "--quiet", 0, &v, err))) {
            c->quiet = 1;
            continue;
        }
#define NUM(name, stmt)                                                        \
    if ((r = cli_flag(argc, argv, &i, name, 1, &v, err))) {                    \
        if (r < 0 || (stmt))                                                   \
            return CLEF_ERR_INPUT;                                             \
        continue;                                                              \
    }
        NUM("--epochs", cli_parse_int("--epochs", v, 0, big, &c->epochs, err))
        NUM("--batch", cli_parse_int("--batch", v, 1, big, &c->batch, err))
        NUM("--lr", cli_parse_double("--lr", v, 0, 1e6, &c->lr, err))
        NUM("--betas",
            cli_parse_pair("--betas", v, 0, 0.999999999, &c->b1, &c->b2, err))
        NUM("--eps", cli_parse_double("--eps", v, 0, 1e6, &c->eps, err))
        NUM("--weight-decay",
            cli_parse_double("--weight-decay", v, 0, 1e6, &c->wd, err))
        NUM("--max-grad-norm", cli_parse_double("--max-grad-norm", v, 0, 1e30,
                                                &c->max_grad_norm, err))
        NUM("--label-smoothing",
            cli_parse_double("--label-smoothing", v, 0, 1, &c->smoothing, err))
        NUM("--brier", cli_parse_double("--brier", v, 0, 1e6, &c->brier, err))
        NUM("--ordinal",
            cli_parse_double("--ordinal", v, 0, 1e6, &c->ordinal, err))
        NUM("--seed", cli_parse_u64("--seed", v, CLI_SEED_MAX, &c->seed, err))
        if ((r = cli_flag(argc, argv, &i, "--dropout", 1, &v, err))) {
            if (r < 0 ||
                cli_parse_double("--dropout", v, 0, 1, &c->dropout, err))
                return CLEF_ERR_INPUT;
            if (c->dropout >= 1)
                return clef_err_input(err, NULL, NULL, "--dropout",
                                      "%g is out of range [0, 1)", c->dropout);
            c->has_dropout = 1;
            continue;
        }
        NUM("--checkpoint-every",
            cli_parse_long("--checkpoint-every", v, 0, big,
                           &c->checkpoint_every, err))
        NUM("--checkpoint-seconds",
            cli_parse_double("--checkpoint-seconds", v, 0, 1e9,
                             &c->checkpoint_seconds, err))
        NUM("--keep-checkpoints",
            cli_parse_int("--keep-checkpoints", v, 0, big, &c->keep, err))
        NUM("--eval-every",
            cli_parse_long("--eval-every", v, 0, big, &c->eval_every, err))
        NUM("--patience",
            cli_parse_int("--patience", v, 1, big, &c->patience, err))
        if ((r = cli_flag(argc, argv, &i, "--min-delta", 1, &v, err))) {
            if (r < 0 ||
                cli_parse_double("--min-delta", v, 0, 1e30, &c->min_delta, err))
                return CLEF_ERR_INPUT;
            c->has_min_delta = 1;
            continue;
        }
        NUM("--threads",
            cli_parse_int("--threads", v, 1, 4096, &c->threads, err))
        NUM("--shard-records",
            cli_parse_int("--shard-records", v, 1, big, &c->shard_records, err))
        NUM("--decay-scope", cli_parse_choice("--decay-scope", v, "weights",
                                              "all", &c->decay_all, err))
        NUM("--metric", cli_parse_choice("--metric", v, "val_loss",
                                         "val_accuracy", &c->metric_acc, err))
        NUM("--batching", cli_parse_choice("--batching", v, "sequential",
                                           "bucketed", &c->bucketed, err))
        NUM("--precision",
            cli_parse_choice("--precision", v, "fp32", "bf16", &c->bf16, err))
        NUM("--export-dtype", cli_parse_choice("--export-dtype", v, "f32",
                                               "bf16", &c->export_bf16, err))
#undef NUM
        return clef_err_input(err, NULL, NULL, argv[i],
                              "unknown flag (see clef train --help)");
    }
    if (!c->manifest)
        return clef_err_input(err, NULL, NULL, "--package", "is required");
    if (!c->run_dir)
        return clef_err_input(err, NULL, NULL, "--run-dir", "is required");
    if (c->pin && !clef_sha256_is_hex(c->pin))
        return clef_err_input(err, NULL, NULL, "--package-sha256",
                              "must be 64 hexadecimal digits");
    // AdamW runs in float: ε must stay a positive normal float (ε = 0 makes
    // 0/0 for a parameter with no gradient yet) and each β below 1 (β = 1
    // zeroes the bias correction 1 − βᵗ it divides by).
    if (!((float)c->eps >= FLT_MIN))
        return clef_err_input(err, NULL, NULL, "--eps",
                              "%g must be positive and at least %g (the "
                              "smallest normal float)",
                              c->eps, (double)FLT_MIN);
    if (!((float)c->b1 < 1.0f) || !((float)c->b2 < 1.0f))
        return clef_err_input(err, NULL, NULL, "--betas",
                              "%.9g,%.9g: each must round to a float below 1",
                              c->b1, c->b2);
    if (c->has_min_delta && !c->patience)
        return clef_err_input(err, NULL, NULL, "--min-delta",
                              "needs --patience (it is the early-stopping "
                              "threshold)");
    if (c->patience && c->eval_every <= 0)
        return clef_err_input(err, NULL, NULL, "--patience",
                              "needs --eval-every N > 0 (early stopping "
                              "counts the validation evaluations every N "
                              "steps)");
    // Fault injection (tests only): the update of step N leaves a NaN in
    // the last parameter, to check that nothing non-finite is ever written.
    const char *fault = getenv("CLEF_FAULT_NAN_STEP");
    if (fault && cli_parse_long("CLEF_FAULT_NAN_STEP", fault, 1, big,
                                &c->fault_step, err))
        return CLEF_ERR_INPUT;
    // (tests only) the process dies as by kill -9 right after the checkpoint
    // of step N is written: what a sweep or a run must survive.
    const char *kill = getenv("CLEF_FAULT_KILL_STEP");
    if (kill && cli_parse_long("CLEF_FAULT_KILL_STEP", kill, 1, big,
                               &c->kill_step, err))
        return CLEF_ERR_INPUT;
    if (c->init && c->resume)
        return clef_err_input(err, NULL, NULL, "--init",
                              "cannot be combined with --resume (the "
                              "checkpoint holds the weights)");
    return 0;
}

void cli_train_opts(const train_cfg *c, clef_train_opts *o)
{
    clef_train_opts_default(o);
    o->lr = (float)c->lr;
    o->beta1 = (float)c->b1;
    o->beta2 = (float)c->b2;
    o->eps = (float)c->eps;
    o->weight_decay = (float)c->wd;
    o->decay_all = c->decay_all;
    o->max_grad_norm = (float)c->max_grad_norm;
    o->smoothing = (float)c->smoothing;
    o->brier = (float)c->brier;
    o->ordinal = (float)c->ordinal;
    o->dropout = c->dropout;
    o->dropout_seed = c->seed;
}

json_t *cli_train_settings(const train_cfg *c, const char *backend, int threads)
{
    json_t *j = json_pack(
        "{s:i, s:i, s:f, s:[f, f], s:f, s:f, s:s, s:f, s:f, s:f, s:f, s:I, "
        "s:s}",
        "epochs", c->epochs, "batch", c->batch, "lr", c->lr, "betas", c->b1,
        c->b2, "eps", c->eps, "weight_decay", c->wd, "decay_scope",
        c->decay_all ? "all" : "weights", "label_smoothing", c->smoothing,
        "brier", c->brier, "ordinal", c->ordinal, "max_grad_norm",
        c->max_grad_norm, "seed", (json_int_t)c->seed, "batching",
        c->bucketed ? "bucketed" : "sequential");
    if (j) {
        json_object_set_new(j, "dropout", json_real(c->dropout));
        json_object_set_new(j, "precision",
                            json_string(c->bf16 ? "bf16" : "fp32"));
        json_object_set_new(j, "export_dtype",
                            json_string(c->export_bf16 ? "bf16" : "f32"));
    }
    if (j && backend) {
        json_object_set_new(j, "backend", json_string(backend));
        json_object_set_new(j, "threads", json_integer(threads));
    }
    return j;
}

// The settings that decide the bits of every update: a resumed run must use
// the checkpoint's (epochs, backend, threads and bookkeeping may change).
static const char *const resume_keys[] = {"batch",
                                          "lr",
                                          "betas",
                                          "eps",
                                          "weight_decay",
                                          "decay_scope",
                                          "label_smoothing",
                                          "brier",
                                          "ordinal",
                                          "max_grad_norm",
                                          "seed",
                                          "batching",
                                          "dropout",
                                          "precision"};

int cli_train_check_resume(const train_cfg *c, const char *ckpt,
                           const char *train_json, clef_err *err)
{
    json_error_t je;
    json_t *saved = train_json ? json_loads(train_json, 0, &je) : NULL;
    if (!json_is_object(saved)) {
        json_decref(saved);
        return clef_err_input(err, ckpt, NULL, "__metadata__.train",
                              "missing or not a JSON object");
    }
    json_t *now = cli_train_settings(c, NULL, 0);
    int rc = 0;
    for (size_t i = 0; i < sizeof(resume_keys) / sizeof(*resume_keys); i++) {
        json_t *a = json_object_get(saved, resume_keys[i]);
        json_t *b = json_object_get(now, resume_keys[i]);
        json_t *zero = NULL; // checkpoints from before dropout, bf16: none
        if (!a && !strcmp(resume_keys[i], "dropout"))
            a = zero = json_real(0.0);
        if (!a && !strcmp(resume_keys[i], "precision"))
            a = zero = json_string("fp32");
        const int same = a && json_equal(a, b);
        if (!same) {
            char *sa = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL;
            char *sb = json_dumps(b, JSON_ENCODE_ANY);
            rc = clef_err_input(err, ckpt, NULL, resume_keys[i],
                                "the checkpoint was trained with %s, this "
                                "run asks for %s (a resumed run keeps the "
                                "checkpoint's settings)",
                                sa ? sa : "nothing", sb ? sb : "?");
            free(sa);
            free(sb);
        }
        json_decref(zero);
        if (!same)
            break;
    }
    json_decref(now);
    json_decref(saved);
    return rc;
}

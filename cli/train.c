// clef train (CLI.md): validate everything, then train, evaluate, export,
// check, and write the result JSON (FORMATS.md).
#define _XOPEN_SOURCE 700 // realpath
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_mpi.h"
#include "mm.h"
#include "metrics.h"
#include "scheduler/threads.h"
#include "safetensors.h"
#include "train.h"
#include "train_run.h"
#include "weights.h"

#define MASK_TRAIN_VALIDATION                                                  \
    ((1u << CLEF_SPLIT_TRAIN) | (1u << CLEF_SPLIT_VALIDATION))

// ---------------------------------------------------- data-parallel --

// Records per data-parallel shard: --shard-records, else the default.
int train_dp_shard(const train_cfg *c)
{
    return c->shard_records ? c->shard_records : CLI_DP_SHARD_DEFAULT;
}

// Rank 0 (or the one process) writes every file; the other ranks none.
static int is_root(const train_run *t)
{
    return !t->dp || cli_mpi_rank() == 0;
}

// Every rank's rc agreed on (the first failing rank's message), so that no
// rank enters a collective the others have left.
static int agree(const train_run *t, int rc, clef_err *err)
{
    return t->dp ? cli_mpi_agree(rc, err) : rc;
}

// The evaluation of the mask's splits: the records split across the ranks
// when data-parallel (the same bits as one process).
static int eval_splits(train_run *t, unsigned mask, cli_eval *ev, clef_err *err)
{
    return (t->dp ? cli_evaluate_ranks : cli_evaluate_splits)(
        t->k, &t->hd, t->pkg, t->ws, &t->o, mask, ev, err);
}

// The ranks still hold one state (checked at checkpoints, at the end, and
// after every update with CLEF_DP_CHECK=1).
static int dp_check_same(const train_run *t, clef_err *err)
{
    if (!t->dp || cli_dp_same_state(&t->hd))
        return 0;
    return clef_err_set(err, CLEF_ERR_RUN,
                        "the MPI ranks' weights differ after step %ld",
                        t->hd.step);
}

// ------------------------------------------------------------ checking --

// a and b name the same path, up to trailing slashes (for paths that do not
// exist yet, like the run dir before it is created).
static int same_path_text(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    while (na > 1 && a[na - 1] == '/')
        na--;
    while (nb > 1 && b[nb - 1] == '/')
        nb--;
    return na == nb && !strncmp(a, b, na);
}

// Initial head: --resume checkpoint, --init, the package's initial_weights,
// or a fresh draw from --seed.
static int load_head(train_run *t, clef_err *err)
{
    const train_cfg *c = &t->c;
    const clef_config *cfg = &t->pkg->cfg;
    int rc;
    if (c->resume) {
        clef_st_file f; // read once: the bits restored are the bits checked
        if ((rc = clef_st_open(c->resume, &f, err)))
            return rc;
        if ((rc = clef_head_alloc(&t->hd, cfg, err)) ||
            (rc = clef_checkpoint_read(&f, &t->hd, err))) {
            clef_st_close(&f);
            return rc;
        }
        const char *sha = clef_st_meta_get(&f, "package_sha256");
        if (!sha || !clef_sha256_equal(sha, t->pkg->sha256))
            rc = clef_err_input(err, c->resume, NULL,
                                "__metadata__.package_sha256",
                                "the checkpoint belongs to package %s, not "
                                "to this one (%s)",
                                sha ? sha : "(none)", t->pkg->sha256);
        if (!rc)
            rc = cli_train_check_resume(c, c->resume,
                                        clef_st_meta_get(&f, "train"), err);
        const char *es = clef_st_meta_get(&f, "early_stopping");
        if (!rc && es && !(t->es.meta = strdup(es)))
            rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        clef_st_close(&f);
        return rc;
    }
    const char *path = c->init ? c->init : t->pkg->init_path;
    if (!path) {
        if ((rc = clef_head_alloc(&t->hd, cfg, err)))
            return rc;
        clef_head_init_random(&t->hd, c->seed);
        return 0;
    }
    const char *pin = c->init ? NULL : t->pkg->init_sha256;
    if ((rc = clef_weights_load_pinned(path, pin, "initial_weights.sha256",
                                       cfg->h, &t->hd, err)))
        return rc;
    if (memcmp(&t->hd.cfg, cfg, sizeof(*cfg)) != 0)
        return clef_err_input(err, path, NULL, "head",
                              "the weights' head (hidden_size %d, width %d, "
                              "heads %d) differs from the package's "
                              "(hidden_size %d, width %d, heads %d)",
                              t->hd.cfg.d, t->hd.cfg.w, t->hd.cfg.h, cfg->d,
                              cfg->w, cfg->h);
    t->hd.step = 0; // fresh optimiser state
    return 0;
}

// --precision bf16: the head runs on a copy of the table with a bf16
// context for its parameters (core/mm.h).
static int precision_setup(train_run *t, clef_err *err)
{
    if (!t->c.bf16)
        return 0;
    if (clef_mm_init(&t->mm, &t->hd))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if (clef_mm_table(&t->ktab, &t->mm, &t->k16))
        return clef_err_input(err, NULL, NULL, "--precision",
                              "backend %s has no bf16 matrix product",
                              t->ktab.backend);
    t->k = &t->k16;
    return 0;
}

// Everything that can make the run exit 2, before anything is written.
static int prepare(train_run *t, int argc, char **argv, clef_err *err)
{
    int rc;
    if ((rc = cli_train_parse(argc, argv, &t->c, err)) ||
        (rc = cli_kernels(t->c.backend, &t->ktab, err)))
        return rc;
    t->k = &t->ktab;
    const train_cfg *c = &t->c;
    if (c->shard_records && !t->shared) // one process: the bits of N ranks
        t->dp = 1;
    if (t->dp) // ranks side by side on a host: each on cores of its own
        cli_set_first_core(cli_mpi_local_rank() *
                           clef_threads_resolve(c->threads, NULL));
    cli_set_threads(c->threads);
    cli_train_opts(c, &t->o);
    if (c->resume && access(c->resume, R_OK) != 0)
        return clef_err_input(err, c->resume, NULL, "--resume",
                              "cannot read the checkpoint: %s",
                              strerror(errno));
    if (c->init && access(c->init, R_OK) != 0)
        return clef_err_input(err, c->init, NULL, "--init",
                              "cannot read the weights: %s", strerror(errno));
    if (!t->shared) {
        // bf16: half-precision hidden states stay half, x̂ is kept in bf16
        if ((rc = (c->bf16 ? clef_package_read_half : clef_package_read)(
                 c->manifest, c->pin, &t->own_pkg, err)) ||
            (rc = (c->bf16 ? clef_package_prepare_bf16
                           : clef_package_prepare)(&t->own_pkg, t->k, err)))
            return rc;
        t->pkg = &t->own_pkg;
    }
    if (!c->has_dropout) { // the package's, as the reference's head takes it
        t->c.dropout = t->pkg->dropout;
        t->o.dropout = t->c.dropout;
    }
    if (t->pkg->nsplit[CLEF_SPLIT_TRAIN] == 0 && c->epochs > 0)
        return clef_err_input(err, t->pkg->manifest, NULL, "records",
                              "no record has split \"train\"");
    if ((rc = load_head(t, err)) || (rc = precision_setup(t, err)))
        return rc;
    if (cli_plan_build(t->pkg, c->batch, c->bucketed, c->seed, &t->plan))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    t->start_step = t->hd.step;
    t->total_steps = (long)c->epochs * t->plan.nbatches;
    if (t->start_step > t->total_steps)
        return clef_err_input(err, c->resume, NULL, "--epochs",
                              "the checkpoint is at step %ld, past the %ld "
                              "steps of %d epochs",
                              t->start_step, t->total_steps, c->epochs);
    if ((rc = train_es_setup(t, err)))
        return rc;
    // the run dir: absent or empty, or the folder of --resume; writable
    // (rank 0's: the only rank that writes)
    if (is_root(t) && ((rc = cli_run_dir_check(c->run_dir, c->resume, err)) ||
                       (rc = cli_outputs_not_inputs(c, t->pkg, err))))
        return rc;
    char jdir[PATH_MAX];
    if (c->json_out && is_root(t))
        cli_dirname(c->json_out, jdir, sizeof(jdir));
    if (c->json_out && is_root(t) && !cli_parent_writable(c->json_out) &&
        !same_path_text(jdir, c->run_dir))
        return clef_err_input(err, c->json_out, NULL, "--json-out",
                              "its folder does not exist or is not writable");
    if (!realpath(c->manifest, t->manifest_abs))
        snprintf(t->manifest_abs, sizeof(t->manifest_abs), "%s", c->manifest);
    // sized for the largest batch of c->batch records: packed in one pass
    clef_ws_limits lim;
    clef_ws_limits_for(t->pkg->records, t->pkg->nrecords, c->batch, &lim);
    t->ws = clef_ws_create_limits(&t->pkg->cfg, &lim);
    if (t->dp && !(t->rss = calloc((size_t)cli_mpi_size(), sizeof(double))))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if (!t->ws ||
        (t->dp && cli_dp_init(&t->dpx, t->hd.nparams, train_dp_shard(&t->c))))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    return cli_memory_attention(t->ws, err);
}

// ------------------------------------------------------ frozen inputs --

static int frozen_unchanged(train_run *t)
{
    return cli_frozen_same(t->pkg, t->frozen, t->nfrozen);
}

// ------------------------------------------------------- checkpoints --

static void ckpt_path(const train_run *t, long step, char *out, size_t n)
{
    snprintf(out, n, "%s/checkpoint-%ld.safetensors", t->c.run_dir, step);
}

// Nothing non-finite is ever written: params, m and v are checked first.
static int check_finite_state(const train_run *t, clef_err *err)
{
    const float *sets[3] = {t->hd.params, t->hd.m, t->hd.v};
    static const char *const what[3] = {"parameter", "AdamW m", "AdamW v"};
    for (int i = 0; i < 3; i++) {
        size_t at = 0;
        int ti = clef_first_nonfinite(&t->hd, sets[i], &at);
        if (ti >= 0)
            return clef_err_set(err, CLEF_ERR_RUN,
                                "non-finite %s %s[%zu] = %g after step %ld: "
                                "nothing written",
                                what[i], t->hd.tensors[ti].name, at,
                                (double)sets[i][t->hd.tensors[ti].offset + at],
                                t->hd.step);
    }
    return 0;
}

static int save_checkpoint(train_run *t, clef_err *err)
{
    char path[PATH_MAX], epoch[32], pos[32];
    int rc = check_finite_state(t, err);
    if (rc || (rc = train_es_write_best(t, err)))
        return rc;
    char *es = t->es.on ? train_es_meta(t) : NULL;
    if (t->es.on && !es)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    long nb = t->plan.nbatches ? t->plan.nbatches : 1;
    snprintf(epoch, sizeof(epoch), "%ld", t->hd.step / nb);
    snprintf(pos, sizeof(pos), "%ld", t->hd.step % nb);
    json_t *tj = cli_train_settings(&t->c, NULL, 0);
    char *train = json_dumps(tj, JSON_COMPACT);
    json_decref(tj);
    clef_st_meta meta[5] = {{"epoch", epoch},
                            {"position", pos},
                            {"package_sha256", t->pkg->sha256},
                            {"train", train ? train : "{}"},
                            {"early_stopping", es}};
    ckpt_path(t, t->hd.step, path, sizeof(path));
    rc = clef_checkpoint_save(path, &t->hd, meta, es ? 5 : 4, err);
    free(train);
    free(es);
    if (rc)
        return rc;
    if (t->nhist == 0 || t->hist[t->nhist - 1] != t->hd.step) {
        size_t sz = (size_t)(t->nhist + 1) * sizeof(long);
        long *h = realloc(t->hist, sz);
        if (h)
            t->hist = h;
        long *hb = h ? realloc(t->hbest, sz) : NULL;
        if (!hb)
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        t->hbest = hb;
        t->hist[t->nhist++] = t->hd.step;
    }
    t->hbest[t->nhist - 1] = t->es.on ? t->es.best_step : -1;
    if (t->c.kill_step > 0 && t->c.kill_step == t->hd.step) // tests only
        raise(SIGKILL);
    return 0;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

// Steps of the files "<prefix><step>.safetensors" in the run dir,
// ascending. Returns the count.
static int list_steps(const train_run *t, const char *prefix, long *steps,
                      int cap)
{
    size_t np = strlen(prefix);
    DIR *d = opendir(t->c.run_dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long s;
        char tail[32];
        if (!strncmp(e->d_name, prefix, np) &&
            sscanf(e->d_name + np, "%ld%31s", &s, tail) == 2 &&
            !strcmp(tail, ".safetensors") && n < cap)
            steps[n++] = s;
    }
    closedir(d);
    qsort(steps, (size_t)n, sizeof(long), cmp_long);
    return n;
}

// The run's history at its start: the run dir's checkpoints at or before
// the step it resumes from. Later ones belong to the future it abandoned:
// neither listed nor pruned (the steps it reaches again are overwritten).
static int history_init(train_run *t)
{
    long steps[4096];
    int n = list_steps(t, "checkpoint-", steps, 4096), k = 0;
    t->hist = malloc((size_t)(n + 1) * sizeof(long));
    t->hbest = malloc((size_t)(n + 1) * sizeof(long));
    if (!t->hist || !t->hbest)
        return -1;
    for (int i = 0; i < n; i++)
        if (t->c.resume && steps[i] <= t->start_step) {
            // only the resumed checkpoint's best is known
            t->hbest[k] =
                steps[i] == t->start_step && t->es.on ? t->es.best_step : -2;
            t->hist[k++] = steps[i];
        }
    t->nhist = k;
    return 0;
}

// Removes the best-<b> files no kept checkpoint refers to: b below the
// oldest best_step the kept ones name (best steps only grow along a run;
// best-<b> is the weights at step b, the same in any future of the run).
// Nothing when a kept checkpoint's best is unknown.
static void prune_best(train_run *t)
{
    if (!t->es.on)
        return;
    long lo = LONG_MAX, steps[4096];
    for (int i = 0; i < t->nhist; i++) {
        if (t->hbest[i] == -2)
            return;
        if (t->hbest[i] >= 0 && t->hbest[i] < lo)
            lo = t->hbest[i];
    }
    if (lo == LONG_MAX)
        return;
    int n = list_steps(t, "best-", steps, 4096);
    for (int i = 0; i < n && steps[i] < lo; i++) {
        char path[PATH_MAX];
        train_best_path(t, steps[i], path, sizeof(path));
        unlink(path);
    }
}

// Keeps the newest --keep-checkpoints of the run's own history.
static void prune_checkpoints(train_run *t)
{
    if (t->c.keep == 0 || t->nhist <= t->c.keep)
        return;
    int drop = t->nhist - t->c.keep;
    for (int i = 0; i < drop; i++) {
        char path[PATH_MAX];
        ckpt_path(t, t->hist[i], path, sizeof(path));
        unlink(path);
    }
    memmove(t->hist, t->hist + drop, (size_t)t->c.keep * sizeof(long));
    memmove(t->hbest, t->hbest + drop, (size_t)t->c.keep * sizeof(long));
    t->nhist = t->c.keep;
    prune_best(t);
}

// The final checkpoint reads back as the same params, moments and step
// (compared tensor by tensor: no second head in memory).
static int checkpoint_reloads(const train_run *t)
{
    char path[PATH_MAX];
    ckpt_path(t, t->hd.step, path, sizeof(path));
    clef_err e2;
    return clef_checkpoint_matches(path, &t->hd, &e2);
}

// 1 when every reloaded weight is the bf16 rounding of the master's.
static int same_as_bf16(const clef_head *master, const clef_head *h2)
{
    int same = 1;
    for (size_t i = 0; i < master->nparams && same; i++) {
        uint16_t b;
        clef_scalar_kernels.cvt_f32_bf16(1, master->params + i, &b);
        const float want = clef_bf16_to_f32(b);
        same = !memcmp(&want, h2->params + i, sizeof(float));
    }
    return same;
}

// The exported weights, reloaded, give the same logits bit for bit (F32;
// in a bf16 run: the same parameter bits, as the mirror is the run's);
// BF16 weights are, value for value, the rounded master weights.
static int export_parity(train_run *t, const char *path)
{
    clef_head h2;
    clef_err e2;
    cli_eval ev;
    if (clef_weights_load(path, t->pkg->cfg.h, &h2, &e2))
        return 0;
    int same = 0;
    if (t->c.export_bf16)
        same = same_as_bf16(&t->hd, &h2);
    else if (t->c.bf16) // same bits in, same logits out: no mirror for h2
        same = h2.nparams == t->hd.nparams &&
               !memcmp(h2.params, t->hd.params, sizeof(float) * h2.nparams);
    else if (!cli_evaluate(t->k, &h2, t->pkg, t->ws, &t->o, &ev, &e2)) {
        same = !memcmp(ev.z, t->after.z,
                       ev.zoff[t->pkg->nrecords] * sizeof(float));
        cli_eval_free(&ev);
    }
    clef_head_free(&h2);
    return same;
}

// ----------------------------------------------------------- progress --

typedef struct progress {
    int on;
    double t0, last;
} progress;

static void progress_show(progress *pb, const train_run *t, long step,
                          double loss, int final)
{
    if (!pb->on)
        return;
    double now = cli_now();
    if (!final && now - pb->last < 0.1)
        return;
    pb->last = now;
    long done = step - t->start_step, left = t->total_steps - step;
    double el = now - pb->t0, ups = el > 0 ? done / el : 0;
    long nb = t->plan.nbatches ? t->plan.nbatches : 1;
    int width = 24,
        fill = t->total_steps ? (int)(width * step / t->total_steps) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr,
            "\r[%s] step %ld/%ld epoch %ld/%d loss %.4f %.1f upd/s left %.1fs ",
            bar, step, t->total_steps, (step + nb - 1) / nb, t->c.epochs, loss,
            ups, ups > 0 ? left / ups : 0.0);
    if (final)
        fputc('\n', stderr);
}

// -------------------------------------------------------------- train --

// A checkpoint after update `step`: every --checkpoint-every steps, and
// once --checkpoint-seconds have passed since the last one (a checkpoint
// taken at any step resumes to the same bits, so its timing changes no
// result).
static int checkpoint_due(const train_run *t, long step, double last)
{
    const long every = t->c.checkpoint_every;
    const double secs = t->c.checkpoint_seconds;
    return (every && step % every == 0) ||
           (secs > 0 && cli_now() - last >= secs);
}

// A checkpoint (rank 0 writes it), then the ranks agree and check that they
// still hold one state.
static int checkpoint_all(train_run *t, clef_err *err)
{
    int rc = 0;
    if (is_root(t) && !(rc = save_checkpoint(t, err)))
        prune_checkpoints(t);
    rc = agree(t, rc, err);
    return rc ? rc : dp_check_same(t, err);
}

static double one_update(train_run *t, const clef_record **recs, int n)
{
    if (t->dp)
        return cli_dp_step(&t->dpx, t->k, &t->hd, recs, n, t->ws, &t->o);
    return clef_train_step(t->k, &t->hd, recs, n, t->ws, &t->o);
}

static int train_loop(train_run *t, clef_err *err)
{
    const clef_record **recs = malloc(((size_t)t->c.batch + 1) * sizeof(*recs));
    if (!recs)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    progress pb = {.on = isatty(2) && !t->c.quiet && is_root(t),
                   .t0 = cli_now()};
    const char *chk = getenv("CLEF_DP_CHECK");
    const int check_every = t->dp && chk && !strcmp(chk, "1");
    long nb = t->plan.nbatches;
    long epoch = -1;
    double loss = 0;
    int rc = 0;
    double t0 = cli_now(), last_ckpt = t0;
    while (t->hd.step < t->total_steps && !train_es_stopped(t)) {
        long s = t->hd.step;
        if (s / nb != epoch) {
            epoch = s / nb;
            cli_plan_epoch(&t->plan, epoch);
        }
        int b = t->plan.perm[s % nb];
        int n = t->plan.boff[b + 1] - t->plan.boff[b];
        for (int i = 0; i < n; i++)
            recs[i] = &t->pkg->records[t->plan.order[t->plan.boff[b] + i]];
        loss = one_update(t, recs, n);
        if (!isfinite(loss)) {
            rc = clef_err_set(err, CLEF_ERR_RUN,
                              "non-finite loss %g at step %ld (epoch %ld)",
                              loss, s + 1, epoch + 1);
            break;
        }
        if (t->hd.step != s + 1)
            t->hd.step = s + 1; // defensive: the step counter moves once
        long step = t->hd.step;
        if (step == t->c.fault_step) { // fault injection for the tests
            t->hd.params[t->hd.nparams - 1] = NAN;
            clef_mm_params_changed(t->k);
        }
        if (check_every && (rc = dp_check_same(t, err)))
            break;
        progress_show(&pb, t, step, loss, 0);
        // never the test records: they are run once, after training
        if (t->c.eval_every && step % t->c.eval_every == 0 &&
            (step != t->total_steps || t->es.on)) {
            cli_eval ev;
            if ((rc = eval_splits(t, MASK_TRAIN_VALIDATION, &ev, err)))
                break;
            json_array_append_new(t->history,
                                  train_history_point(t->pkg, step, &ev));
            if (t->es.on)
                train_es_observe(t, step, &ev);
            cli_eval_free(&ev);
        }
        if (checkpoint_due(t, step, last_ckpt) && step != t->total_steps &&
            !train_es_stopped(t)) {
            if ((rc = checkpoint_all(t, err)))
                break;
            last_ckpt = cli_now();
        }
    }
    t->train_s = cli_now() - t0;
    if (!rc && t->total_steps > t->start_step)
        progress_show(&pb, t, t->hd.step, loss, 1);
    free(recs);
    return rc;
}

// The history's last point is the end of training.
static int final_history_point(train_run *t, const cli_eval *ev, clef_err *err)
{
    json_t *last = json_array_get(t->history, json_array_size(t->history) - 1);
    if (last && json_integer_value(json_object_get(last, "step")) == t->hd.step)
        return 0;
    cli_eval own;
    int rc = 0;
    if (!ev && (rc = eval_splits(t, MASK_TRAIN_VALIDATION, &own, err)))
        return rc;
    json_array_append_new(
        t->history, train_history_point(t->pkg, t->hd.step, ev ? ev : &own));
    if (!ev)
        cli_eval_free(&own);
    return 0;
}

// Every record, test included, with the weights that are exported.
static int evaluate_after(train_run *t, clef_err *err)
{
    int rc = eval_splits(t, 7u, &t->after, err);
    if (rc)
        return rc;
    for (long i = 0; i < (long)t->after.zoff[t->pkg->nrecords]; i++)
        if (!isfinite(t->after.z[i]))
            return clef_err_set(err, CLEF_ERR_RUN,
                                "non-finite logit after training");
    return 0;
}

// The head's parameters as run-dir/name (atomically).
static int save_as(const train_run *t, const char *name,
                   const clef_st_meta *meta, int nmeta, clef_err *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", t->c.run_dir, name);
    return clef_weights_save_as(path, &t->hd,
                                t->c.export_bf16 ? CLEF_DT_BF16 : CLEF_DT_F32,
                                meta, nmeta, err);
}

// run-dir/name as a second name of the file at path (a hard link: the
// writers replace files by rename, so the two never diverge in place).
static int link_as(const train_run *t, const char *path, const char *name,
                   clef_err *err)
{
    char dst[PATH_MAX + 32];
    snprintf(dst, sizeof(dst), "%s/%s", t->c.run_dir, name);
    if ((unlink(dst) != 0 && errno != ENOENT) || link(path, dst) != 0)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot link to %s: %s", dst,
                            path, strerror(errno));
    return 0;
}

// Everything after the run dir exists. Failures here exit 1. With early
// stopping the checkpoint keeps the latest state, then the best weights
// replace the parameters for the evaluation after training and the export.
static int run(train_run *t, clef_err *err)
{
    int rc, checks[3] = {0, 0, 0};
    char wpath[PATH_MAX + 32];
    const char *weights = NULL;
    const int es = t->es.on;
    if ((rc = eval_splits(t, 7u, &t->before, err)))
        goto out;
    json_array_append_new(t->history,
                          train_history_point(t->pkg, t->hd.step, &t->before));
    if ((rc = train_loop(t, err)))
        goto out;
    if (!es && ((rc = evaluate_after(t, err)) ||
                (rc = final_history_point(t, &t->after, err))))
        goto out;
    if (es && (rc = final_history_point(t, NULL, err)))
        goto out;
    if ((rc = checkpoint_all(t, err)))
        goto out;
    checks[1] = !is_root(t) || checkpoint_reloads(t);
    clef_st_meta meta[2] = {{"package_sha256", t->pkg->sha256},
                            {"provenance", t->pkg->provenance}};
    const int nmeta = t->pkg->provenance ? 2 : 1;
    if (es &&
        (rc = agree(
             t,
             is_root(t) ? save_as(t, "last.safetensors", meta, nmeta, err) : 0,
             err)))
        goto out;
    if (es && t->es.best_step >= 0) {
        memcpy(t->hd.params, t->es.best, t->hd.nparams * sizeof(float));
        clef_mm_params_changed(t->k);
    }
    if (es && (rc = evaluate_after(t, err)))
        goto out;
    snprintf(wpath, sizeof(wpath), "%s/weights.safetensors", t->c.run_dir);
    if (!is_root(t)) // the rest writes and checks files: rank 0's
        goto out;
    if ((rc = save_as(t, "weights.safetensors", meta, nmeta, err)) ||
        (es && (rc = link_as(t, wpath, "best.safetensors", err))))
        goto out;
    weights = wpath;
    checks[0] = t->shared || frozen_unchanged(t); // a sweep checks once
    checks[2] = export_parity(t, wpath);
    static const char *names[3] = {"frozen_inputs_unchanged",
                                   "checkpoint_reload", "export_parity"};
    for (int i = 0; i < 3; i++)
        if (!checks[i]) {
            rc = clef_err_set(err, CLEF_ERR_RUN, "check %s failed", names[i]);
            break;
        }
out:;
    if (t->dp) // rank 0 alone knows whether its files went well
        train_rss_gather(t);
    if (!is_root(t))
        return agree(t, rc, err);
    json_t *res =
        train_result_json(t, rc ? err : NULL, weights ? checks : NULL, weights);
    clef_err werr = {0};
    int wrc = train_write_results(t, res, &werr);
    json_decref(res);
    if (!rc && wrc) {
        *err = werr;
        rc = wrc;
    }
    return agree(t, rc, err);
}

// One short report on stdout (the details are in result.json).
static void print_summary(const train_run *t)
{
    const cli_eval *b = &t->before, *a = &t->after;
    printf("clef train: %ld steps (to step %ld) in %.3f s, train loss %.6g -> "
           "%.6g",
           t->hd.step - t->start_step, t->hd.step, t->train_s,
           b->loss[CLEF_SPLIT_TRAIN], a->loss[CLEF_SPLIT_TRAIN]);
    if (a->nq[CLEF_SPLIT_VALIDATION])
        printf(", validation loss %.6g -> %.6g", b->loss[CLEF_SPLIT_VALIDATION],
               a->loss[CLEF_SPLIT_VALIDATION]);
    if (t->es.on && t->es.best_step >= 0)
        printf(", early stopping: best step %ld (validation loss %.6g)%s",
               t->es.best_step, t->es.best_value,
               train_es_stopped(t) && t->hd.step < t->total_steps
                   ? ", stopped early"
                   : "");
    printf("\nweights: %s/weights.safetensors\nresult: %s/result.json\n",
           t->run_abs, t->run_abs);
}

// The run after prepare(): frozen hashes, the run dir, training.
static int train_prepared(train_run *t, clef_err *err)
{
    t->history = json_array();
    if (!t->history)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if (!is_root(t)) // writes nothing: no run dir, no history
        return run(t, err);
    if (!t->shared) {
        t->nfrozen = cli_frozen_hashes(t->pkg, NULL);
        if (!(t->frozen = cli_alloc_hashes(t->nfrozen)))
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        cli_frozen_hashes(t->pkg, t->frozen);
    }
    if (cli_mkdirs(t->c.run_dir) != 0)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot create: %s",
                            t->c.run_dir, strerror(errno));
    cli_remove_stale_temps(t->c.run_dir); // of interrupted writes
    if (history_init(t))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if (!realpath(t->c.run_dir, t->run_abs))
        snprintf(t->run_abs, sizeof(t->run_abs), "%s", t->c.run_dir);
    return run(t, err);
}

static void train_run_free(train_run *t)
{
    json_decref(t->history);
    free(t->hist);
    free(t->hbest);
    free(t->es.best);
    free(t->es.meta);
    cli_free_hashes(t->frozen, t->nfrozen);
    cli_eval_free(&t->before);
    cli_eval_free(&t->after);
    cli_plan_free(&t->plan);
    cli_dp_free(&t->dpx);
    free(t->rss);
    if (t->ws)
        clef_ws_free(t->ws);
    clef_mm_free(&t->mm);
    clef_head_free(&t->hd);
    if (!t->shared)
        clef_package_free(&t->own_pkg);
    free(t);
}

int cli_train_with(int argc, char **argv, const clef_package *shared,
                   int check_only, clef_err *err)
{
    train_run *t = calloc(1, sizeof(*t));
    if (!t)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    t->t0 = cli_now();
    t->shared = shared != NULL;
    t->pkg = shared;
    t->dp = !shared && cli_mpi_on(); // a sweep's runs are each one process
    int rc = agree(t, prepare(t, argc, argv, err), err); // exit 2 on all
    if (!rc && !check_only)
        rc = train_prepared(t, err);
    if (!rc && !shared && !check_only && is_root(t))
        print_summary(t);
    train_run_free(t);
    return rc;
}

int cli_train(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(cli_train_help, stdout);
        return 0;
    }
    clef_err err = {0};
    int rc = cli_train_with(argc, argv, NULL, 0, &err);
    if (rc)
        cli_fail("train", &err);
    return rc;
}

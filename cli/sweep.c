// clef sweep (CLI.md): many `clef train` runs over one package read and
// prepared once, P at a time on threads of this process, resumable, with a
// leaderboard (sweep_board.c). The spec and run names: sweep_spec.c.
//
// Under mpirun (issue 21) every rank reads and prepares the package once and
// runs its share of the runs, run i on rank i mod N, P at a time; rank 0
// writes the spec before any run starts and the leaderboard after every rank
// is done. The sweep dir must be on a file system every rank sees.
//
// DIR/sweep-spec.json  the package's SHA-256, the shared flags, the metric
//                      and every run's name and settings: a rerun must match
// DIR/runs/<name>/     the run's own `clef train` run dir, plus sweep-done.json
//                      (the SHA-256 of its weights and result) once it is done
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_mpi.h"
#include "scheduler/threads.h"
#include "sha256.h"
#include "sweep.h"

typedef struct sweep {
    const sweep_spec *s;
    const clef_package *pkg;
    pthread_mutex_t lock;
    int rank, nranks;    // this rank's runs: i ≡ rank (mod nranks)
    int share;           // how many runs that is
    int next;            // the next run to start
    int done, running;   // runs finished (or found finished), running now
    int failed, skipped; // of the done ones
    int ran;             // runs this process ran to the end (for the ETA)
    double t0, ran_s;    // start; the wall time of those runs, summed
    int tty;
} sweep;

static void run_dir_of(const sweep_spec *s, int i, char *out, size_t n)
{
    snprintf(out, n, "%s/runs/%s", s->dir, s->runs[i].name);
}

// ------------------------------------------------------ finished runs --

static int file_sha(const char *path, char hex[CLEF_SHA256_HEX])
{
    clef_err e;
    return clef_sha256_file(path, hex, &e);
}

// A run dir's weights, result and sweep-done.json (PATH_MAX + 32 each).
static void done_paths(const char *rd, char *w, char *r, char *m)
{
    const size_t n = PATH_MAX + 32;
    snprintf(w, n, "%s/weights.safetensors", rd);
    snprintf(r, n, "%s/result.json", rd);
    snprintf(m, n, "%s/sweep-done.json", rd);
}

// DIR/runs/<name>/sweep-done.json: the digests of what the finished run
// wrote, so a rerun can check its outputs before it skips it.
static int mark_done(const char *rd, clef_err *err)
{
    char w[PATH_MAX + 32], r[PATH_MAX + 32], m[PATH_MAX + 32];
    char hw[CLEF_SHA256_HEX], hr[CLEF_SHA256_HEX];
    done_paths(rd, w, r, m);
    if (file_sha(w, hw) || file_sha(r, hr))
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot read its outputs",
                            rd);
    json_t *j =
        json_pack("{s:s, s:s}", "weights_sha256", hw, "result_sha256", hr);
    int rc = cli_write_json(m, j, JSON_INDENT(2), err);
    json_decref(j);
    return rc;
}

// 1 when the run finished and its weights and result are the files it
// wrote then.
static int is_done(const char *rd)
{
    char w[PATH_MAX + 32], r[PATH_MAX + 32], m[PATH_MAX + 32];
    char hw[CLEF_SHA256_HEX], hr[CLEF_SHA256_HEX];
    done_paths(rd, w, r, m);
    json_t *j = json_load_file(m, 0, NULL);
    if (!j)
        return 0;
    const char *ew = json_string_value(json_object_get(j, "weights_sha256"));
    const char *er = json_string_value(json_object_get(j, "result_sha256"));
    int ok = ew && er && !file_sha(w, hw) && !file_sha(r, hr) &&
             clef_sha256_equal(ew, hw) && clef_sha256_equal(er, hr);
    json_decref(j);
    return ok;
}

// ---------------------------------------------------- unfinished runs --

// The newest checkpoint-<step>.safetensors in rd, or "" (none).
static void last_checkpoint(const char *rd, char *out, size_t n)
{
    out[0] = '\0';
    DIR *d = opendir(rd);
    if (!d)
        return;
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        long step;
        char tail[32];
        if (sscanf(e->d_name, "checkpoint-%ld%31s", &step, tail) == 2 &&
            !strcmp(tail, ".safetensors") && step > best) {
            best = step;
            snprintf(out, n, "%s/%s", rd, e->d_name);
        }
    }
    closedir(d);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

// A run dir without a checkpoint holds nothing to keep: start it afresh.
static int clear_run_dir(const char *rd)
{
    struct stat st;
    if (lstat(rd, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(rd, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

// ------------------------------------------------------------ progress --

static void progress(sweep *w, int i, const char *rd, int rc,
                     const clef_err *err, int skipped)
{
    const sweep_spec *s = w->s;
    sweep_result r;
    sweep_result_read(s, rd, &r);
    const char *metric = s->metric_acc ? "val_accuracy" : "val_loss";
    char who[32] = ""; // under MPI: the rank, and its share of the runs
    if (w->nranks > 1)
        snprintf(who, sizeof(who), "rank %d: ", w->rank);
    if (w->tty)
        fputs("\r\033[K", stderr);
    if (rc)
        printf("%srun %d/%d %s: failed (exit %d): %s\n", who, w->done, w->share,
               s->runs[i].name, rc, err->msg);
    else
        printf("%srun %d/%d %s: %s %.6g at step %ld, train loss %.6g, "
               "%.1f upd/s, %.2f s%s\n",
               who, w->done, w->share, s->runs[i].name, metric, r.metric,
               r.best_step, r.train_loss, r.updates_per_s, r.wall_s,
               skipped ? " (done before: outputs checked)" : "");
    fflush(stdout);
    if (!w->tty)
        return;
    const int left = w->share - w->done;
    const double per = w->ran ? w->ran_s / w->ran : 0;
    const int par = s->parallel > 0 ? s->parallel : 1;
    fprintf(stderr, "[sweep] %s%d/%d done, %d running, %d failed, ETA %.0f s",
            who, w->done, w->share, w->running, w->failed,
            w->ran ? per * left / par : 0.0);
}

// -------------------------------------------------------------- runs --

static int run_one(sweep *w, int i, clef_err *err, int *skipped)
{
    const sweep_spec *s = w->s;
    char rd[PATH_MAX], resume[PATH_MAX + 300];
    run_dir_of(s, i, rd, sizeof(rd));
    *skipped = is_done(rd);
    if (*skipped)
        return 0;
    last_checkpoint(rd, resume, sizeof(resume));
    if (!resume[0] && clear_run_dir(rd) != 0)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot clear: %s", rd,
                            strerror(errno));
    int argc;
    char **argv = sweep_argv(s, i, rd, resume[0] ? resume : NULL, &argc);
    if (!argv)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    int rc = cli_train_with(argc, argv, w->pkg, 0, err);
    sweep_argv_free(argv, argc);
    if (!rc)
        rc = mark_done(rd, err);
    return rc;
}

typedef struct worker {
    sweep *w;
    int id;
} worker;

static void *worker_main(void *arg)
{
    worker *wk = arg;
    sweep *w = wk->w;
    // ranks side by side on a host: each on cores of its own
    const int first = cli_mpi_local_rank() * w->s->parallel + wk->id;
    cli_set_first_core(first * w->s->threads_per_run);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        const int i = w->next < w->s->nruns ? w->next : -1;
        if (i >= 0)
            w->next += w->nranks;
        if (i >= 0)
            w->running++;
        pthread_mutex_unlock(&w->lock);
        if (i < 0)
            return NULL;
        clef_err err = {0};
        int skipped = 0;
        const double t0 = cli_now();
        int rc = run_one(w, i, &err, &skipped);
        char rd[PATH_MAX];
        run_dir_of(w->s, i, rd, sizeof(rd));
        pthread_mutex_lock(&w->lock);
        w->running--;
        w->done++;
        w->failed += rc != 0;
        w->skipped += skipped;
        if (!rc && !skipped) {
            w->ran++;
            w->ran_s += cli_now() - t0;
        }
        progress(w, i, rd, rc, &err, skipped);
        pthread_mutex_unlock(&w->lock);
    }
}

static int run_all(sweep *w, clef_err *err)
{
    const int P = w->s->parallel;
    pthread_t *th = calloc((size_t)P, sizeof(*th));
    worker *wk = calloc((size_t)P, sizeof(*wk));
    int started = 0, rc = 0;
    if (!th || !wk)
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)16 << 20);
    for (int p = 0; !rc && p < P; p++) {
        wk[p] = (worker){w, p};
        if (pthread_create(&th[p], &attr, worker_main, &wk[p]) != 0)
            break; // the started workers take every run
        started++;
    }
    pthread_attr_destroy(&attr);
    if (!rc && !started)
        rc = clef_err_set(err, CLEF_ERR_RUN, "cannot start a worker thread");
    for (int p = 0; p < started; p++)
        pthread_join(th[p], NULL);
    if (w->tty)
        fputs("\r\033[K", stderr);
    free(th);
    free(wk);
    return rc;
}

// ------------------------------------------------------------ checks --

// DIR absent, empty, or a sweep dir of this very sweep; 0 or exit 2.
static int check_sweep_dir(const sweep_spec *s, json_t *spec, clef_err *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/sweep-spec.json", s->dir);
    if (cli_dir_absent_or_empty(s->dir))
        return 0;
    struct stat st;
    if (stat(s->dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return clef_err_input(err, s->dir, NULL, "--sweep-dir",
                              "exists and is not a directory");
    json_error_t je;
    json_t *old = json_load_file(path, 0, &je);
    if (!old)
        return clef_err_input(err, s->dir, NULL, "--sweep-dir",
                              "is not empty and holds no sweep-spec.json: not "
                              "a sweep dir");
    static const char *const keys[] = {"package_sha256", "shared", "metric",
                                       "runs"};
    static const char *const what[] = {
        "a different package", "different shared settings",
        "a different --metric", "different runs"};
    int rc = 0;
    for (int k = 0; k < 4 && !rc; k++)
        if (!json_equal(json_object_get(old, keys[k]),
                        json_object_get(spec, keys[k])))
            rc = clef_err_input(err, path, NULL, keys[k],
                                "this sweep dir holds a sweep of %s: refused "
                                "(use a new --sweep-dir)",
                                what[k]);
    json_decref(old);
    return rc;
}

// Everything that can exit 2 in a run, tried on the first one (the rest
// differ only in settings its flags parse already checked).
static int check_first_run(const sweep_spec *s, const clef_package *pkg,
                           clef_err *err)
{
    char rd[PATH_MAX];
    snprintf(rd, sizeof(rd), "%s/runs/.check", s->dir);
    int argc;
    char **argv = sweep_argv(s, 0, rd, NULL, &argc);
    if (!argv)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    int rc = cli_train_with(argc, argv, pkg, 1, err);
    sweep_argv_free(argv, argc);
    return rc;
}

// ------------------------------------------------------------- main --

// Everything that can exit 2, before anything is written: the package read
// and prepared as clef train alone would prepare it for each run (x̂ in bf16
// alone when every run trains in bf16; in float, and in bf16 beside it when
// the runs mix precisions), the sweep dir, the first run's flags.
static int sweep_setup(sweep_spec *s, clef_package *pkg, json_t **spec,
                       clef_err *err)
{
    clef_kernels k;
    int rc;
    const int N = cli_mpi_size(), me = cli_mpi_rank();
    const int share = (s->nruns - me + N - 1) / N; // runs me, me + N, ...
    if ((rc = cli_kernels(s->backend ? s->backend : "auto", &k, err)))
        return rc;
    if (!s->parallel) { // the host's cores, shared by its ranks
        int cores = clef_threads_resolve(0, NULL) / s->threads_per_run /
                    cli_mpi_local_size();
        s->parallel = cores > 0 ? cores : 1;
    }
    if (s->parallel > share)
        s->parallel = share > 0 ? share : 1;
    cli_set_threads(s->threads_per_run); // the package's preparation
    const int b16 = s->all_bf16;
    if ((rc = (b16 ? clef_package_read_half
                   : clef_package_read)(s->manifest, s->pin, pkg, err)) ||
        (rc = (b16 ? clef_package_prepare_bf16 : clef_package_prepare)(pkg, &k,
                                                                       err)) ||
        (!b16 && s->any_bf16 && (rc = clef_package_add_bf16(pkg, &k, err))))
        return rc;
    if (!(*spec = sweep_spec_json(s, pkg->sha256)))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if ((rc = check_sweep_dir(s, *spec, err)))
        return rc;
    return check_first_run(s, pkg, err);
}

// DIR/runs and DIR/sweep-spec.json (rank 0 alone under MPI).
static int write_spec(const sweep_spec *s, json_t *spec, clef_err *err)
{
    char runs[PATH_MAX], sp[PATH_MAX + 32];
    snprintf(runs, sizeof(runs), "%s/runs", s->dir);
    snprintf(sp, sizeof(sp), "%s/sweep-spec.json", s->dir);
    if (cli_mkdirs(runs) != 0)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot create: %s", runs,
                            strerror(errno));
    return cli_write_json(sp, spec, JSON_INDENT(2), err);
}

// This rank's share of the runs, then the leaderboard from rank 0 once
// every rank is done.
static int sweep_share(const sweep_spec *s, const clef_package *pkg,
                       clef_err *err)
{
    const int N = cli_mpi_size(), me = cli_mpi_rank();
    int nfrozen = cli_frozen_hashes(pkg, NULL), rc;
    char **frozen = cli_alloc_hashes(nfrozen);
    if (!frozen)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    cli_frozen_hashes(pkg, frozen);
    sweep w = {.s = s,
               .pkg = pkg,
               .rank = me,
               .nranks = N,
               .share = (s->nruns - me + N - 1) / N,
               .next = me,
               .t0 = cli_now(),
               .tty = isatty(2)};
    pthread_mutex_init(&w.lock, NULL);
    if (me == 0)
        printf("clef sweep: %d runs, %d at a time on %d thread%s each%s\n",
               s->nruns, s->parallel, s->threads_per_run,
               s->threads_per_run > 1 ? "s" : "",
               N > 1 ? " on each of the MPI ranks" : "");
    if (N > 1 && me == 0)
        printf("clef sweep: %d MPI ranks, run i on rank i mod %d\n", N, N);
    fflush(stdout);
    rc = cli_mpi_agree(run_all(&w, err), err);
    pthread_mutex_destroy(&w.lock);
    const int frozen_ok =
        cli_mpi_min(cli_frozen_same(pkg, frozen, nfrozen)) == 1;
    const int failed = (int)cli_mpi_sum(w.failed);
    const int skipped = (int)cli_mpi_sum(w.skipped);
    cli_free_hashes(frozen, nfrozen);
    if (rc)
        return rc;
    if (me == 0)
        rc = sweep_board(s, pkg->sha256, frozen_ok, err);
    if ((rc = cli_mpi_agree(rc, err)))
        return rc;
    if (me == 0)
        printf("clef sweep: %d runs in %.2f s (%d done before, %d failed)\n",
               s->nruns, cli_now() - w.t0, skipped, failed);
    if (!frozen_ok)
        return clef_err_set(err, CLEF_ERR_RUN,
                            "check frozen_inputs_unchanged failed");
    if (failed)
        return clef_err_set(err, CLEF_ERR_RUN, "%d of %d runs failed", failed,
                            s->nruns);
    return 0;
}

static int sweep_main(sweep_spec *s, clef_err *err)
{
    clef_package pkg = {0};
    json_t *spec = NULL;
    int rc = cli_mpi_agree(sweep_setup(s, &pkg, &spec, err), err);
    if (!rc)
        rc = cli_mpi_agree(cli_mpi_rank() ? 0 : write_spec(s, spec, err), err);
    if (!rc)
        rc = sweep_share(s, &pkg, err);
    json_decref(spec);
    clef_package_free(&pkg);
    return rc;
}

int cli_sweep(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(cli_sweep_help, stdout);
        return 0;
    }
    sweep_spec s;
    clef_err err = {0};
    int rc = cli_mpi_agree(sweep_spec_parse(argc, argv, &s, &err), &err);
    if (!rc)
        rc = sweep_main(&s, &err);
    if (rc)
        cli_fail("sweep", &err);
    sweep_spec_free(&s);
    return rc;
}

// clef train's run dir: is it usable before the first update (absent, empty
// or the --resume folder; writable; not dangling), the temporaries that an
// interrupted write left in it, and outputs that would overwrite an input.
#define _XOPEN_SOURCE 700 // realpath
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train.h"

// "<output>.tmp.<pid>": the temporary name clef_st_write and cli_write_json
// give a file before renaming it. *pid gets the writer's process id.
static int temp_name(const char *name, long *pid)
{
    const char *t = strstr(name, ".tmp.");
    if (!t || t == name)
        return 0;
    const char *d = t + 5;
    if (!*d)
        return 0;
    for (const char *c = d; *c; c++)
        if (*c < '0' || *c > '9')
            return 0;
    size_t n = (size_t)(t - name);
    long step;
    char tail[32];
    int is_out = (n == 11 && !strncmp(name, "result.json", n)) ||
                 (n == 19 && !strncmp(name, "weights.safetensors", n));
    if (!is_out && sscanf(name, "checkpoint-%ld%31[^0-9]", &step, tail) == 2)
        is_out = !strncmp(tail, ".safetensors.tmp.", 17);
    if (!is_out)
        return 0;
    *pid = strtol(d, NULL, 10);
    return 1;
}

// A temporary whose writer is gone (or is this process, which has none open).
static int stale_temp(const char *name)
{
    long pid;
    if (!temp_name(name, &pid))
        return 0;
    if (pid == (long)getpid() || pid <= 0)
        return 1;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

// 1 when dir holds nothing but "." / ".." and stale temporaries.
static int only_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int ok = 1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            !stale_temp(e->d_name)) {
            ok = 0;
            break;
        }
    closedir(d);
    return ok;
}

int cli_remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d))) {
        if (!stale_temp(e->d_name))
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) <
                (int)sizeof(path) &&
            unlink(path) == 0)
            n++;
    }
    closedir(d);
    return n;
}

// The nearest folder above an absent path must exist and be writable: the
// run dir is created there.
static int creatable(const char *path, clef_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s", path);
    for (int depth = 0; depth < 256; depth++) {
        char up[PATH_MAX];
        cli_dirname(p, up, sizeof(up));
        struct stat st;
        if (stat(up, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return clef_err_input(err, path, NULL, "--run-dir",
                                      "cannot be created: %s is not a "
                                      "directory",
                                      up);
            if (access(up, W_OK | X_OK) != 0)
                return clef_err_input(err, path, NULL, "--run-dir",
                                      "cannot be created: %s is not "
                                      "writable (%s)",
                                      up, strerror(errno));
            return 0;
        }
        if (errno != ENOENT || !strcmp(up, p))
            break;
        snprintf(p, sizeof(p), "%s", up);
    }
    return clef_err_input(err, path, NULL, "--run-dir",
                          "cannot be created: no folder above it exists");
}

int cli_run_dir_check(const char *run_dir, const char *resume, clef_err *err)
{
    struct stat st, lst;
    if (stat(run_dir, &st) != 0) {
        if (errno == ENOENT && lstat(run_dir, &lst) == 0)
            return clef_err_input(err, run_dir, NULL, "--run-dir",
                                  "is a symbolic link to nothing (dangling)");
        if (errno != ENOENT)
            return clef_err_input(err, run_dir, NULL, "--run-dir",
                                  "cannot be used: %s", strerror(errno));
        return creatable(run_dir, err);
    }
    if (!S_ISDIR(st.st_mode))
        return clef_err_input(err, run_dir, NULL, "--run-dir",
                              "exists and is not a directory");
    if (access(run_dir, W_OK | X_OK) != 0)
        return clef_err_input(err, run_dir, NULL, "--run-dir",
                              "is not writable (%s): nothing could be saved",
                              strerror(errno));
    if (only_stale_temps(run_dir))
        return 0;
    char rdir[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    if (resume) {
        cli_dirname(resume, rdir, sizeof(rdir));
        if (realpath(rdir, a) && realpath(run_dir, b) && !strcmp(a, b))
            return 0;
    }
    return clef_err_input(err, run_dir, NULL, "--run-dir",
                          "exists and is not empty (refused unless --resume "
                          "points into it)");
}

// ---- outputs that are inputs ----

static int same_inode(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A file the run writes: it must not be (a link to) a file it reads.
static int check_output(const char *out, const char *flag,
                        const char *const *in, const char *const *in_what,
                        int nin, clef_err *err)
{
    for (int i = 0; i < nin; i++)
        if (same_inode(out, in[i]))
            return clef_err_input(err, out, NULL, flag,
                                  "is the run's input %s (%s): an output "
                                  "must not overwrite an input",
                                  in_what[i], in[i]);
    return 0;
}

int cli_outputs_not_inputs(const train_cfg *c, const clef_package *pkg,
                           clef_err *err)
{
    int nin = 0, cap = 6 + pkg->nshards;
    const char **in = calloc((size_t)cap, sizeof(*in));
    const char **what = calloc((size_t)cap, sizeof(*what));
    int rc = 0;
    if (!in || !what) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto out;
    }
#define INPUT(p, w)                                                            \
    do {                                                                       \
        if (p) {                                                               \
            in[nin] = (p);                                                     \
            what[nin++] = (w);                                                 \
        }                                                                      \
    } while (0)
    INPUT(pkg->manifest, "package manifest");
    INPUT(pkg->lexical_path, "lexical table");
    INPUT(pkg->init_path, "initial weights");
    INPUT(c->init, "--init weights");
    INPUT(c->resume, "--resume checkpoint");
    for (int s = 0; s < pkg->nshards; s++)
        INPUT(pkg->shard_paths[s], "shard");
#undef INPUT
    if (c->json_out &&
        (rc = check_output(c->json_out, "--json-out", in, what, nin, err)))
        goto out;
    // the run dir's own outputs (with --resume the run dir is not empty)
    static const char *const names[2] = {"result.json", "weights.safetensors"};
    char path[PATH_MAX + 32];
    for (int i = 0; i < 2 && !rc; i++) {
        snprintf(path, sizeof(path), "%s/%s", c->run_dir, names[i]);
        rc = check_output(path, "--run-dir", in, what, nin, err);
    }
out:
    free(in);
    free(what);
    return rc;
}

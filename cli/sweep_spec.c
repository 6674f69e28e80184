// clef sweep: flags, axes, the runs they expand to and their names.
//
// Expansion order (stable, documented in --help): the cartesian product of
// the --grid axes with the first axis outermost (it changes slowest) and
// the last innermost; --runs FILE.json lists runs in file order instead;
// with --seeds N each of those points is repeated with seeds S .. S+N-1
// (S: the shared --seed, default 3407), the seed innermost.
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

const char *cli_sweep_help =
    "usage: clef sweep --package DIR/package.json --sweep-dir DIR\n"
    "       [--grid NAME=V1,V2,...]... [--seeds N] [--runs FILE.json]\n"
    "       [--parallel P] [--threads-per-run T=1]\n"
    "       [--metric val_loss|val_accuracy] [--yes]\n"
    "       [any clef train flag: the values shared by every run]\n"
    "\n"
    "Trains many heads on one package: read, hash-checked, validated and\n"
    "prepared once, shared read-only by every run. Each run is exactly a\n"
    "`clef train` with the shared flags plus its own settings (same bits),\n"
    "written to DIR/runs/<name>/.\n"
    "\n"
    "--grid NAME=V1,V2,...: an axis over the train setting NAME (a train\n"
    "flag without --: lr, weight-decay, label-smoothing, batch, epochs,\n"
    "betas, eps, decay-scope, max-grad-norm, brier, ordinal, dropout,\n"
    "precision, seed, batching, eval-every, patience, min-delta, init; in\n"
    "betas values write B1:B2). Runs are the cartesian product, first axis\n"
    "outermost.\n"
    "--seeds N: each point N times, seeds S..S+N-1 (S = --seed, 3407).\n"
    "--runs FILE.json: a list of objects of train settings instead of\n"
    "--grid ({\"lr\": 3e-4, \"weight-decay\": 0.01}), in file order.\n"
    "A run's name joins its settings: lr=3e-4,wd=0.01,seed=3408.\n"
    "--parallel P runs at a time (default: cores / T), each on T threads\n"
    "(--threads-per-run) bound to cores of its own.\n"
    "--metric: what the leaderboard ranks by (and early stopping with\n"
    "--patience watches): the best validation loss (default) or accuracy.\n"
    "More than 10000 runs need --yes.\n"
    "\n"
    "Resumable: the same command again skips finished runs (their outputs\n"
    "checked) and resumes unfinished ones from their last checkpoint (one\n"
    "each 30 s of a run unless --checkpoint-every or --checkpoint-seconds\n"
    "is given: a killed run loses at most that); the results are those\n"
    "of an uninterrupted sweep, bit for bit. A different package or\n"
    "different shared settings in an existing DIR are refused.\n"
    "Under mpirun -np N (or srun) each rank reads the package once and\n"
    "runs its share, run i on rank i mod N, P at a time; rank 0 writes\n"
    "the leaderboard. DIR must be on a file system every rank sees.\n"
    "Each run's weights are those of the same run in one process.\n"
    "Writes DIR/sweep-spec.json, DIR/runs/<name>/ (as clef train),\n"
    "DIR/sweep.json (every run's settings and results, ranked),\n"
    "DIR/sweep.csv (the same plus timings) and DIR/best.safetensors (a\n"
    "link to the best run's weights). Exit codes: 0 every run ok, 1 a run\n"
    "failed (the others still run), 2 bad usage or input (nothing written).\n";

// The train settings a sweep may vary, with the short name run names use.
static const struct {
    const char *key, *abbr;
} axis_keys[] = {
    {"lr", "lr"},
    {"weight-decay", "wd"},
    {"label-smoothing", "ls"},
    {"batch", "batch"},
    {"epochs", "epochs"},
    {"betas", "betas"},
    {"eps", "eps"},
    {"decay-scope", "decay"},
    {"max-grad-norm", "clip"},
    {"brier", "brier"},
    {"ordinal", "ordinal"},
    {"dropout", "drop"},
    {"precision", "prec"},
    {"seed", "seed"},
    {"batching", "batching"},
    {"eval-every", "eval"},
    {"patience", "patience"},
    {"min-delta", "min-delta"},
    {"init", "init"},
};
#define NAXIS_KEYS ((int)(sizeof(axis_keys) / sizeof(*axis_keys)))

// Train settings every run shares (never an axis), and why.
static const struct {
    const char *key, *why;
} fixed_keys[] = {
    {"package", "the sweep's --package"},
    {"package-sha256", "the package is read once"},
    {"backend", "the package is prepared once, with one backend"},
    {"threads", "use --threads-per-run"},
    {"run-dir", "each run's folder is DIR/runs/<name>"},
    {"json-out", "each run writes DIR/runs/<name>/result.json"},
    {"resume", "a rerun of the sweep resumes its runs"},
    {"quiet", "runs are always quiet"},
    {"metric", "the sweep's --metric"},
    {"checkpoint-every", "a bookkeeping setting"},
    {"checkpoint-seconds", "a bookkeeping setting"},
    {"keep-checkpoints", "a bookkeeping setting"},
};
#define NFIXED_KEYS ((int)(sizeof(fixed_keys) / sizeof(*fixed_keys)))

// Train flags a sweep sets itself (not shared flags either).
static const char *const own_keys[] = {"package",  "threads", "run-dir",
                                       "json-out", "resume",  "metric"};

static int axis_index(const char *key)
{
    for (int i = 0; i < NAXIS_KEYS; i++)
        if (!strcmp(axis_keys[i].key, key))
            return i;
    return -1;
}

static const char *fixed_why(const char *key)
{
    for (int i = 0; i < NFIXED_KEYS; i++)
        if (!strcmp(fixed_keys[i].key, key))
            return fixed_keys[i].why;
    return NULL;
}

// A setting name as users write it: "weight_decay" or "--lr" too.
static char *setting_key(const char *s)
{
    while (*s == '-')
        s++;
    char *k = strdup(s);
    for (char *p = k; p && *p; p++)
        if (*p == '_')
            *p = '-';
    for (int i = 0; k && i < NAXIS_KEYS; i++)
        if (!strcmp(k, axis_keys[i].abbr)) { // "wd", "ls", "clip"...
            free(k);
            return strdup(axis_keys[i].key);
        }
    return k;
}

// Is key one a run may set? 0 or CLEF_ERR_INPUT naming where it came from.
static int check_key(const char *key, const char *where, clef_err *err)
{
    const char *why = fixed_why(key);
    if (why)
        return clef_err_input(err, NULL, NULL, where,
                              "\"%s\" cannot vary between runs (%s)", key, why);
    if (axis_index(key) < 0)
        return clef_err_input(err, NULL, NULL, where,
                              "unknown setting \"%s\" (not a clef train flag "
                              "a sweep can vary; see clef sweep --help)",
                              key);
    return 0;
}

// ------------------------------------------------------------- axes --

typedef struct axis {
    char *key;
    char **vals;
    int nvals;
} axis;

static void axes_free(axis *a, int n)
{
    for (int i = 0; a && i < n; i++) {
        free(a[i].key);
        for (int j = 0; j < a[i].nvals; j++)
            free(a[i].vals[j]);
        free(a[i].vals);
    }
    free(a);
}

// "NAME=V1,V2,...": betas values write B1:B2 (the comma separates values).
static int axis_parse(const char *spec, axis *a, clef_err *err)
{
    memset(a, 0, sizeof(*a));
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return clef_err_input(err, NULL, NULL, "--grid",
                              "\"%s\" is not NAME=V1,V2,...", spec);
    char *name = strndup(spec, (size_t)(eq - spec));
    a->key = setting_key(name);
    free(name);
    int rc = check_key(a->key, "--grid", err);
    if (rc)
        return rc;
    if (!eq[1])
        return clef_err_input(err, NULL, NULL, "--grid",
                              "axis %s has no values", a->key);
    for (const char *p = eq + 1;;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == 0)
            return clef_err_input(err, NULL, NULL, "--grid",
                                  "axis %s: an empty value in \"%s\"", a->key,
                                  eq + 1);
        char *v = strndup(p, n);
        for (char *q = v; !strcmp(a->key, "betas") && *q; q++)
            if (*q == ':')
                *q = ',';
        for (int j = 0; j < a->nvals; j++)
            if (!strcmp(a->vals[j], v)) {
                rc = clef_err_input(err, NULL, NULL, "--grid",
                                    "axis %s: value %s given twice", a->key, v);
                free(v);
                return rc;
            }
        char **nv = realloc(a->vals, (size_t)(a->nvals + 1) * sizeof(char *));
        if (!nv) {
            free(v);
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        }
        a->vals = nv;
        a->vals[a->nvals++] = v;
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

// -------------------------------------------------------- runs file --

// The shortest decimal that reads back as x.
static void shortest(double x, char *out, size_t n)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

static int json_value_text(json_t *v, char *out, size_t n)
{
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        shortest(json_real_value(v), out, n);
    else if (json_is_array(v) && json_array_size(v) == 2 &&
             json_is_number(json_array_get(v, 0)) &&
             json_is_number(json_array_get(v, 1))) { // betas: [0.9, 0.999]
        char a[40], b[40];
        shortest(json_number_value(json_array_get(v, 0)), a, sizeof(a));
        shortest(json_number_value(json_array_get(v, 1)), b, sizeof(b));
        snprintf(out, n, "%s,%s", a, b);
    } else
        return -1;
    return out[0] ? 0 : -1;
}

static int add_set(sweep_run *r, const char *key, const char *val)
{
    sweep_set *ns = realloc(r->set, (size_t)(r->nset + 1) * sizeof(*ns));
    if (!ns)
        return -1;
    r->set = ns;
    ns[r->nset].key = strdup(key);
    ns[r->nset].val = strdup(val);
    if (!ns[r->nset].key || !ns[r->nset].val)
        return -1;
    r->nset++;
    return 0;
}

// The runs of FILE.json: a non-empty list of objects of settings.
static int runs_file_load(const char *path, sweep_run **out, int *nout,
                          clef_err *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return clef_err_input(err, path, NULL, NULL,
                              "not valid JSON (line %d: %s)", je.line, je.text);
    int rc = 0;
    if (!json_is_array(j) || json_array_size(j) == 0) {
        rc = clef_err_input(err, path, NULL, NULL,
                            "must be a non-empty list of objects of train "
                            "settings");
        goto out;
    }
    const int n = (int)json_array_size(j);
    sweep_run *runs = calloc((size_t)n, sizeof(*runs));
    *out = runs;
    *nout = n;
    if (!runs) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto out;
    }
    for (int i = 0; i < n && !rc; i++) {
        json_t *o = json_array_get(j, (size_t)i);
        char where[64];
        snprintf(where, sizeof(where), "[%d]", i);
        if (!json_is_object(o)) {
            rc = clef_err_input(err, path, NULL, where, "is not an object");
            break;
        }
        const char *k;
        json_t *v;
        json_object_foreach (o, k, v) {
            char *key = setting_key(k), text[512];
            char field[600];
            snprintf(field, sizeof(field), "[%d].%s", i, k);
            if (!key)
                rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
            else if (check_key(key, field, err))
                rc = CLEF_ERR_INPUT;
            else if (json_value_text(v, text, sizeof(text)))
                rc = clef_err_input(err, path, NULL, field,
                                    "must be a number or a string");
            else if (add_set(&runs[i], key, text))
                rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
            free(key);
            if (rc)
                break;
        }
        if (rc == CLEF_ERR_INPUT && !strstr(err->msg, path)) {
            char m[sizeof(err->msg)];
            snprintf(m, sizeof(m), "%s", err->msg);
            snprintf(err->msg, sizeof(err->msg), "%s: %.*s", path,
                     (int)(sizeof(m) - strlen(path) - 3), m);
        }
    }
out:
    json_decref(j);
    return rc;
}

// ------------------------------------------------------------ names --

static const char *abbr_of(const char *key)
{
    int i = axis_index(key);
    return i >= 0 ? axis_keys[i].abbr : key;
}

// "abbr=val,abbr=val" with '/' in values (init paths) written as '_';
// "default" for a run that sets nothing.
static char *run_name(const sweep_run *r)
{
    size_t cap = 16;
    for (int i = 0; i < r->nset; i++)
        cap += strlen(r->set[i].key) + strlen(r->set[i].val) + 2;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = 0; i < r->nset; i++) {
        const char *v = r->set[i].val;
        if (!strcmp(r->set[i].key, "init") && strrchr(v, '/'))
            v = strrchr(v, '/') + 1;
        size_t at = strlen(s);
        snprintf(s + at, cap - at, "%s%s=%s", i ? "," : "",
                 abbr_of(r->set[i].key), v);
    }
    if (!s[0])
        snprintf(s, cap, "default");
    for (char *p = s; *p; p++)
        if (*p == '/' || (unsigned char)*p < 32)
            *p = '_';
    return s;
}

// ------------------------------------------------------------- spec --

static int add_shared(sweep_spec *s, const char *arg)
{
    char **n = realloc(s->shared, (size_t)(s->nshared + 1) * sizeof(char *));
    if (!n)
        return -1;
    s->shared = n;
    return (s->shared[s->nshared++] = strdup(arg)) ? 0 : -1;
}

// The shared train flag at argv[*i] (and its value): kept in argv form.
static int shared_flag(sweep_spec *s, int argc, char **argv, int *i,
                       uint64_t *seed, clef_err *err)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0)
        return clef_err_input(err, NULL, NULL, a,
                              "unexpected argument (see clef sweep --help)");
    const char *eq = strchr(a, '=');
    char *key = eq ? strndup(a + 2, (size_t)(eq - a - 2)) : strdup(a + 2);
    if (!key)
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    const char *why = NULL;
    for (size_t k = 0; k < sizeof(own_keys) / sizeof(*own_keys); k++)
        if (!strcmp(key, own_keys[k]))
            why = fixed_why(key);
    const int user_ckpt =
        !strcmp(key, "checkpoint-every") || !strcmp(key, "checkpoint-seconds");
    const int is_seed = !strcmp(key, "seed");
    const int quiet = !strcmp(key, "quiet");
    const int is_pin = !strcmp(key, "package-sha256");
    const int is_backend = !strcmp(key, "backend");
    free(key);
    if (why)
        return clef_err_input(err, NULL, NULL, a, "not a sweep flag: %s", why);
    if (quiet)
        return 0;
    const char *val = eq ? eq + 1 : NULL;
    if (add_shared(s, a))
        return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    if (!eq) {
        if (*i + 1 >= argc)
            return clef_err_input(err, NULL, NULL, a, "needs a value");
        val = argv[++*i];
        if (add_shared(s, val))
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
    }
    s->user_ckpt |= user_ckpt;
    if (is_pin)
        s->pin = val;
    if (is_backend)
        s->backend = val;
    if (is_seed && cli_parse_u64("--seed", val, CLI_SEED_MAX, seed, err))
        return CLEF_ERR_INPUT;
    return 0;
}

// A shared flag that is also an axis would be set twice.
static int shared_is_axis(const sweep_spec *s, const char *key)
{
    for (int i = 0; i < s->nshared; i++) {
        const char *a = s->shared[i];
        size_t n = strlen(key);
        if (!strncmp(a, "--", 2) && !strncmp(a + 2, key, n) &&
            (a[2 + n] == '\0' || a[2 + n] == '='))
            return 1;
    }
    return 0;
}

static int sweep_flags(sweep_spec *s, int argc, char **argv, axis **axes,
                       int *naxes, uint64_t *seed, clef_err *err)
{
    const char *v = NULL;
    for (int i = 0; i < argc; i++) {
        int r;
        if ((r = cli_flag(argc, argv, &i, "--package", 1, &s->manifest, err)) ||
            (r = cli_flag(argc, argv, &i, "--sweep-dir", 1, &s->dir, err)) ||
            (r = cli_flag(argc, argv, &i, "--runs", 1, &s->runs_file, err))) {
            if (r < 0)
                return CLEF_ERR_INPUT;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--yes", 0, &v, err))) {
            s->yes = 1;
            continue;
        }
#define NUM(name, lo, hi, dst)                                                 \
    if ((r = cli_flag(argc, argv, &i, name, 1, &v, err))) {                    \
        if (r < 0 || cli_parse_int(name, v, lo, hi, dst, err))                 \
            return CLEF_ERR_INPUT;                                             \
        continue;                                                              \
    }
        NUM("--seeds", 1, 1000000, &s->seeds)
        NUM("--parallel", 1, 4096, &s->parallel)
        NUM("--threads-per-run", 1, 4096, &s->threads_per_run)
#undef NUM
        if ((r = cli_flag(argc, argv, &i, "--metric", 1, &v, err))) {
            if (r < 0 || cli_parse_choice("--metric", v, "val_loss",
                                          "val_accuracy", &s->metric_acc, err))
                return CLEF_ERR_INPUT;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--grid", 1, &v, err))) {
            axis *na =
                r < 0 ? NULL
                      : realloc(*axes, (size_t)(*naxes + 1) * sizeof(axis));
            if (!na)
                return r < 0 ? CLEF_ERR_INPUT
                             : clef_err_set(err, CLEF_ERR_RUN, "out of memory");
            *axes = na;
            int rc = axis_parse(v, &na[(*naxes)++], err);
            if (rc)
                return rc;
            for (int j = 0; j + 1 < *naxes; j++)
                if (!strcmp(na[j].key, na[*naxes - 1].key))
                    return clef_err_input(err, NULL, NULL, "--grid",
                                          "axis %s given twice", na[j].key);
            continue;
        }
        int rc = shared_flag(s, argc, argv, &i, seed, err);
        if (rc)
            return rc;
    }
    if (!s->manifest)
        return clef_err_input(err, NULL, NULL, "--package", "is required");
    if (!s->dir)
        return clef_err_input(err, NULL, NULL, "--sweep-dir", "is required");
    return 0;
}

// The points before seeds: the grid's product (first axis outermost) or the
// runs file's entries.
static int expand_points(const axis *axes, int naxes, long npoints,
                         sweep_run *runs)
{
    for (long p = 0; p < npoints; p++) {
        long rest = p;
        sweep_run *r = &runs[p];
        int idx[64];
        for (int a = naxes - 1; a >= 0; a--) { // last axis fastest
            idx[a] = (int)(rest % axes[a].nvals);
            rest /= axes[a].nvals;
        }
        for (int a = 0; a < naxes; a++)
            if (add_set(r, axes[a].key, axes[a].vals[idx[a]]))
                return -1;
    }
    return 0;
}

// Points × seeds, seeds innermost.
static int with_seeds(sweep_spec *s, sweep_run *points, long npoints,
                      uint64_t seed0)
{
    const int ns = s->seeds ? s->seeds : 1;
    s->nruns = (int)(npoints * ns);
    s->runs = calloc((size_t)s->nruns, sizeof(sweep_run));
    if (!s->runs)
        return -1;
    for (long p = 0; p < npoints; p++)
        for (int k = 0; k < ns; k++) {
            sweep_run *r = &s->runs[p * ns + k];
            for (int i = 0; i < points[p].nset; i++)
                if (add_set(r, points[p].set[i].key, points[p].set[i].val))
                    return -1;
            char sv[32];
            snprintf(sv, sizeof(sv), "%llu", (unsigned long long)(seed0 + k));
            if (s->seeds && add_set(r, "seed", sv))
                return -1;
        }
    return 0;
}

static void run_free(sweep_run *r)
{
    for (int i = 0; i < r->nset; i++) {
        free(r->set[i].key);
        free(r->set[i].val);
    }
    free(r->set);
    free(r->name);
    free(r->canon);
}

// Every run's flags parse as clef train's; names and settings distinct.
static int check_runs(sweep_spec *s, clef_err *err)
{
    s->all_bf16 = s->nruns > 0;
    s->any_bf16 = 0;
    for (int i = 0; i < s->nruns; i++) {
        sweep_run *r = &s->runs[i];
        if (!(r->name = run_name(r)))
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        int argc;
        char **argv = sweep_argv(s, i, "(run dir)", NULL, &argc);
        if (!argv)
            return clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        train_cfg c;
        clef_err e = {0};
        int rc = cli_train_parse(argc, argv, &c, &e);
        s->all_bf16 &= !rc && c.bf16;
        s->any_bf16 |= !rc && c.bf16;
        if (!rc) {
            json_t *j = cli_train_settings(&c, NULL, 0);
            json_object_set_new(j, "eval_every", json_integer(c.eval_every));
            json_object_set_new(j, "patience", json_integer(c.patience));
            json_object_set_new(j, "min_delta", json_real(c.min_delta));
            json_object_set_new(j, "init",
                                c.init ? json_string(c.init) : json_null());
            r->canon = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
            json_decref(j);
        }
        sweep_argv_free(argv, argc);
        if (rc)
            return clef_err_set(err, CLEF_ERR_INPUT, "run %s: %s", r->name,
                                e.msg);
        for (int j = 0; j < i; j++) {
            if (!strcmp(s->runs[j].canon, r->canon))
                return clef_err_input(err, NULL, r->name, NULL,
                                      "the same settings as run %s (a "
                                      "duplicate run)",
                                      s->runs[j].name);
            if (!strcmp(s->runs[j].name, r->name))
                return clef_err_input(err, NULL, r->name, NULL,
                                      "two runs have this name");
        }
    }
    return 0;
}

int sweep_spec_parse(int argc, char **argv, sweep_spec *s, clef_err *err)
{
    memset(s, 0, sizeof(*s));
    axis *axes = NULL;
    int naxes = 0, rc;
    uint64_t seed0 = 3407;
    sweep_run *points = NULL;
    long npoints = 1;
    if ((rc = sweep_flags(s, argc, argv, &axes, &naxes, &seed0, err)))
        goto out;
    for (int a = 0; a < naxes; a++)
        if (shared_is_axis(s, axes[a].key)) {
            rc = clef_err_input(err, NULL, NULL, "--grid",
                                "axis %s is also given as a shared --%s",
                                axes[a].key, axes[a].key);
            goto out;
        }
    for (int a = 0; s->seeds && a < naxes; a++)
        if (!strcmp(axes[a].key, "seed")) {
            rc = clef_err_input(err, NULL, NULL, "--seeds",
                                "cannot be combined with a seed axis");
            goto out;
        }
    if (s->runs_file && naxes) {
        rc = clef_err_input(err, NULL, NULL, "--runs",
                            "cannot be combined with --grid (list the runs "
                            "in the file)");
        goto out;
    }
    if (s->runs_file) {
        int n = 0;
        if ((rc = runs_file_load(s->runs_file, &points, &n, err)))
            goto out;
        npoints = n;
        for (int p = 0; p < n && s->seeds; p++)
            for (int i = 0; i < points[p].nset; i++)
                if (!strcmp(points[p].set[i].key, "seed")) {
                    rc = clef_err_input(err, s->runs_file, NULL, "seed",
                                        "cannot be combined with --seeds");
                    goto out;
                }
    } else {
        for (int a = 0; a < naxes; a++) {
            npoints *= axes[a].nvals;
            if (npoints > 100000000L) {
                rc = clef_err_input(err, NULL, NULL, "--grid",
                                    "more than 10^8 runs");
                goto out;
            }
        }
        if (naxes > 64) {
            rc = clef_err_input(err, NULL, NULL, "--grid", "more than 64 axes");
            goto out;
        }
    }
    const long total = npoints * (s->seeds ? s->seeds : 1);
    if (total > SWEEP_MAX_RUNS_UNASKED && !s->yes) {
        rc = clef_err_input(err, NULL, NULL, "--grid",
                            "%ld runs: more than %d need --yes", total,
                            SWEEP_MAX_RUNS_UNASKED);
        goto out;
    }
    if (total > 100000000L) {
        rc = clef_err_input(err, NULL, NULL, "--seeds", "more than 10^8 runs");
        goto out;
    }
    if (!points && !(points = calloc((size_t)npoints, sizeof(sweep_run)))) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto out;
    }
    if ((!s->runs_file && expand_points(axes, naxes, npoints, points)) ||
        with_seeds(s, points, npoints, seed0)) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto out;
    }
    if (!s->threads_per_run)
        s->threads_per_run = 1;
    rc = check_runs(s, err);
out:
    for (long p = 0; points && p < npoints; p++)
        run_free(&points[p]);
    free(points);
    axes_free(axes, naxes);
    return rc;
}

void sweep_spec_free(sweep_spec *s)
{
    for (int i = 0; i < s->nshared; i++)
        free(s->shared[i]);
    free(s->shared);
    for (int i = 0; s->runs && i < s->nruns; i++)
        run_free(&s->runs[i]);
    free(s->runs);
}

// ------------------------------------------------------------- argv --

char **sweep_argv(const sweep_spec *s, int i, const char *run_dir,
                  const char *resume, int *argc)
{
    const sweep_run *r = &s->runs[i];
    const int cap = s->nshared + r->nset + 12;
    char **a = calloc((size_t)cap + 1, sizeof(char *));
    if (!a)
        return NULL;
    int n = 0;
    char buf[64];
#define OWN(str)                                                               \
    do {                                                                       \
        if (!(a[n++] = strdup(str)))                                           \
            goto fail;                                                         \
    } while (0)
    OWN("--package");
    OWN(s->manifest);
    for (int k = 0; k < s->nshared; k++)
        OWN(s->shared[k]);
    for (int k = 0; k < r->nset; k++) {
        size_t len = strlen(r->set[k].key) + strlen(r->set[k].val) + 4;
        char *f = malloc(len);
        if (!f)
            goto fail;
        snprintf(f, len, "--%s=%s", r->set[k].key, r->set[k].val);
        a[n++] = f;
    }
    OWN("--run-dir");
    OWN(run_dir);
    OWN("--quiet");
    if (s->metric_acc) // what early stopping watches (--patience)
        OWN("--metric=val_accuracy");
    snprintf(buf, sizeof(buf), "--threads=%d", s->threads_per_run);
    OWN(buf);
    if (resume) {
        OWN("--resume");
        OWN(resume);
    }
    if (!s->user_ckpt) { // at most one checkpoint per half minute: fsyncs
        snprintf(buf, sizeof(buf), "--checkpoint-seconds=%d",
                 SWEEP_CHECKPOINT_S);
        OWN(buf);
    }
#undef OWN
    *argc = n;
    return a;
fail:
    sweep_argv_free(a, n);
    return NULL;
}

void sweep_argv_free(char **argv, int argc)
{
    for (int i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}

json_t *sweep_spec_json(const sweep_spec *s, const char *package_sha256)
{
    json_t *shared = json_array(), *runs = json_array();
    for (int i = 0; i < s->nshared; i++)
        json_array_append_new(shared, json_string(s->shared[i]));
    for (int i = 0; i < s->nruns; i++) {
        json_t *set = json_object();
        for (int k = 0; k < s->runs[i].nset; k++)
            json_object_set_new(set, s->runs[i].set[k].key,
                                json_string(s->runs[i].set[k].val));
        json_array_append_new(
            runs,
            json_pack("{s:s, s:o}", "name", s->runs[i].name, "settings", set));
    }
    return json_pack("{s:s, s:o, s:s, s:o}", "package_sha256", package_sha256,
                     "shared", shared, "metric",
                     s->metric_acc ? "val_accuracy" : "val_loss", "runs", runs);
}

// Per-op backend selection (see tune.h): fall-through for library backends,
// shape classes, the tuning file, and the `auto` table.
#include "tune.h"

#include <errno.h>
#ifndef CLEF_MINIMAL
#include <jansson.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLEF_MINIMAL
#include "backends/blis/blis_backend.h"
#endif
#include "backends/scalar/scalar.h"
#include "cpu/cpu.h"

static int table_complete(const clef_backend *b)
{
    return b && b->table &&
           clef_kernels_first_missing(b->table) == CLEF_OP_COUNT;
}

// ---- the best hand-written backend ----
const clef_backend *clef_best_handwritten(void)
{
    static const char *const order[] = {"avx512", "avx2", "scalar"};
    int cap = clef_isa_level();
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (clef_isa_parse(order[i]) > cap)
            continue;
        const clef_backend *b = clef_backend_find(order[i]);
        // availability first: it completes the table (registry.c)
        if (b && b->table && !clef_backend_unavailable(b) && table_complete(b))
            return b;
    }
    return clef_backend_find("scalar");
}

// 1 when a kernel name carries "__<lib>" followed by nothing, "_" or "("
// (BLIS adds its sub-configuration): "__avx512" is not "__avx512bf16".
static int has_tag(const char *name, const char *lib)
{
    const size_t n = strlen(lib);
    const char *p = name ? strstr(name, "__") : NULL;
    for (; p; p = strstr(p + 2, "__"))
        if (strncmp(p + 2, lib, n) == 0 &&
            (p[2 + n] == 0 || p[2 + n] == '(' || p[2 + n] == '_'))
            return 1;
    return 0;
}

// A backend's kernel-name tag: its name without underscores (avx512_bf16's
// kernels are clef_bf16_gemm_nt_12x32__avx512bf16).
static void backend_tag(const char *name, char *tag, size_t n)
{
    size_t j = 0;
    for (; *name && j + 1 < n; name++)
        if (*name != '_')
            tag[j++] = *name;
    tag[j] = 0;
}

// The hand-written kernel per op: the dispatcher's choice (scheduler/
// dispatch.h, x86 builds), else the best hand-written backend's table.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(CLEF_MINIMAL)
#include "scheduler/dispatch.h"
#define CLEF_HAVE_DISPATCH 1
static clef_kernels g_hw;
static int g_hw_ok;
static pthread_once_t g_hw_once = PTHREAD_ONCE_INIT;

static void hw_init(void)
{
    char why[160];
    g_hw_ok = clef_dispatch_build(&g_hw, clef_isa_level(), NULL, why,
                                  sizeof why) == 0;
}
#endif

static const clef_kernels *handwritten_table(const char **from)
{
#ifdef CLEF_HAVE_DISPATCH
    pthread_once(&g_hw_once, hw_init);
    if (g_hw_ok) {
        *from = "dispatch";
        return &g_hw;
    }
#endif
    const clef_backend *best = clef_best_handwritten();
    *from = best->name;
    return best->table;
}

int clef_fill_fallthrough(clef_kernels *t, const char *lib)
{
    const char *from;
    const clef_kernels *hw = handwritten_table(&from);
    int verbose = clef_verbose(), n = 0;
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        if (has_tag(t->names[op], lib)) {
            if (verbose)
                fprintf(stderr, "clef: %s: %-16s -> %s\n", lib,
                        clef_op_names[op], t->names[op]);
            continue;
        }
        clef_kernels_set(t, (clef_op)op, clef_kernels_get(hw, (clef_op)op));
        t->names[op] = hw->names[op];
        n++;
        if (verbose)
            fprintf(stderr,
                    "clef: %s: %-16s -> %s (fall-through: %s has no kernel "
                    "for it; best hand-written, from %s)\n",
                    lib, clef_op_names[op], t->names[op], lib, from);
    }
    return n;
}

int clef_backend_native(const clef_backend *b, clef_op op)
{
    // every backend's own kernels carry its tag; what a table took from
    // another (a library's missing ops, the bf16 GEMMs of avx2 and avx512,
    // the f32 ops of amx and avx512_bf16) carries that one's
    if (!b->table)
        return 0;
    char tag[24];
    backend_tag(b->name, tag, sizeof tag);
    return has_tag(b->table->names[op], tag);
}

// ---- shape classes ----
static const char *const g_class_names[CLEF_CLASS_COUNT] = {"small", "medium",
                                                            "large"};

const char *clef_shape_class_name(clef_shape_class c)
{
    return c >= 0 && c < CLEF_CLASS_COUNT ? g_class_names[c] : NULL;
}

int clef_shape_class_parse(const char *name)
{
    for (int c = 0; c < CLEF_CLASS_COUNT; c++)
        if (name && strcmp(name, g_class_names[c]) == 0)
            return c;
    return -1;
}

clef_shape_class clef_shape_class_of(clef_op op, double work)
{
    double small = 16384.0, medium = 1048576.0; // 2^14, 2^20 elements
    if (clef_op_work_is_flops(op))
        small = 2097152.0, medium = 1073741824.0; // 2^21, 2^30 flops
    return work < small    ? CLEF_CLASS_SMALL
           : work < medium ? CLEF_CLASS_MEDIUM
                           : CLEF_CLASS_LARGE;
}

// ---- the tuning file ----
void clef_tune_cpu_hash(char out[17])
{
    const clef_cpu *c = clef_cpu_get();
    char key[160];
    snprintf(key, sizeof key, "%s|%s|%d%d%d%d%d%d%d%d%d", c->vendor, c->model,
             c->avx2, c->fma, c->f16c, c->avx512f, c->avx512bw, c->avx512dq,
             c->avx512vl, c->avx512bf16, c->avx512vnni);
    uint64_t h = 1469598103934665603ull; // FNV-1a 64
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int clef_tune_default_path(char *buf, size_t n)
{
    char hash[17];
    clef_tune_cpu_hash(hash);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;
    if (xdg && xdg[0] == '/')
        w = snprintf(buf, n, "%s/clef/tune-%s.json", xdg, hash);
    else if (home && home[0])
        w = snprintf(buf, n, "%s/.cache/clef/tune-%s.json", home, hash);
    else
        return -1;
    return w > 0 && (size_t)w < n ? 0 : -1;
}

static int fail(char *err, size_t nerr, const char *path, const char *field,
                const char *rule)
{
    if (err && nerr)
        snprintf(err, nerr, "%.400s: %s: %s", path, field, rule);
    return -1;
}

#ifdef CLEF_MINIMAL // no jansson: no tuning file
int clef_tune_load(const char *path, clef_tuning *t, char *err, size_t nerr)
{
    memset(t, 0, sizeof *t);
    struct stat st;
    if (stat(path, &st) != 0) { // none: auto says so only under CLEF_VERBOSE
        int e = errno;
        fail(err, nerr, path, "(file)", strerror(e));
        errno = e;
        return -1;
    }
    errno = ENOSYS;
    return fail(err, nerr, path, "(file)",
                "built without jansson (CLEF_MINIMAL)");
}

int clef_tune_save(const char *path, const clef_tuning *t, char *err,
                   size_t nerr)
{
    errno = ENOSYS;
    return fail(err, nerr, path, "(file)",
                "built without jansson (CLEF_MINIMAL)");
}
#else
static int get_string(json_t *o, const char *key, char *dst, size_t n)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) >= n)
        return -1;
    snprintf(dst, n, "%s", json_string_value(v));
    return 0;
}

// One "choices.<op>.<class>" entry.
static int load_entry(json_t *v, const char *path, const char *field,
                      clef_tune_entry *e, char *err, size_t nerr)
{
    char f[128];
    if (!json_is_object(v))
        return fail(err, nerr, path, field, "must be an object");
    snprintf(f, sizeof f, "%s.backend", field);
    if (get_string(v, "backend", e->backend, sizeof e->backend) != 0)
        return fail(err, nerr, path, f, "must be a backend name (string)");
    const clef_backend *b = clef_backend_find(e->backend);
    if (!b || strcmp(e->backend, "auto") == 0)
        return fail(err, nerr, path, f, "unknown backend");
    snprintf(f, sizeof f, "%s.time_s", field);
    json_t *m = json_object_get(v, "time_s");
    if (!json_is_number(m) || !(json_number_value(m) >= 0.0))
        return fail(err, nerr, path, f, "must be a number >= 0");
    e->time_s = json_number_value(m);
    e->set = 1;
    return 0;
}

static int load_doc(json_t *root, const char *path, clef_tuning *t, char *err,
                    size_t nerr)
{
    char fmt[32];
    if (!json_is_object(root))
        return fail(err, nerr, path, "(top level)", "must be an object");
    if (get_string(root, "format", fmt, sizeof fmt) != 0 ||
        strcmp(fmt, CLEF_TUNE_FORMAT) != 0)
        return fail(err, nerr, path, "format",
                    "must be \"" CLEF_TUNE_FORMAT "\"");
    if (get_string(root, "cpu", t->cpu, sizeof t->cpu) != 0)
        return fail(err, nerr, path, "cpu", "must be a string (< 64 bytes)");
    if (get_string(root, "cpu_hash", t->cpu_hash, sizeof t->cpu_hash) != 0 ||
        strlen(t->cpu_hash) != 16 ||
        strspn(t->cpu_hash, "0123456789abcdef") != 16)
        return fail(err, nerr, path, "cpu_hash", "must be 16 hex digits");
    if (get_string(root, "blis_arch", t->blis_arch, sizeof t->blis_arch) != 0)
        return fail(err, nerr, path, "blis_arch", "must be a string");
    json_t *th = json_object_get(root, "threads");
    if (!json_is_integer(th) || json_integer_value(th) < 1 ||
        json_integer_value(th) > 4096)
        return fail(err, nerr, path, "threads", "must be an integer >= 1");
    t->threads = (int)json_integer_value(th);

    json_t *ch = json_object_get(root, "choices");
    if (!json_is_object(ch))
        return fail(err, nerr, path, "choices", "must be an object");
    const char *opname;
    json_t *per_op;
    json_object_foreach (ch, opname, per_op) {
        char f[96];
        int op = -1;
        for (int i = 0; i < CLEF_OP_COUNT; i++)
            if (strcmp(opname, clef_op_names[i]) == 0)
                op = i;
        snprintf(f, sizeof f, "choices.%.40s", opname);
        if (op < 0)
            return fail(err, nerr, path, f, "unknown op");
        if (!json_is_object(per_op))
            return fail(err, nerr, path, f, "must be an object");
        const char *cname;
        json_t *v;
        json_object_foreach (per_op, cname, v) {
            snprintf(f, sizeof f, "choices.%s.%.20s", opname, cname);
            int c = clef_shape_class_parse(cname);
            if (c < 0)
                return fail(err, nerr, path, f,
                            "unknown shape class (small|medium|large)");
            if (load_entry(v, path, f, &t->e[op][c], err, nerr) != 0)
                return -1;
        }
    }
    return 0;
}

int clef_tune_load(const char *path, clef_tuning *t, char *err, size_t nerr)
{
    memset(t, 0, sizeof *t);
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        fail(err, nerr, path, "(file)", strerror(e));
        errno = e;
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char rule[200];
        snprintf(rule, sizeof rule, "not valid JSON (line %d: %s)", jerr.line,
                 jerr.text);
        errno = EINVAL;
        return fail(err, nerr, path, "(file)", rule);
    }
    int rc = load_doc(root, path, t, err, nerr);
    json_decref(root);
    if (rc != 0) {
        memset(t, 0, sizeof *t);
        errno = EINVAL;
    }
    return rc;
}

// mkdir -p of path's directory.
static int make_parent_dirs(const char *path)
{
    char dir[1024];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return -1;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int clef_tune_save(const char *path, const clef_tuning *t, char *err,
                   size_t nerr)
{
    json_t *root = json_object(), *ch = json_object();
    json_object_set_new(root, "format", json_string(CLEF_TUNE_FORMAT));
    json_object_set_new(root, "cpu", json_string(t->cpu));
    json_object_set_new(root, "cpu_hash", json_string(t->cpu_hash));
    json_object_set_new(root, "blis_arch", json_string(t->blis_arch));
    json_object_set_new(root, "threads", json_integer(t->threads));
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        json_t *per_op = json_object();
        for (int c = 0; c < CLEF_CLASS_COUNT; c++) {
            const clef_tune_entry *e = &t->e[op][c];
            if (!e->set)
                continue;
            json_t *v = json_object();
            json_object_set_new(v, "backend", json_string(e->backend));
            json_object_set_new(v, "time_s", json_real(e->time_s));
            json_object_set_new(per_op, g_class_names[c], v);
        }
        if (json_object_size(per_op))
            json_object_set_new(ch, clef_op_names[op], per_op);
        else
            json_decref(per_op);
    }
    json_object_set_new(root, "choices", ch);

    char tmp[1100];
    int rc = -1;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (make_parent_dirs(path) != 0) {
        fail(err, nerr, path, "(directory)", strerror(errno));
    } else if (json_dump_file(root, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) !=
               0) {
        fail(err, nerr, tmp, "(file)", "cannot write");
        unlink(tmp);
    } else if (rename(tmp, path) != 0) {
        fail(err, nerr, path, "(file)", strerror(errno));
        unlink(tmp);
    } else {
        rc = 0;
    }
    json_decref(root);
    return rc;
}

#endif // CLEF_MINIMAL

// ---- auto: the selection behind the per-class trampolines ----
typedef struct auto_sel {
    void (*fn[CLEF_OP_COUNT][CLEF_CLASS_COUNT])(void);
    char names[CLEF_OP_COUNT][200]; // the composite names of mixed ops
    const struct auto_sel *older;   // the one published before (kept)
} auto_sel;

// Published once complete; an old selection is never freed (a trampoline
// may still be running with it), a few KiB per clef_auto_kernels() call.
static _Atomic(const auto_sel *) g_sel;

static void (*pick(clef_op op, double work))(void)
{
    const auto_sel *s = atomic_load_explicit(&g_sel, memory_order_acquire);
    return s->fn[op][clef_shape_class_of(op, work)];
}

// One trampoline per op, t_<op>, from the op list: it picks the selection's
// kernel for the class of this call's work and calls it.
#define TRAMPOLINE(op, sig, unit, work)                                        \
    static void t_##op CLEF_SIG_##sig                                          \
    {                                                                          \
        ((clef_##sig##_fn)pick(CLEF_OP_##op, (double)(work))) CLEF_ARGS_##sig; \
    }
CLEF_OPS(TRAMPOLINE)
#undef TRAMPOLINE

static void (*const g_tramp[CLEF_OP_COUNT])(void) = {
#define TRAMP(op, sig, unit, work) [CLEF_OP_##op] = (void (*)(void))t_##op,
    CLEF_OPS(TRAMP)
#undef TRAMP
};

// ---- auto: choosing ----
// Built-in preference, best first.
// The bf16 GEMM backends come first: they have nothing but the bf16 GEMMs.
static const char *const g_builtin[] = {
    "amx", "avx512_bf16", "avx512", "onednn", "avx2", "blis", "scalar"};
#define NBUILTIN (sizeof g_builtin / sizeof g_builtin[0])
// The large class of the bf16 GEMMs: oneDNN's bf16 matmul before the
// AVX512-BF16 kernel (faster on every large head shape measured on CPUs
// without AMX); the AMX kernel leads oneDNN's and stays first.
static const char *const g_builtin_bf16_large[NBUILTIN] = {
    "amx", "onednn", "avx512_bf16", "avx512", "avx2", "blis", "scalar"};

// The built-in order for op in shape class cls.
static const char *const *builtin_order(clef_op op, int cls)
{
    return clef_op_is_bf16_gemm(op) && cls == CLEF_CLASS_LARGE
               ? g_builtin_bf16_large
               : g_builtin;
}

int clef_auto_builtin_rank(clef_op op, int cls, const char *name)
{
    const char *const *order = builtin_order(op, cls);
    for (size_t i = 0; i < NBUILTIN; i++)
        if (strcmp(order[i], name) == 0)
            return (int)i;
    return (int)NBUILTIN;
}

// NULL when b may compute op under auto here, else why not.
static const char *unusable(const clef_backend *b, clef_op op, int builtin,
                            const clef_auto_facts *f)
{
    if (!b || !b->table)
        return "not compiled in this build";
    int lvl = clef_isa_parse(b->name); // the cap first: it is auto's own fact
    if (lvl > f->max_isa)
        return lvl > f->native_isa ? "beyond this CPU" : "above CLEF_MAX_ISA";
    const char *why = clef_backend_unavailable(b);
    if (why)
        return why;
    if (!table_complete(b))
        return "incomplete table";
    if (!clef_backend_native(b, op))
        return "no kernel of its own for this op";
    // a library's bf16 GEMMs pick the CPU's best bf16 unit on their own
    // (oneDNN: AMX where it exists): under any cap below the CPU's own
    // level, auto keeps to the hand-written ones, so that CLEF_MAX_ISA=
    // avx512_bf16 on an AMX CPU runs no AMX code; on a CPU without bf16
    // arithmetic oneDNN emulates it (2.5 times slower than its fp32 on Zen 5
    // with ONEDNN_MAX_CPU_ISA=AVX512_CORE), where the hand-written kernels
    // run the fp32 GEMMs on widened operands
    if (lvl < 0 && clef_op_is_bf16_gemm(op)) {
        if (f->native_isa < CLEF_ISA_AVX512_BF16)
            return "no bf16 arithmetic on this CPU";
        if (f->max_isa < f->native_isa)
            return "bf16 hardware capped by CLEF_MAX_ISA";
    }
    if (builtin && strcmp(b->name, "blis") == 0 && f->blis_generic)
        return "BLIS runs its generic sub-configuration";
    return NULL;
}

const char *clef_auto_why_not(const clef_backend *b, clef_op op, int builtin,
                              const clef_auto_facts *f)
{
    return unusable(b, op, builtin, f);
}

// Library backends pay their own per-call cost, several times a small
// hand-written kernel's (docs/PERF-NOTES.md), so the built-in order keeps
// them out of the small class.
static int is_library(const char *name)
{
    return strcmp(name, "onednn") == 0 || strcmp(name, "blis") == 0;
}

static void choose_builtin(clef_op op, int cls, clef_auto_choice *ch,
                           const char *pre, const clef_auto_facts *f)
{
    const char *const *order = builtin_order(op, cls);
    char skipped[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < NBUILTIN; i++) {
        const clef_backend *b = clef_backend_find(order[i]);
        const char *why = unusable(b, op, 1, f);
        if (!why && cls == CLEF_CLASS_SMALL && is_library(order[i]))
            why = "per-call overhead on small shapes";
        if (!why) {
            ch->backend = b;
            ch->source = CLEF_SRC_BUILTIN;
            snprintf(ch->why, sizeof ch->why, "%sbuilt-in order%s%s", pre,
                     skipped[0] ? "; skipped " : "", skipped);
            return;
        }
        if (strcmp(why, "no kernel of its own for this op") != 0 &&
            used < sizeof skipped)
            used +=
                (size_t)snprintf(skipped + used, sizeof skipped - used,
                                 "%s%s (%s)", used ? ", " : "", order[i], why);
    }
    ch->backend = clef_backend_find("scalar");
    ch->source = CLEF_SRC_BUILTIN;
    snprintf(ch->why, sizeof ch->why, "%sbuilt-in order (last resort)", pre);
}

static void choose(const clef_tuning *t, const char *tname, clef_op op, int cls,
                   clef_auto_choice *ch, const clef_auto_facts *f)
{
    char pre[140] = "";
    if (t) {
        // this class, else the nearest measured class
        static const int order[CLEF_CLASS_COUNT][CLEF_CLASS_COUNT] = {
            {0, 1, 2}, {1, 0, 2}, {2, 1, 0}};
        for (int i = 0; i < CLEF_CLASS_COUNT; i++) {
            const clef_tune_entry *e = &t->e[op][order[cls][i]];
            if (!e->set)
                continue;
            const clef_backend *b = clef_backend_find(e->backend);
            const char *why = unusable(b, op, 0, f);
            if (why) {
                snprintf(pre, sizeof pre, "tuned %s cannot run (%s); ",
                         e->backend, why);
                break;
            }
            ch->backend = b;
            ch->source = i == 0 ? CLEF_SRC_TUNED : CLEF_SRC_TUNED_NEAR;
            snprintf(ch->why, sizeof ch->why, "tuning file %.48s%s%s, %.3g s",
                     tname, i ? ", nearest class " : "",
                     i ? g_class_names[order[cls][i]] : "", e->time_s);
            return;
        }
        if (!pre[0])
            snprintf(pre, sizeof pre, "not in the tuning file; ");
    }
    choose_builtin(op, cls, ch, pre, f);
}

// Reads the tuning file for auto; NULL (with a note) when there is none or
// it does not fit this machine.
static const clef_tuning *load_for_auto(const char *tune_path, clef_tuning *t,
                                        char *shown, size_t nshown,
                                        const clef_auto_facts *f)
{
    char path[1024], err[512];
    snprintf(shown, nshown, "(none)");
    if (tune_path && !tune_path[0])
        return NULL;
    if (!tune_path) {
        if (clef_tune_default_path(path, sizeof path) != 0) {
            if (clef_verbose())
                fprintf(stderr,
                        "clef: auto: no cache directory "
                        "(XDG_CACHE_HOME, HOME unset): built-in order\n");
            return NULL;
        }
        tune_path = path;
    }
    snprintf(shown, nshown, "%s", tune_path);
    if (clef_tune_load(tune_path, t, err, sizeof err) != 0) {
        if (errno == ENOENT) {
            if (clef_verbose())
                fprintf(
                    stderr,
                    "clef: auto: no tuning file %s (run clef-bench --tune): "
                    "built-in order\n",
                    tune_path);
        } else {
            fprintf(stderr, "clef: auto: tuning file ignored: %s\n", err);
        }
        return NULL;
    }
    const char *hash = f->cpu_hash;
    if (strcmp(hash, t->cpu_hash) != 0) {
        fprintf(stderr,
                "clef: auto: tuning file ignored: %s: cpu_hash: measured on "
                "another CPU (%s, hash %s; this one %s)\n",
                tune_path, t->cpu, t->cpu_hash, hash);
        return NULL;
    }
    if (clef_verbose())
        fprintf(stderr,
                "clef: auto: tuning file %s (%s, %d thread(s), blis %s)\n",
                tune_path, t->cpu, t->threads, t->blis_arch);
    return t;
}

void clef_auto_facts_detect(clef_auto_facts *f)
{
    memset(f, 0, sizeof *f);
    f->max_isa = clef_isa_level();
    f->native_isa = clef_cpu_get()->isa_native;
#ifndef CLEF_MINIMAL
    f->blis_generic = clef_blis_arch_is_generic();
#endif
    clef_tune_cpu_hash(f->cpu_hash);
}

int clef_auto_kernels(clef_kernels *out, const char *tune_path,
                      clef_auto_choice choices[CLEF_OP_COUNT][CLEF_CLASS_COUNT])
{
    clef_auto_facts f;
    clef_auto_facts_detect(&f);
    return clef_auto_build(out, tune_path, &f, choices);
}

int clef_auto_build(clef_kernels *out, const char *tune_path,
                    const clef_auto_facts *f,
                    clef_auto_choice choices[CLEF_OP_COUNT][CLEF_CLASS_COUNT])
{
    clef_tuning tbuf;
    char tname[1024];
    const clef_tuning *t =
        load_for_auto(tune_path, &tbuf, tname, sizeof tname, f);
    auto_sel *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    int verbose = clef_verbose();
    const char *base = strrchr(tname, '/') ? strrchr(tname, '/') + 1 : tname;

    out->backend = "auto";
    out->mm = NULL; // an fp32 table (core/mm.h adds a bf16 context)
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        clef_auto_choice ch[CLEF_CLASS_COUNT];
        int mixed = 0;
        for (int c = 0; c < CLEF_CLASS_COUNT; c++) {
            memset(&ch[c], 0, sizeof ch[c]);
            choose(t, base, (clef_op)op, c, &ch[c], f);
            s->fn[op][c] = clef_kernels_get(ch[c].backend->table, (clef_op)op);
            mixed |= s->fn[op][c] != s->fn[op][0];
            if (choices)
                choices[op][c] = ch[c];
            if (verbose)
                fprintf(stderr, "clef: auto: %-16s %-6s -> %-7s %-32s (%s)\n",
                        clef_op_names[op], g_class_names[c],
                        ch[c].backend->name, ch[c].backend->table->names[op],
                        ch[c].why);
        }
        if (!mixed) {
            clef_kernels_set(out, (clef_op)op, s->fn[op][0]);
            out->names[op] = ch[0].backend->table->names[op];
            continue;
        }
        snprintf(s->names[op], sizeof s->names[op],
                 "auto(small %s, medium %s, large %s)", ch[0].backend->name,
                 ch[1].backend->name, ch[2].backend->name);
        clef_kernels_set(out, (clef_op)op, g_tramp[op]);
        out->names[op] = s->names[op];
    }
    // Pre-packed operands: the best hand-written backend's (CLEF_MAX_ISA
    // caps it), whatever each GEMM's per-class choice.
    out->prepack = clef_best_handwritten()->table->prepack;
    if (verbose)
        fprintf(stderr, "clef: auto: %-16s %-6s -> %s\n", "gemm_prepack", "all",
                out->prepack ? out->prepack->name : "none (plain GEMMs)");
    // Publish before anyone can call a trampoline of out. The selections
    // replaced stay linked from the newest (reachable, not leaked; nothing
    // but this chain reads `older`).
    s->older = atomic_exchange_explicit(&g_sel, s, memory_order_acq_rel);
    return 0;
}

// ---- the registry's `auto` entry ----
#define SCALAR(op, sig, unit, work) .op = CLEF_SSYM(op, unit),
#define SCALAR_NAME(op, sig, unit, work) [CLEF_OP_##op] = CLEF_SSTR(op, unit),
clef_kernels clef_auto_table = {
    .backend = "auto",
    CLEF_OPS(SCALAR).names = {CLEF_OPS(SCALAR_NAME)},
};
#undef SCALAR
#undef SCALAR_NAME

static pthread_once_t g_auto_once = PTHREAD_ONCE_INIT;

static void auto_resolve(void)
{
    clef_kernels k;
    memset(&k, 0, sizeof k);
    if (clef_auto_kernels(&k, NULL, NULL) != 0)
        return; // keeps the scalar reference
    // field by field: a reader never sees a torn or NULL entry
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        clef_kernels_set(&clef_auto_table, (clef_op)op,
                         clef_kernels_get(&k, (clef_op)op));
        clef_auto_table.names[op] = k.names[op];
    }
    clef_auto_table.prepack = k.prepack;
}

const char *clef_auto_unavailable(void)
{
    pthread_once(&g_auto_once, auto_resolve);
    return NULL;
}

// clef-bench --tune: measures, per op and shape class, every backend that can
// compute the op with a kernel of its own, and writes the tuning file that
// `--backend auto` reads (scheduler/tune.h).
//
//   clef-bench --tune [--tune-out FILE] [--threads N] [--budget S] [--seed S]
//
// A backend counts for an op only when it passes parity (the harness's check
// against the scalar reference) at every shape: the head's shapes (tiny,
// fixture, mid, released), timed, and the edge battery, checked only. Each
// timed shape falls in the shape class of its work (clef_shape_class_of);
// a backend's time for a class is the sum over the class's shapes of its
// best (minimum) time per call, the estimate least disturbed by other
// processes on a shared machine, and the fastest backend wins the class
// (within 5%, the one earlier in auto's built-in order).
#include "bench_tune.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cpu/cpu.h"
#include "scheduler/threads.h"
#include "scheduler/tune.h"
#ifndef CLEF_MINIMAL
#include "backends/blis/blis_backend.h"
#include "backends/onednn/onednn.h"
#endif

#define MAX_CAND 8
#define TIE 1.05 // times within 5% of the fastest count as a tie

void clef_bench_print_libs(FILE *f)
{
#ifndef CLEF_MINIMAL
    const char *why = clef_onednn_unavailable();
    fprintf(f, "libs: onednn %s%s%s | blis %s sub-configuration %s%s\n",
            clef_onednn_version(), why ? " unavailable: " : "", why ? why : "",
            clef_blis_version(), clef_blis_arch(),
            clef_blis_arch_is_generic()
                ? " (BLIS does not know this CPU: portable C kernels; auto "
                  "avoids it)"
                : "");
#else
    fprintf(f, "libs: none (CLEF_MINIMAL build)\n");
#endif
}

const char *clef_bench_blis_arch(void)
{
#ifndef CLEF_MINIMAL
    return clef_blis_arch();
#else
    return "none";
#endif
}

int clef_bench_wants_tune(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--tune") == 0)
            return 1;
    return 0;
}

typedef struct tune_args {
    const char *out;
    int threads;
    clef_bench_opts opts;
} tune_args;

static int parse(int argc, char **argv, tune_args *a)
{
    memset(a, 0, sizeof *a);
    clef_bench_opts_default(&a->opts);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(f, "--tune") == 0)
            continue;
        if (!v) {
            fprintf(stderr,
                    "clef-bench --tune: %s: unknown option or missing "
                    "value (with --tune: --tune-out FILE, --threads N, "
                    "--budget S, --seed S)\n",
                    f);
            return 2;
        }
        char *end;
        if (strcmp(f, "--tune-out") == 0) {
            a->out = v;
        } else if (strcmp(f, "--threads") == 0) {
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 4096) {
                fprintf(stderr,
                        "clef-bench --tune: --threads: '%s' must be a "
                        "whole number in [1, 4096]\n",
                        v);
                return 2;
            }
            a->threads = (int)t;
        } else if (strcmp(f, "--budget") == 0) {
            double b = strtod(v, &end);
            if (*end || !(b > 0.0 && b <= 60.0)) {
                fprintf(stderr,
                        "clef-bench --tune: --budget: '%s' must be "
                        "seconds in (0, 60]\n",
                        v);
                return 2;
            }
            a->opts.budget_s = b;
        } else if (strcmp(f, "--seed") == 0) {
            unsigned long long s = strtoull(v, &end, 10);
            if (*end || v[0] == '-') {
                fprintf(stderr,
                        "clef-bench --tune: --seed: '%s' must be a "
                        "whole number >= 0\n",
                        v);
                return 2;
            }
            a->opts.seed = s;
        } else {
            fprintf(stderr,
                    "clef-bench --tune: %s: unknown option (with "
                    "--tune: --tune-out FILE, --threads N, --budget S, "
                    "--seed S)\n",
                    f);
            return 2;
        }
        i++;
    }
    return 0;
}

// The backends that may compete for op: runnable here, a kernel of their own
// for op, hand-written ones within CLEF_MAX_ISA; never `auto` itself.
static int candidates(clef_op op, const clef_backend **out)
{
    int n = 0;
    for (int i = 0; i < clef_backend_count() && n < MAX_CAND; i++) {
        const clef_backend *b = clef_backend_at(i);
        if (strcmp(b->name, "auto") == 0 || clef_backend_unavailable(b) ||
            clef_isa_parse(b->name) > clef_isa_level() ||
            !clef_backend_native(b, op))
            continue;
        out[n++] = b;
    }
    return n;
}

typedef struct op_tally {
    int failed[MAX_CAND];                 // parity failed at some shape
    double t[MAX_CAND][CLEF_CLASS_COUNT]; // summed best times
    int shapes[CLEF_CLASS_COUNT];         // timed shapes per class
} op_tally;

// Runs every candidate on op at shape s; timed shapes add to the tally.
static int run_shape(clef_op op, const clef_bench_shape *s,
                     const clef_backend *const *cand, int nc, int timed,
                     const clef_bench_opts *base, op_tally *t)
{
    clef_bench_opts o = *base;
    o.timing = timed;
    clef_bench_case *c = clef_bench_case_new(op, s, o.seed);
    if (!c) {
        fprintf(stderr, "clef-bench --tune: out of memory building %s at %s\n",
                clef_op_names[op], s->name);
        return -1;
    }
    clef_bench_case_reference(c, &clef_scalar_kernels, &o);
    int cls = clef_shape_class_of(op, clef_bench_case_work(c));
    if (timed)
        t->shapes[cls]++;
    for (int i = 0; i < nc; i++) {
        clef_bench_result r;
        clef_bench_case_run(c, cand[i], &o, &r);
        if (r.verdict != CLEF_BENCH_PASS) {
            t->failed[i] = 1;
            printf("  %-16s %-10s %-8s %s: %s\n", clef_op_names[op], s->name,
                   cand[i]->name, clef_bench_verdict_name(r.verdict), r.reason);
            clef_bench_print_failure(stdout, &r);
            continue;
        }
        if (timed)
            t->t[i][cls] += r.t_min;
    }
    clef_bench_case_free(c);
    return 0;
}

static void print_header(const tune_args *a, const char *path)
{
    const clef_cpu *cpu = clef_cpu_get();
    printf("clef-bench --tune | cpu: %s | isa cap: %s | threads %d | budget "
           "%g s | seed %llu\n",
           cpu->model, clef_isa_name(clef_isa_level()), omp_get_max_threads(),
           a->opts.budget_s, (unsigned long long)a->opts.seed);
    clef_bench_print_libs(stdout);
    printf("tuning file: %s\n", path);
    printf("%-16s %-6s %6s  %s\n", "op", "class", "shapes",
           "best time per call per backend (s, summed over the class's shapes) "
           "-> choice");
}

static void choose_class(clef_op op, int cls, const clef_backend *const *cand,
                         int nc, const op_tally *t, clef_tuning *tf)
{
    if (!t->shapes[cls])
        return;
    int best = -1;
    char line[512];
    int used =
        snprintf(line, sizeof line, "%-16s %-6s %6d ", clef_op_names[op],
                 clef_shape_class_name((clef_shape_class)cls), t->shapes[cls]);
    for (int i = 0; i < nc; i++) {
        if (t->failed[i]) {
            used += snprintf(line + used, sizeof line - (size_t)used,
                             " %s=FAIL", cand[i]->name);
            continue;
        }
        used += snprintf(line + used, sizeof line - (size_t)used, " %s=%.3g",
                         cand[i]->name, t->t[i][cls]);
        if (best < 0 || t->t[i][cls] < t->t[best][cls])
            best = i;
        if (used >= (int)sizeof line)
            used = (int)sizeof line - 1;
    }
    if (best < 0) {
        printf("%s -> (none passed)\n", line);
        return;
    }
    // Within TIE of the fastest, the built-in order decides: differences that
    // small are timing noise, and a stable choice is worth more.
    int pick = best;
    for (int i = 0; i < nc; i++)
        if (!t->failed[i] && t->t[i][cls] <= TIE * t->t[best][cls] &&
            clef_auto_builtin_rank(op, cls, cand[i]->name) <
                clef_auto_builtin_rank(op, cls, cand[pick]->name))
            pick = i;
    best = pick;
    clef_tune_entry *e = &tf->e[op][cls];
    e->set = 1;
    snprintf(e->backend, sizeof e->backend, "%s", cand[best]->name);
    e->time_s = t->t[best][cls];
    printf("%s -> %s\n", line, cand[best]->name);
}

int clef_bench_tune_main(int argc, char **argv)
{
    tune_args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc;
    // clef's own rule: --threads, CLEF_NUM_THREADS, OMP_NUM_THREADS, cores
    clef_threads_setup(a.threads);
    char path[1024];
    if (a.out)
        snprintf(path, sizeof path, "%s", a.out);
    else if (clef_tune_default_path(path, sizeof path) != 0) {
        fprintf(stderr, "clef-bench --tune: no cache directory (set "
                        "XDG_CACHE_HOME or HOME, or pass --tune-out FILE)\n");
        return 2;
    }

    clef_tuning tf;
    memset(&tf, 0, sizeof tf);
    snprintf(tf.cpu, sizeof tf.cpu, "%s", clef_cpu_get()->model);
    clef_tune_cpu_hash(tf.cpu_hash);
    snprintf(tf.blis_arch, sizeof tf.blis_arch, "%s", clef_bench_blis_arch());
    tf.threads = omp_get_max_threads();
    print_header(&a, path);

    int any_failed = 0;
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        const clef_backend *cand[MAX_CAND];
        int nc = candidates((clef_op)op, cand);
        op_tally t;
        memset(&t, 0, sizeof t);
        for (int i = 0; i < clef_bench_shape_count(); i++) {
            const clef_bench_shape *s = clef_bench_shape_at(i);
            int timed = strcmp(s->group, "edge") != 0;
            if (run_shape((clef_op)op, s, cand, nc, timed, &a.opts, &t) != 0)
                return 1;
        }
        for (int i = 0; i < nc; i++)
            any_failed |= t.failed[i];
        for (int c = 0; c < CLEF_CLASS_COUNT; c++)
            choose_class((clef_op)op, c, cand, nc, &t, &tf);
        fflush(stdout);
    }

    char err[512];
    if (clef_tune_save(path, &tf, err, sizeof err) != 0) {
        fprintf(stderr, "clef-bench --tune: %s\n", err);
        return 1;
    }
    printf("tuning file written: %s%s\n", path,
           any_failed ? " (some backends failed parity: excluded, see above)"
                      : "");
    return any_failed ? 1 : 0;
}

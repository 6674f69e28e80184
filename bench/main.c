// clef-bench: every backend's kernels checked against the scalar reference
// on the head's shapes and an edge battery, then timed (CLI.md). The harness
// itself is bench/harness*.c, with one case per op in bench/case_*.c
// (case.h); --train is bench/train.c.
#include <errno.h>
#if CLEF_MINIMAL // aarch64 cross build: no jansson, no core/ (see below)
typedef struct json_t json_t;
#else
#include <jansson.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !CLEF_MINIMAL
#include "bench.h"
#endif
#include "bench_handoff.h" // --handoff
#include "bench_tune.h"    // --tune, libs line (issue 6)
#include "harness.h"
#include "cpu/cpu.h"
#include "scheduler/threads.h"

#define MAX_SEL 64

typedef struct bench_args {
    const clef_backend *backends[MAX_SEL];
    int nbackends;
    int ops[CLEF_OP_COUNT];
    int nops;
    const clef_bench_shape *shapes[MAX_SEL];
    int nshapes;
    int threads; // 0: the rules of scheduler/threads.c
    const char *json;
    int train, list;
    clef_bench_opts opts;
} bench_args;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: clef-bench [--backend NAME|all=all] [--op NAME|all=all]\n"
        "                  [--shape NAME|all=all] [--threads N] [--seed S=1]\n"
        "                  [--json FILE] [--train] [--list]\n"
        "                  [--budget SECONDS=0.05] [--no-time] [--batch B=1]\n"
        "                  [--questions Q] [--options N]  (--train geometry)\n"
        "                  [--scaling N]  (--train: 1 vs N threads)\n"
        "                  [--precision fp32|bf16|fp32,bf16]  (--train)\n"
        "\n"
        "Checks each backend's kernels against the scalar reference on the\n"
        "head's shapes and the edge battery, then times them. --backend,\n"
        "--op and --shape take one name, a comma-separated list or all;\n"
        "--shape also takes a group (tiny, fixture, mid, released, edge).\n"
        "--train times whole training updates per backend and shape;\n"
        "with --scaling N it alternates updates on 1 and N threads, and\n"
        "oneDNN sgemm calls on 1 and N threads as the machine's own\n"
        "scaling in the same window, and reports both speedups;\n"
        "with --precision fp32,bf16 it alternates fp32 and bf16 updates\n"
        "of the same head and records and reports bf16's speedup.\n"
        "--list prints the backends, ops and shapes. --budget is the time\n"
        "spent timing each row; --no-time only checks.\n"
        "Exit: 0 all passed or skipped, 1 a FAIL or MISTRUSTED, 2 bad usage.\n"
        "\n"
        "clef-bench --tune [--tune-out FILE] [--threads N] [--budget S] "
        "[--seed S]\n"
        "measures every backend per op and shape class and writes the tuning\n"
        "file --backend auto reads (default ~/.cache/clef/tune-<cpu>.json).\n"
        "\n"
        "clef-bench --handoff [--mb MB] [--rounds R=30]\n"
        "times thread 1 reading, updating and overwriting a buffer (1 and 8 "
        "MiB)\n"
        "that it or thread 0 left behind: what handing cache lines between\n"
        "cores costs here (bench/handoff.c).\n");
}

static int bad_usage(const char *flag, const char *fmt, const char *what)
{
    fprintf(stderr, "clef-bench: %s: ", flag);
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (see clef-bench --help)\n");
    return 2;
}

static void list_known(FILE *f, const char *flag)
{
    fprintf(f, "  known %s:", flag);
    if (strcmp(flag, "backends") == 0)
        for (int i = 0; i < clef_backend_count(); i++)
            fprintf(f, " %s", clef_backend_at(i)->name);
    else if (strcmp(flag, "ops") == 0)
        for (int i = 0; i < CLEF_OP_COUNT; i++)
            fprintf(f, " %s", clef_op_names[i]);
    else
        for (int i = 0; i < clef_bench_shape_count(); i++)
            fprintf(f, " %s", clef_bench_shape_at(i)->name);
    fprintf(f, " all\n");
}

// Splits a comma-separated list and calls add(name) for each item.
static int parse_list(const char *flag, const char *value, bench_args *a,
                      int (*add)(bench_args *, const char *))
{
    char buf[1024];
    if (!value[0] || strlen(value) >= sizeof buf)
        return bad_usage(flag, "bad value '%s'", value);
    strcpy(buf, value);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (add(a, tok) != 0) {
            bad_usage(flag, "unknown name '%s'", tok);
            list_known(stderr, flag[2] == 'b'   ? "backends"
                               : flag[2] == 'o' ? "ops"
                                                : "shapes");
            return 2;
        }
    }
    return 0;
}

static int add_backend(bench_args *a, const char *name)
{
    if (strcmp(name, "all") == 0) {
        for (int i = 0; i < clef_backend_count(); i++)
            if (add_backend(a, clef_backend_at(i)->name) != 0)
                return -1;
        return 0;
    }
    const clef_backend *b = clef_backend_find(name);
    if (!b)
        return -1;
    for (int i = 0; i < a->nbackends; i++)
        if (a->backends[i] == b)
            return 0;
    if (a->nbackends == MAX_SEL)
        return -1;
    a->backends[a->nbackends++] = b;
    return 0;
}

static int add_op(bench_args *a, const char *name)
{
    int found = 0;
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        if (strcmp(name, "all") != 0 && strcmp(name, clef_op_names[op]) != 0)
            continue;
        found = 1;
        int dup = 0;
        for (int i = 0; i < a->nops; i++)
            dup |= a->ops[i] == op;
        if (!dup)
            a->ops[a->nops++] = op;
    }
    return found ? 0 : -1;
}

static int add_shape(bench_args *a, const char *name)
{
    int found = 0;
    for (int i = 0; i < clef_bench_shape_count(); i++) {
        const clef_bench_shape *s = clef_bench_shape_at(i);
        if (strcmp(name, "all") != 0 && strcmp(name, s->name) != 0 &&
            strcmp(name, s->group) != 0)
            continue;
        found = 1;
        int dup = 0;
        for (int j = 0; j < a->nshapes; j++)
            dup |= a->shapes[j] == s;
        if (!dup && a->nshapes < MAX_SEL)
            a->shapes[a->nshapes++] = s;
    }
    return found ? 0 : -1;
}

static int parse_number(const char *flag, const char *v, double lo, double hi,
                        double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "clef-bench: %s: '%s' is not a number in [%g, %g]\n",
                flag, v, lo, hi);
        return 2;
    }
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    clef_bench_opts_default(&a->opts);
    const char *backend = "all", *op = "all", *shape = "all";
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        int takes = 1;
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(f, "--version") == 0) {
            printf("clef-bench %s\nkernels:", CLEF_VERSION);
            for (int b = 0; b < clef_backend_count(); b++)
                if (clef_backend_at(b)->table)
                    printf(" %s", clef_backend_at(b)->name);
            printf("\n");
            exit(0);
        } else if (strcmp(f, "--train") == 0) {
            a->train = 1, takes = 0;
        } else if (strcmp(f, "--list") == 0) {
            a->list = 1, takes = 0;
        } else if (strcmp(f, "--no-time") == 0) {
            a->opts.timing = 0, takes = 0;
        } else if (!v) {
            return bad_usage(
                f, "%s",
                strncmp(f, "--", 2) == 0 &&
                        (strcmp(f, "--backend") == 0 ||
                         strcmp(f, "--op") == 0 || strcmp(f, "--shape") == 0 ||
                         strcmp(f, "--threads") == 0 ||
                         strcmp(f, "--seed") == 0 || strcmp(f, "--json") == 0 ||
                         strcmp(f, "--budget") == 0 ||
                         strcmp(f, "--batch") == 0 ||
                         strcmp(f, "--scaling") == 0 ||
                         strcmp(f, "--precision") == 0 ||
                         strcmp(f, "--questions") == 0 ||
                         strcmp(f, "--options") == 0)
                    ? "needs a value"
                    : "unknown option");
        } else if (strcmp(f, "--backend") == 0) {
            backend = v;
        } else if (strcmp(f, "--op") == 0) {
            op = v;
        } else if (strcmp(f, "--shape") == 0) {
            shape = v;
        } else if (strcmp(f, "--threads") == 0) {
            if (parse_number(f, v, 1, 4096, &x))
                return 2;
            if (x != (int)x)
                return bad_usage(f, "'%s' must be a whole number", v);
            a->threads = (int)x;
        } else if (strcmp(f, "--seed") == 0) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return bad_usage(f, "'%s' must be a whole number >= 0", v);
            a->opts.seed = s;
        } else if (strcmp(f, "--json") == 0) {
            a->json = v;
        } else if (strcmp(f, "--budget") == 0) {
            if (parse_number(f, v, 0, 3600, &a->opts.budget_s))
                return 2;
        } else if (strcmp(f, "--questions") == 0 ||
                   strcmp(f, "--options") == 0) {
            if (parse_number(f, v, 1, 4096, &x))
                return 2;
            if (x != (int)x)
                return bad_usage(f, "'%s' must be a whole number", v);
            *(strcmp(f, "--questions") == 0 ? &a->opts.questions
                                            : &a->opts.options) = (int)x;
        } else if (strcmp(f, "--scaling") == 0) {
            if (parse_number(f, v, 2, 4096, &x))
                return 2;
            if (x != (int)x)
                return bad_usage(f, "'%s' must be a whole number", v);
            a->opts.scaling = (int)x;
        } else if (strcmp(f, "--precision") == 0) {
            if (strcmp(v, "fp32") && strcmp(v, "bf16") &&
                strcmp(v, "fp32,bf16"))
                return bad_usage(f, "'%s' is not fp32, bf16 or fp32,bf16", v);
            a->opts.bf16 = !strcmp(v, "bf16");
            a->opts.compare = !strcmp(v, "fp32,bf16");
        } else if (strcmp(f, "--batch") == 0) {
            if (parse_number(f, v, 1, 1024, &x))
                return 2;
            if (x != (int)x)
                return bad_usage(f, "'%s' must be a whole number", v);
            a->opts.batch = (int)x;
        } else {
            return bad_usage(f, "%s", "unknown option");
        }
        i += takes;
    }
    int rc;
    if ((rc = parse_list("--backend", backend, a, add_backend)) ||
        (rc = parse_list("--op", op, a, add_op)) ||
        (rc = parse_list("--shape", shape, a, add_shape)))
        return rc;
    if (a->opts.scaling && !a->train)
        return bad_usage("--scaling", "%s", "needs --train");
    if ((a->opts.bf16 || a->opts.compare) && !a->train)
        return bad_usage("--precision", "%s", "needs --train");
    if (a->opts.compare && a->opts.scaling)
        return bad_usage("--precision", "%s",
                         "fp32,bf16 and --scaling: one comparison at a time");
#if CLEF_MINIMAL
    if (a->train || a->json) {
        fprintf(stderr,
                "clef-bench: %s: not available in this build "
                "(CLEF_MINIMAL: no core/, no jansson)\n",
                a->train ? "--train" : "--json");
        return 2;
    }
#endif
    return 0;
}

// ---- output ----
static void print_list(void)
{
    printf("backends:\n");
    for (int i = 0; i < clef_backend_count(); i++) {
        const clef_backend *b = clef_backend_at(i);
        const char *why = clef_backend_unavailable(b);
        printf("  %-8s %s\n", b->name, why ? why : "available");
    }
    printf("ops:\n");
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        printf("  %s\n", clef_op_names[op]);
    printf("shapes:\n");
    printf("  %-11s %-9s %5s %5s %5s %3s %5s %4s %4s %4s\n", "name", "group",
           "T", "d", "w", "h", "f", "Q", "O", "pad");
    for (int i = 0; i < clef_bench_shape_count(); i++) {
        const clef_bench_shape *s = clef_bench_shape_at(i);
        printf("  %-11s %-9s %5d %5d %5d %3d %5d %4d %4d %4d\n", s->name,
               s->group, s->T, s->d, s->w, s->h, s->f, s->Q, s->O, s->pad);
    }
    printf("cases (op at each shape):\n");
    for (int i = 0; i < clef_bench_shape_count(); i++) {
        const clef_bench_shape *s = clef_bench_shape_at(i);
        for (int op = 0; op < CLEF_OP_COUNT; op++) {
            // Building a released-size case allocates its buffers; sizes are
            // all we need, and they are cheap at every other shape.
            clef_bench_case *c = clef_bench_case_new((clef_op)op, s, 1);
            printf("  %-11s %-17s %s\n", s->name, clef_op_names[op],
                   c ? clef_bench_case_dims(c) : "(out of memory)");
            clef_bench_case_free(c);
        }
    }
}

static void fmt_time(char *buf, size_t n, double t)
{
    if (t <= 0.0)
        snprintf(buf, n, "-");
    else if (t < 1e-6)
        snprintf(buf, n, "%.0f ns", t * 1e9);
    else if (t < 1e-3)
        snprintf(buf, n, "%.1f us", t * 1e6);
    else if (t < 1.0)
        snprintf(buf, n, "%.2f ms", t * 1e3);
    else
        snprintf(buf, n, "%.2f s", t);
}

static void print_header(const bench_args *a)
{
    const clef_cpu *cpu = clef_cpu_get();
    printf("clef-bench %s\n", CLEF_VERSION);
    printf("cpu: %s | isa: %s (", cpu->model[0] ? cpu->model : "unknown",
           clef_isa_name(cpu->isa_native) ? clef_isa_name(cpu->isa_native)
                                          : "unknown");
    const char *names[] = {"avx2",     "fma",        "f16c",
                           "avx512f",  "avx512bw",   "avx512dq",
                           "avx512vl", "avx512bf16", "avx512vnni"};
    int flags[] = {cpu->avx2,     cpu->fma,        cpu->f16c,
                   cpu->avx512f,  cpu->avx512bw,   cpu->avx512dq,
                   cpu->avx512vl, cpu->avx512bf16, cpu->avx512vnni};
    int any = 0;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i])
            printf("%s%s", any++ ? " " : "", names[i]);
    printf(") | cores %d, pus %d | threads %d | seed %llu\n", cpu->cores,
           cpu->pus, omp_get_max_threads(), (unsigned long long)a->opts.seed);
    clef_bench_print_libs(stdout);
    if (a->train)
        printf("%-7s %-16s %-10s %-36s %-10s %s\n", "backend", "op", "shape",
               "driver", "verdict",
               "rate (mean over the timed updates, after one warm-up)");
    else
        printf("%-7s %-16s %-10s %-36s %-10s %17s %9s %9s %16s %8s  %s\n",
               "backend", "op", "shape", "kernel", "verdict", "err/tol (eps)",
               "median", "min", "rate", "speedup", "sizes");
}

static void print_row(const clef_bench_result *r)
{
    char err[32] = "-", med[16], mn[16], rate[32] = "-", speed[16] = "-";
    if (r->verdict == CLEF_BENCH_PASS || r->verdict == CLEF_BENCH_FAIL)
        snprintf(err, sizeof err, "%.3g/%.0f", r->max_err_eps, r->tol_eps);
    fmt_time(med, sizeof med, r->t_median);
    fmt_time(mn, sizeof mn, r->t_min);
    if (r->rate > 0.0)
        snprintf(rate, sizeof rate, "%.3g %s", r->rate,
                 r->compute_bound ? "GFLOP/s" : "GB/s");
    if (r->speedup > 0.0)
        snprintf(speed, sizeof speed, "%.2fx", r->speedup);
    if (r->verdict == CLEF_BENCH_SKIP) {
        printf("%-7s %-16s %-10s %-36s SKIP       (%s)\n", r->backend, r->op,
               r->shape, "-", r->reason);
        return;
    }
    printf("%-7s %-16s %-10s %-36s %-10s %17s %9s %9s %16s %8s  %s\n",
           r->backend, r->op, r->shape, r->kernel,
           clef_bench_verdict_name(r->verdict), err, med, mn, rate, speed,
           r->dims);
    if (r->verdict != CLEF_BENCH_PASS)
        clef_bench_print_failure(stdout, r);
}

#if !CLEF_MINIMAL
static json_t *row_json(const clef_bench_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "backend", json_string(r->backend));
    json_object_set_new(o, "op", json_string(r->op));
    json_object_set_new(o, "shape", json_string(r->shape));
    json_object_set_new(o, "kernel", json_string(r->kernel));
    json_object_set_new(o, "sizes", json_string(r->dims));
    json_object_set_new(o, "verdict",
                        json_string(clef_bench_verdict_name(r->verdict)));
    json_object_set_new(o, "reason", json_string(r->reason));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    if (r->verdict == CLEF_BENCH_PASS || r->verdict == CLEF_BENCH_FAIL) {
        json_object_set_new(o, "max_abs_err", json_real(r->max_abs));
        json_object_set_new(o, "max_err_eps", json_real(r->max_err_eps));
        json_object_set_new(o, "tol_eps", json_real(r->tol_eps));
        json_object_set_new(o, "mismatches", json_integer(r->n_mismatch));
    }
    if (r->t_median > 0.0) {
        json_object_set_new(o, "reps", json_integer(r->reps));
        json_object_set_new(o, "median_s", json_real(r->t_median));
        json_object_set_new(o, "min_s", json_real(r->t_min));
        json_object_set_new(o, r->compute_bound ? "gflops" : "gbytes_per_s",
                            json_real(r->rate));
        json_object_set_new(o, "flops", json_real(r->flops));
        json_object_set_new(o, "bytes", json_real(r->bytes));
        if (r->speedup > 0.0)
            json_object_set_new(o, "speedup_vs_scalar", json_real(r->speedup));
    }
    if (r->verdict == CLEF_BENCH_FAIL || r->verdict == CLEF_BENCH_MISTRUSTED)
        json_object_set_new(o, "replay", json_string(r->replay));
    return o;
}

static json_t *header_json(const bench_args *a)
{
    const clef_cpu *cpu = clef_cpu_get();
    json_t *h = json_object();
    json_object_set_new(h, "version", json_string(CLEF_VERSION));
    json_object_set_new(h, "cpu", json_string(cpu->model));
    const char *isa = clef_isa_name(cpu->isa_native);
    json_object_set_new(h, "isa", json_string(isa ? isa : "unknown"));
    json_object_set_new(h, "cores", json_integer(cpu->cores));
    json_object_set_new(h, "pus", json_integer(cpu->pus));
    json_object_set_new(h, "threads", json_integer(omp_get_max_threads()));
    json_object_set_new(h, "seed", json_integer((json_int_t)a->opts.seed));
    json_object_set_new(h, "budget_s", json_real(a->opts.budget_s));
    json_object_set_new(h, "blis_arch", json_string(clef_bench_blis_arch()));
    return h;
}
#endif

// ---- the run ----
typedef struct tally {
    int passed, failed, skipped;
} tally;

static void count(tally *t, const clef_bench_result *r)
{
    if (r->verdict == CLEF_BENCH_PASS)
        t->passed++;
    else if (r->verdict == CLEF_BENCH_SKIP)
        t->skipped++;
    else
        t->failed++; // FAIL and MISTRUSTED
}

// A row without a case: SKIP (backend unavailable) or FAIL (no memory).
static void row_without_case(clef_bench_result *r, const clef_backend *b,
                             clef_op op, const clef_bench_shape *s)
{
    memset(r, 0, sizeof *r);
    const char *why = clef_backend_unavailable(b);
    r->verdict = why ? CLEF_BENCH_SKIP : CLEF_BENCH_FAIL;
    snprintf(r->backend, sizeof r->backend, "%s", b->name);
    snprintf(r->op, sizeof r->op, "%s", clef_op_names[op]);
    snprintf(r->shape, sizeof r->shape, "%s", s->name);
    snprintf(r->reason, sizeof r->reason, "%s",
             why ? why : "out of memory building the case");
}

static void run_kernels(const bench_args *a, json_t *rows, tally *t)
{
    int runnable = 0; // cases (and the reference) only when a backend can run
    for (int bi = 0; bi < a->nbackends; bi++)
        runnable += clef_backend_unavailable(a->backends[bi]) == NULL;
    for (int si = 0; si < a->nshapes; si++) {
        for (int oi = 0; oi < a->nops; oi++) {
            clef_op op = (clef_op)a->ops[oi];
            clef_bench_case *c = NULL;
            if (runnable) {
                c = clef_bench_case_new(op, a->shapes[si], a->opts.seed);
                if (c)
                    clef_bench_case_reference(c, &clef_scalar_kernels,
                                              &a->opts);
            }
            for (int bi = 0; bi < a->nbackends; bi++) {
                clef_bench_result r;
                if (c)
                    clef_bench_case_run(c, a->backends[bi], &a->opts, &r);
                else
                    row_without_case(&r, a->backends[bi], op, a->shapes[si]);
                print_row(&r);
                fflush(stdout);
                count(t, &r);
#if !CLEF_MINIMAL
                if (rows)
                    json_array_append_new(rows, row_json(&r));
#endif
            }
            clef_bench_case_free(c);
        }
    }
}

int main(int argc, char **argv)
{
    if (clef_bench_wants_tune(argc, argv))
        return clef_bench_tune_main(argc, argv);
    if (clef_bench_wants_handoff(argc, argv))
        return clef_bench_handoff_main(argc, argv);
    bench_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.list) {
        print_list();
        return 0;
    }
    // the CLI's thread count and core binding (scheduler/threads.c)
    clef_threads_setup(a.threads);

    tally t = {0, 0, 0};
    int json_failed = 0;
    print_header(&a);
#if CLEF_MINIMAL
    run_kernels(&a, NULL, &t);
#else
    json_t *doc = a.json ? json_object() : NULL;
    json_t *rows = a.json ? json_array() : NULL;
    if (a.train)
        clef_bench_train(a.backends, a.nbackends, a.shapes, a.nshapes, &a.opts,
                         rows, &t.passed, &t.failed, &t.skipped);
    else
        run_kernels(&a, rows, &t);

    if (doc) {
        json_object_set_new(doc, "header", header_json(&a));
        json_object_set_new(doc, "rows", rows);
        json_t *sum = json_object();
        json_object_set_new(sum, "passed", json_integer(t.passed));
        json_object_set_new(sum, "failed", json_integer(t.failed));
        json_object_set_new(sum, "skipped", json_integer(t.skipped));
        json_object_set_new(doc, "summary", sum);
        if (json_dump_file(doc, a.json, JSON_INDENT(1)) != 0) {
            fprintf(stderr, "clef-bench: --json %s: cannot write the file\n",
                    a.json);
            json_failed = 1;
        }
        json_decref(doc);
    }
#endif
    printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
    return t.failed || json_failed ? 1 : 0;
}

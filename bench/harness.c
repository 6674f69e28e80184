// clef-bench harness, generic part: shapes, buffers with sentinels, the
// reference run, comparison, verdicts and timing. What each op reads,
// writes and tolerates is its case (case.h, bench/case_*.c).
#include "case.h"
#include "median.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu/clock.h"

// ---- shapes ----
// The head's own geometries (HEAD.md §1; Q questions and O options per record
// are our choice: a typical record of that size), then the edge battery:
// 1, primes, one below and one above every vector width (8, 16, 32, 64
// floats) and non-multiples of every tile (6-row GEMM tiles, 16/32-wide
// column tiles); strided rows (pad 1) break any alignment assumption.
static const clef_bench_shape g_shapes[] = {
    // name        group       T    d     w     h   f     Q   O    pad
    {"tiny", "tiny", 6, 8, 8, 2, 16, 2, 4, 0},
    {"fixture", "fixture", 96, 8, 8, 2, 16, 2, 4, 0},
    {"mid", "mid", 256, 1024, 512, 8, 2048, 16, 64, 0},
    {"released", "released", 512, 5120, 1024, 16, 4096, 32, 128, 0},
    {"edge-1", "edge", 1, 1, 1, 1, 1, 1, 1, 1},
    {"edge-7", "edge", 7, 9, 15, 3, 17, 2, 7, 1},         // 8±1, 16±1
    {"edge-17", "edge", 17, 15, 9, 1, 7, 3, 9, 1},        // 16±1, 8±1, dh=9
    {"edge-33", "edge", 33, 31, 63, 7, 65, 5, 17, 1},     // 32±1, 64±1, dh=9
    {"edge-65", "edge", 65, 63, 33, 3, 31, 7, 31, 1},     // 64±1, 32±1, dh=11
    {"edge-prime", "edge", 13, 37, 38, 2, 101, 3, 11, 1}, // primes, dh=19
    {"edge-tile", "edge", 37, 129, 48, 3, 95, 5, 23,
     1}, // 6k+1, 128+1, dh=16, 3·32−1
};

int clef_bench_shape_count(void)
{
    return (int)(sizeof g_shapes / sizeof g_shapes[0]);
}

const clef_bench_shape *clef_bench_shape_at(int i)
{
    if (i < 0 || i >= clef_bench_shape_count())
        return NULL;
    return &g_shapes[i];
}

const clef_bench_shape *clef_bench_shape_find(const char *name)
{
    for (int i = 0; i < clef_bench_shape_count(); i++)
        if (strcmp(g_shapes[i].name, name) == 0)
            return &g_shapes[i];
    return NULL;
}

const char *clef_bench_verdict_name(clef_bench_verdict v)
{
    switch (v) {
    case CLEF_BENCH_PASS:
        return "PASS";
    case CLEF_BENCH_FAIL:
        return "FAIL";
    case CLEF_BENCH_MISTRUSTED:
        return "MISTRUSTED";
    case CLEF_BENCH_SKIP:
        return "SKIP";
    }
    return "?";
}

void clef_bench_opts_default(clef_bench_opts *o)
{
    o->seed = 1;
    o->timing = 1;
    o->budget_s = 0.05;
    o->max_reps = 1000;
    o->batch = 1;
    o->questions = 0;
    o->options = 0;
}

// ---- random numbers (splitmix64: tiny, seedable, good enough for fills) ----
uint64_t bench_rng_next(bench_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float bench_uniform(bench_rng *r, float lo, float hi)
{
    float u = (float)(bench_rng_next(r) >> 40) * (1.0f / 16777216.0f); // [0,1)
    return lo + (hi - lo) * u;
}

int bench_int_in(bench_rng *r, int lo, int hi)
{
    return lo + (int)(bench_rng_next(r) % (uint64_t)(hi - lo + 1));
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull; // FNV-1a
    return h;
}

// ---- buffers ----
static float sentinel_value(void)
{
    uint32_t bits = BENCH_SENTINEL_BITS;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int is_sentinel(const float *p)
{
    uint32_t bits;
    memcpy(&bits, p, sizeof bits);
    return bits == BENCH_SENTINEL_BITS;
}

static float *alloc_floats(size_t n)
{
    return malloc((n + BENCH_SENTINEL) * sizeof(float));
}

bench_buf *bench_buf_add(clef_bench_case *c, const char *name, bench_kind kind,
                         int rows, int cols, int ld, float **bind)
{
    if (c->nbuf == BENCH_MAX_BUF)
        return NULL;
    bench_buf *b = &c->buf[c->nbuf];
    memset(b, 0, sizeof *b);
    b->name = name;
    b->kind = kind;
    b->rows = rows;
    b->cols = cols;
    b->ld = ld;
    b->n = (size_t)rows * ld;
    b->init = alloc_floats(b->n);
    b->run = alloc_floats(b->n);
    if (kind == BENCH_OUT || kind == BENCH_ACC)
        b->ref = alloc_floats(b->n);
    if (!b->init || !b->run ||
        ((kind == BENCH_OUT || kind == BENCH_ACC) && !b->ref)) {
        free(b->init);
        free(b->run);
        free(b->ref);
        return NULL;
    }
    // Everything starts as the NaN pattern: gaps and tail stay so; setup
    // overwrites the live elements of inputs and accumulated outputs.
    float s = sentinel_value();
    for (size_t i = 0; i < b->n + BENCH_SENTINEL; i++)
        b->init[i] = s;
    c->nbuf++;
    *bind = b->run;
    return b;
}

int *bench_ints_add(clef_bench_case *c, size_t n)
{
    if (c->nint == BENCH_MAX_INT)
        return NULL;
    int *a = calloc(n ? n : 1, sizeof(int));
    if (a)
        c->ints[c->nint++] = a;
    return a;
}

double *bench_dacc_add(clef_bench_case *c, const char *name, double init)
{
    c->dacc_name = name;
    c->has_dacc = 1;
    c->dacc_init = init;
    return &c->dacc_run;
}

// Every live element of every buffer, in bytes: inputs read once, outputs
// written once, accumulated outputs read and written.
static double buffer_bytes(const clef_bench_case *c)
{
    double bytes = 0.0;
    for (int i = 0; i < c->nbuf; i++) {
        const bench_buf *b = &c->buf[i];
        double live = (double)b->rows * b->cols * sizeof(float);
        bytes += b->kind == BENCH_ACC       ? 2 * live
                 : b->kind == BENCH_SCRATCH ? 0
                                            : live;
    }
    return bytes;
}

// ---- case lifetime ----
clef_bench_case *clef_bench_case_new(clef_op op, const clef_bench_shape *s,
                                     uint64_t seed)
{
    const bench_case_def *def = bench_case_of(op);
    if (!def)
        return NULL;
    clef_bench_case *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->op = op;
    c->shape = s;
    c->seed = seed;
    c->def = def;
    c->st = calloc(1, def->size);
    if (!c->st) {
        free(c);
        return NULL;
    }
    // The fills depend on the seed, the op and the shape only, so
    // `--op X --shape Y --seed S` rebuilds exactly the same case.
    uint64_t h = hash_str(
        hash_str(0xcbf29ce484222325ull ^ seed, clef_op_names[op]), s->name);
    bench_rng rng = {h};
    if (def->setup(c, c->st, &rng) != 0) {
        clef_bench_case_free(c);
        return NULL;
    }
    c->bytes = buffer_bytes(c);
    c->tol_eps = c->tol->base + c->tol->per_len * (double)c->tol_len;
    return c;
}

void clef_bench_case_free(clef_bench_case *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nbuf; i++) {
        free(c->buf[i].init);
        free(c->buf[i].ref);
        free(c->buf[i].run);
    }
    for (int i = 0; i < c->nint; i++)
        free(c->ints[i]);
    free(c->st);
    free(c);
}

const char *clef_bench_case_dims(const clef_bench_case *c)
{
    return c->dims;
}

double clef_bench_case_work(const clef_bench_case *c)
{
    return bench_case_call_work(c->def, c->st);
}

static void call_kernel(const clef_kernels *k, clef_bench_case *c)
{
    c->def->call(k, c->st);
}

// ---- one kernel run with its integrity checks ----
static void reset_run(clef_bench_case *c)
{
    for (int i = 0; i < c->nbuf; i++) {
        bench_buf *b = &c->buf[i];
        memcpy(b->run, b->init, (b->n + BENCH_SENTINEL) * sizeof(float));
    }
    c->dacc_run = c->dacc_init;
}

// Sentinels after every buffer and in the gaps of strided rows must be
// untouched; inputs must come back bit-identical. 0, or -1 with `why`.
static int check_integrity(const clef_bench_case *c, char *why, size_t len)
{
    for (int i = 0; i < c->nbuf; i++) {
        const bench_buf *b = &c->buf[i];
        for (size_t j = 0; j < BENCH_SENTINEL; j++) {
            if (!is_sentinel(b->run + b->n + j)) {
                snprintf(why, len,
                         "wrote past the end of %s: sentinel element %zu after "
                         "its %zu floats was overwritten",
                         b->name, j, b->n);
                return -1;
            }
        }
        if (b->kind == BENCH_SCRATCH)
            continue;
        for (int r = 0; r < b->rows; r++) {
            for (int k = b->cols; k < b->ld; k++) {
                if (!is_sentinel(b->run + (size_t)r * b->ld + k)) {
                    snprintf(why, len,
                             "wrote into the row gap of %s: row %d column %d "
                             "(cols %d, ld %d)",
                             b->name, r, k, b->cols, b->ld);
                    return -1;
                }
            }
        }
        if (b->kind == BENCH_IN &&
            memcmp(b->run, b->init, b->n * sizeof(float)) != 0) {
            size_t j = 0;
            while (memcmp(b->run + j, b->init + j, sizeof(float)) == 0)
                j++;
            snprintf(why, len, "modified input %s at element %zu (%g -> %g)",
                     b->name, j, (double)b->init[j], (double)b->run[j]);
            return -1;
        }
    }
    return 0;
}

// Fraction of output elements that carry information: nonzero for
// overwritten outputs, changed from the prefill for accumulated ones.
static double informative_fraction(const clef_bench_case *c)
{
    size_t total = 0, info = 0;
    for (int i = 0; i < c->nbuf; i++) {
        const bench_buf *b = &c->buf[i];
        if (b->kind != BENCH_OUT && b->kind != BENCH_ACC)
            continue;
        for (int r = 0; r < b->rows; r++) {
            for (int k = 0; k < b->cols; k++) {
                size_t j = (size_t)r * b->ld + k;
                total++;
                if (b->kind == BENCH_OUT
                        ? b->ref[j] != 0.0f
                        : memcmp(b->ref + j, b->init + j, sizeof(float)) != 0)
                    info++;
            }
        }
    }
    if (c->has_dacc) {
        total++;
        info += c->dacc_ref != c->dacc_init;
    }
    return total ? (double)info / (double)total : 0.0;
}

// ---- comparison ----
typedef struct cmp_state {
    double tol; // absolute units: tol_eps * FLT_EPSILON
    long n_mismatch;
    double max_abs, max_err;
    char *text;
    size_t len, used;
    int shown;
} cmp_state;

static void cmp_one(cmp_state *s, const char *name, int r, int k, double e,
                    double g)
{
    int bad;
    double diff = 0.0, err = 0.0;
    if (isnan(e) || isnan(g)) {
        bad = !(isnan(e) && isnan(g)); // NaN must meet NaN
        diff = err = bad ? INFINITY : 0.0;
    } else if (isinf(e) || isinf(g)) {
        bad = e != g; // Inf must meet the same Inf
        diff = err = bad ? INFINITY : 0.0;
    } else {
        diff = fabs(g - e);
        err = diff / fmax(fabs(e), 1.0);
        bad = err > s->tol;
    }
    if (diff > s->max_abs)
        s->max_abs = diff;
    if (err > s->max_err)
        s->max_err = err;
    if (!bad)
        return;
    s->n_mismatch++;
    if (s->shown >= CLEF_BENCH_MAX_SHOWN || s->used >= s->len)
        return;
    s->shown++;
    int w = snprintf(s->text + s->used, s->len - s->used,
                     "  %s[%d,%d]: expected %.9g got %.9g diff %.3g\n", name, r,
                     k, e, g, g - e);
    if (w > 0)
        s->used += (size_t)w < s->len - s->used ? (size_t)w : s->len - s->used;
}

static void compare(const clef_bench_case *c, clef_bench_result *r)
{
    cmp_state s = {.tol = c->tol_eps * FLT_EPSILON,
                   .text = r->mismatches,
                   .len = sizeof r->mismatches};
    r->mismatches[0] = 0;
    for (int i = 0; i < c->nbuf; i++) {
        const bench_buf *b = &c->buf[i];
        if (b->kind != BENCH_OUT && b->kind != BENCH_ACC)
            continue;
        for (int row = 0; row < b->rows; row++)
            for (int k = 0; k < b->cols; k++) {
                size_t j = (size_t)row * b->ld + k;
                cmp_one(&s, b->name, row, k, b->ref[j], b->run[j]);
            }
    }
    if (c->has_dacc)
        cmp_one(&s, c->dacc_name, 0, 0, c->dacc_ref, c->dacc_run);
    r->n_mismatch = s.n_mismatch;
    r->max_abs = s.max_abs;
    r->max_err_eps = s.max_err / FLT_EPSILON;
}

// ---- timing ----
// The run arrays have just been used by the check call (the warm-up). A
// sample is `inner` back-to-back calls, inner doubled until a sample lasts
// BENCH_MIN_SAMPLE_S (so the clock's resolution and overhead do not count);
// samples repeat until the budget is spent and there are at least 3 (1 when a
// call takes over BENCH_SLOW_CALL_S), capped at o->max_reps. Times are per
// call.
#define BENCH_MIN_SAMPLE_S 20e-6
// A check call longer than this (and than the budget) is itself the one
// timing sample: released-size scalar GEMMs take minutes per call.
#define BENCH_SLOW_CALL_S 1.0
static void time_kernel(clef_bench_case *c, const clef_kernels *k,
                        const clef_bench_opts *o, int *reps, double *median,
                        double *minimum)
{
    int cap = o->max_reps > 0 ? o->max_reps : 1;
    double *t = malloc((size_t)cap * sizeof(double));
    *reps = 0;
    *median = *minimum = 0.0;
    if (!t)
        return;
    long inner = 1;
    int n = 0;
    double start = clef_now_s();
    for (;;) { // calibration; a single call that is long enough is sample 0
        double t0 = clef_now_s();
        for (long i = 0; i < inner; i++)
            call_kernel(k, c);
        double dt = clef_now_s() - t0;
        if (dt >= BENCH_MIN_SAMPLE_S || inner >= (1L << 20)) {
            if (inner == 1)
                t[n++] = dt;
            else
                start =
                    clef_now_s(); // calibration of short kernels is not timed
            break;
        }
        inner *= 2;
    }
    while (n < cap) {
        double spent = clef_now_s() - start;
        if (spent >= o->budget_s &&
            (n >= 3 || (n >= 1 && t[0] > BENCH_SLOW_CALL_S)))
            break;
        double t0 = clef_now_s();
        for (long i = 0; i < inner; i++)
            call_kernel(k, c);
        t[n++] = (clef_now_s() - t0) / (double)inner;
    }
    *reps = n;
    *median = bench_median(t, n); // sorts t
    *minimum = t[0];
    free(t);
}

// ---- reference ----
void clef_bench_case_reference(clef_bench_case *c, const clef_kernels *ref,
                               const clef_bench_opts *o)
{
    c->ref_done = 1;
    c->ref_verdict = CLEF_BENCH_PASS;
    c->ref_reason[0] = 0;
    c->ref_fn = ref ? clef_kernels_get(ref, c->op) : NULL;
    c->ref_kernel = ref && ref->names[c->op] ? ref->names[c->op] : "?";
    if (!c->ref_fn) {
        c->ref_verdict = CLEF_BENCH_FAIL;
        snprintf(c->ref_reason, sizeof c->ref_reason,
                 "reference has no kernel for %s", clef_op_names[c->op]);
        return;
    }
    reset_run(c);
    double t0 = clef_now_s();
    call_kernel(ref, c);
    double first = clef_now_s() - t0;
    char why[200];
    if (check_integrity(c, why, sizeof why) != 0) {
        c->ref_verdict = CLEF_BENCH_FAIL;
        snprintf(c->ref_reason, sizeof c->ref_reason, "reference %s %s",
                 c->ref_kernel, why);
        return;
    }
    for (int i = 0; i < c->nbuf; i++) {
        bench_buf *b = &c->buf[i];
        if (b->ref)
            memcpy(b->ref, b->run, b->n * sizeof(float));
    }
    c->dacc_ref = c->dacc_run;
    c->informative = informative_fraction(c);
    if (c->informative < 0.5) {
        c->ref_verdict = CLEF_BENCH_MISTRUSTED;
        snprintf(c->ref_reason, sizeof c->ref_reason,
                 "only %.0f%% of the reference result is informative (nonzero "
                 "or changed): a match would prove nothing",
                 100.0 * c->informative);
        return;
    }
    if (!o->timing)
        return;
    if (first > BENCH_SLOW_CALL_S && first > o->budget_s) {
        c->ref_reps = 1; // a released-size scalar GEMM: one call is enough
        c->ref_median = c->ref_min = first;
        return;
    }
    time_kernel(c, ref, o, &c->ref_reps, &c->ref_median, &c->ref_min);
}

// ---- one backend on one case ----
static void result_init(clef_bench_result *r, const clef_bench_case *c,
                        const clef_backend *b, const clef_bench_opts *o)
{
    memset(r, 0, sizeof *r);
    snprintf(r->backend, sizeof r->backend, "%s", b->name);
    snprintf(r->op, sizeof r->op, "%s", clef_op_names[c->op]);
    snprintf(r->shape, sizeof r->shape, "%s", c->shape->name);
    snprintf(r->dims, sizeof r->dims, "%s", c->dims);
    r->seed = o->seed;
    r->tol_eps = c->tol_eps;
    r->flops = c->flops;
    r->bytes = c->bytes;
    r->compute_bound = c->compute_bound;
    snprintf(r->replay, sizeof r->replay,
             "clef-bench --backend %s --op %s --shape %s --seed %llu", b->name,
             r->op, r->shape, (unsigned long long)o->seed);
}

static void set_rate(clef_bench_result *r, const clef_bench_case *c)
{
    if (r->t_median <= 0.0)
        return;
    double work = r->compute_bound ? r->flops : r->bytes;
    r->rate = work / r->t_median * 1e-9;
    if (c->ref_median > 0.0)
        r->speedup = c->ref_median / r->t_median;
}

void clef_bench_case_run(clef_bench_case *c, const clef_backend *b,
                         const clef_bench_opts *o, clef_bench_result *r)
{
    result_init(r, c, b, o);
    const char *why_not = clef_backend_unavailable(b);
    if (why_not) {
        r->verdict = CLEF_BENCH_SKIP;
        snprintf(r->reason, sizeof r->reason, "%s", why_not);
        return;
    }
    const clef_kernels *k = b->table;
    void (*fn)(void) = clef_kernels_get(k, c->op);
    const char *name = k->names[c->op];
    snprintf(r->kernel, sizeof r->kernel, "%s", name ? name : "?");
    if (!fn) {
        r->verdict = CLEF_BENCH_FAIL;
        snprintf(r->reason, sizeof r->reason, "backend %s has no kernel for %s",
                 b->name, r->op);
        return;
    }
    if (!c->ref_done) {
        r->verdict = CLEF_BENCH_FAIL;
        snprintf(r->reason, sizeof r->reason, "no reference computed");
        return;
    }
    r->informative = c->informative;
    if (c->ref_verdict != CLEF_BENCH_PASS) {
        r->verdict = c->ref_verdict;
        snprintf(r->reason, sizeof r->reason, "%s", c->ref_reason);
        return;
    }

    if (fn == c->ref_fn) {
        // The reference kernel itself: its run was the check (integrity and
        // trust) and its timing is the baseline.
        r->verdict = CLEF_BENCH_PASS;
        r->reps = c->ref_reps;
        r->t_median = c->ref_median;
        r->t_min = c->ref_min;
        set_rate(r, c);
        return;
    }

    reset_run(c);
    double t0 = clef_now_s();
    call_kernel(k, c);
    double first = clef_now_s() - t0;
    char why[200];
    if (check_integrity(c, why, sizeof why) != 0) {
        r->verdict = CLEF_BENCH_FAIL;
        snprintf(r->reason, sizeof r->reason, "%s %s", r->kernel, why);
        return;
    }
    compare(c, r);
    if (r->n_mismatch > 0) {
        r->verdict = CLEF_BENCH_FAIL;
        snprintf(r->reason, sizeof r->reason,
                 "%ld elements differ from %s beyond %.0f eps (max %.3g eps)",
                 r->n_mismatch, c->ref_kernel, c->tol_eps, r->max_err_eps);
        return;
    }
    r->verdict = CLEF_BENCH_PASS;
    if (!o->timing)
        return;
    if (first > BENCH_SLOW_CALL_S && first > o->budget_s) {
        r->reps = 1; // the check call was long enough to be the sample
        r->t_median = r->t_min = first;
    } else {
        time_kernel(c, k, o, &r->reps, &r->t_median, &r->t_min);
    }
    set_rate(r, c);
}

void clef_bench_run_one(const clef_backend *b, const clef_kernels *ref,
                        clef_op op, const clef_bench_shape *s,
                        const clef_bench_opts *o, clef_bench_result *r)
{
    clef_bench_case *c = clef_bench_case_new(op, s, o->seed);
    if (!c) {
        clef_bench_case tmp = {.op = op, .shape = s};
        result_init(r, &tmp, b, o);
        r->verdict = CLEF_BENCH_FAIL;
        snprintf(r->reason, sizeof r->reason,
                 "out of memory building the case");
        return;
    }
    clef_bench_case_reference(c, ref, o);
    clef_bench_case_run(c, b, o, r);
    clef_bench_case_free(c);
}

void clef_bench_print_failure(FILE *f, const clef_bench_result *r)
{
    if (r->verdict != CLEF_BENCH_FAIL && r->verdict != CLEF_BENCH_MISTRUSTED)
        return;
    fprintf(f, "  %s %s %s %s: %s\n", clef_bench_verdict_name(r->verdict),
            r->backend, r->op, r->shape, r->reason);
    if (r->mismatches[0])
        fprintf(f, "%s", r->mismatches);
    fprintf(f, "  replay: %s\n", r->replay);
}

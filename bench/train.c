// clef-bench --train: whole training updates per backend and geometry.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dnnl.h>
#include <omp.h>

#include "bench.h"
#include "bench_handoff.h"
#include "median.h"
#include "head.h"
#include "mm.h"
#include "rng.h"
#include "cpu/cpu.h"
#include "cpu/clock.h"

#define TRAIN_V 16 // lexical rows of the synthetic record
#define TRAIN_R 2  // routing layers (HEAD.md §1: every released size)
#define TRAIN_L 4  // field layers

static float uniform(uint64_t *s, float lo, float hi)
{
    return lo +
           (hi - lo) * (float)(clef_splitmix64(s) >> 40) * (1.0f / 16777216.0f);
}

// A synthetic train record of the shape's size: H (T, d) and E (V, d)
// uniform, Q questions cycling noul / choice / score with O options shared
// out (at least one each), spans inside [0, T), one-hot labels.
static int make_record(const clef_bench_shape *s, const clef_bench_opts *op,
                       uint64_t seed, clef_record *r, float **E)
{
    memset(r, 0, sizeof *r);
    // --questions Q --options N replace the shape's question geometry
    int T = s->T, d = s->d, Q = op->questions ? op->questions : s->Q;
    int O = op->questions || op->options ? Q * (op->options ? op->options : 2)
                                         : (s->O < s->Q ? s->Q : s->O);
    r->T = T, r->d = d, r->Q = Q, r->O = O;
    r->split = CLEF_SPLIT_TRAIN;
    r->id = strdup("bench");
    r->H = malloc(sizeof(float) * (size_t)T * d);
    r->ids = malloc(sizeof(int) * T);
    r->qtype = malloc(sizeof(int) * Q);
    r->qspan = malloc(sizeof(int) * 2 * Q);
    r->opt_off = malloc(sizeof(int) * (Q + 1));
    r->ospan = malloc(sizeof(int) * 2 * O);
    r->has_target = malloc(sizeof(int) * Q);
    r->label = malloc(sizeof(int) * Q);
    r->target = calloc(O, sizeof(float));
    *E = malloc(sizeof(float) * TRAIN_V * d);
    if (!r->id || !r->H || !r->ids || !r->qtype || !r->qspan || !r->opt_off ||
        !r->ospan || !r->has_target || !r->label || !r->target || !*E)
        return -1;
    uint64_t st = seed;
    for (size_t i = 0; i < (size_t)T * d; i++)
        r->H[i] = uniform(&st, -1, 1);
    for (size_t i = 0; i < (size_t)TRAIN_V * d; i++)
        (*E)[i] = uniform(&st, -1, 1);
    for (int t = 0; t < T; t++)
        r->ids[t] = (int)(clef_splitmix64(&st) % TRAIN_V);
    for (int q = 0; q <= Q; q++)
        r->opt_off[q] = (int)((long)q * O / Q);
    for (int q = 0; q < Q; q++) {
        int n = r->opt_off[q + 1] - r->opt_off[q];
        r->qtype[q] = q % 3 == 0   ? CLEF_QTYPE_NOUL
                      : q % 3 == 1 ? CLEF_QTYPE_CHOICE
                                   : CLEF_QTYPE_SCORE;
        int a = (int)(clef_splitmix64(&st) % T),
            b = (int)(clef_splitmix64(&st) % T);
        r->qspan[2 * q] = a < b ? a : b;
        r->qspan[2 * q + 1] = (a < b ? b : a) + 1;
        r->has_target[q] = 1;
        r->label[q] = (int)(clef_splitmix64(&st) % n);
        r->target[r->opt_off[q] + r->label[q]] = 1.0f;
    }
    for (int o = 0; o < O; o++) {
        int a = (int)(clef_splitmix64(&st) % T),
            b = (int)(clef_splitmix64(&st) % T);
        r->ospan[2 * o] = a < b ? a : b;
        r->ospan[2 * o + 1] = (a < b ? b : a) + 1;
    }
    return 0;
}

static void row(const clef_backend *b, const clef_bench_shape *s,
                int precision_bf16, const char *verdict, const char *why,
                double ups, double gf, int reps, double loss, json_t *rows)
{
    if (why)
        printf("%-7s %-16s %-10s %-36s %-10s (%s)\n", b->name, "train_step",
               s->name, "-", verdict, why);
    else
        printf("%-7s %-16s %-10s %-36s %-10s %10.4g updates/s %10.3g GFLOP/s "
               "(%d updates, loss %.6g)\n",
               b->name, "train_step", s->name,
               precision_bf16 ? "clef_train_step (bf16)" : "clef_train_step",
               verdict, ups, gf, reps, loss);
    fflush(stdout);
    if (!rows)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "backend", json_string(b->name));
    json_object_set_new(o, "op", json_string("train_step"));
    json_object_set_new(o, "precision",
                        json_string(precision_bf16 ? "bf16" : "fp32"));
    json_object_set_new(o, "shape", json_string(s->name));
    json_object_set_new(o, "verdict", json_string(verdict));
    if (why)
        json_object_set_new(o, "reason", json_string(why));
    else {
        json_object_set_new(o, "updates_per_s", json_real(ups));
        json_object_set_new(o, "gflops", json_real(gf));
        json_object_set_new(o, "reps", json_integer(reps));
        json_object_set_new(o, "first_loss", json_real(loss));
    }
    json_array_append_new(rows, o);
}

// A fresh head, B synthetic records of the shape and a workspace for them.
typedef struct train_setup {
    clef_config cfg;
    clef_head hd;
    int B, have_head;
    clef_record *rec;
    const clef_record **batch;
    float **E;
    clef_ws *ws;
    clef_train_opts to;
    struct clef_mm mm; // --precision bf16: the table k16 runs on
    clef_kernels k16;
    const clef_kernels *k;
} train_setup;

static void setup_free(train_setup *t)
{
    clef_ws_free(t->ws);
    clef_mm_free(&t->mm);
    for (int i = 0; t->rec && t->E && i < t->B; i++) {
        clef_record_free(&t->rec[i]);
        free(t->E[i]);
    }
    free(t->rec);
    free(t->batch);
    free(t->E);
    if (t->have_head)
        clef_head_free(&t->hd);
}

// 0, or -1 with the reason in why (t is freed then).
static int setup_make(const clef_backend *b, const clef_bench_shape *s,
                      const clef_bench_opts *o, int bf16, train_setup *t,
                      char *why, size_t nwhy)
{
    enum { BMAX = 1024 };
    clef_err err = {0};
    memset(t, 0, sizeof(*t));
    t->cfg = (clef_config){
        .d = s->d, .w = s->w, .h = s->h, .f = s->f, .R = TRAIN_R, .L = TRAIN_L};
    t->B = o->batch < 1 ? 1 : (o->batch > BMAX ? BMAX : o->batch);
    t->rec = calloc(t->B, sizeof(*t->rec));
    t->batch = calloc(t->B, sizeof(*t->batch));
    t->E = calloc(t->B, sizeof(*t->E));
    if (!t->rec || !t->batch || !t->E) {
        snprintf(why, nwhy, "out of memory");
        goto fail;
    }
    if (clef_head_alloc(&t->hd, &t->cfg, &err) != 0) {
        snprintf(why, nwhy, "head: %s", err.msg);
        goto fail;
    }
    t->have_head = 1;
    clef_head_init_random(&t->hd, o->seed);
    // B records of the shape (different draws), one packed batch per update
    for (int i = 0; i < t->B; i++) {
        t->batch[i] = &t->rec[i];
        if (make_record(s, o, (o->seed ^ 0x5eed) + 7919 * (uint64_t)i,
                        &t->rec[i], &t->E[i]) != 0 ||
            clef_record_prepare(b->table, &t->rec[i], t->E[i], TRAIN_V, &err) !=
                0) {
            snprintf(why, nwhy, "setup: %s",
                     err.msg[0] ? err.msg : "out of memory");
            goto fail;
        }
    }
    clef_ws_limits lim;
    clef_ws_limits_for(t->rec, t->B, t->B, &lim);
    if (!(t->ws = clef_ws_create_limits(&t->cfg, &lim))) {
        snprintf(why, nwhy, "setup: out of memory");
        goto fail;
    }
    const char *mode = getenv("CLEF_MEMORY_ATTENTION"); // as in clef train
    if (mode && *mode && clef_ws_set_memory_attention(t->ws, mode) != 0) {
        snprintf(why, nwhy,
                 "CLEF_MEMORY_ATTENTION is \"%s\", expected auto, "
                 "project or absorb",
                 mode);
        goto fail;
    }
    clef_train_opts_default(&t->to);
    t->k = b->table;
    if (bf16) {
        if (clef_mm_init(&t->mm, &t->hd) ||
            clef_mm_table(b->table, &t->mm, &t->k16)) {
            snprintf(why, nwhy, "setup: no bf16 product in %s (or OOM)",
                     b->name);
            goto fail;
        }
        t->k = &t->k16;
        // as clef train --precision bf16 prepares a package: x̂ kept in bf16
        for (int i = 0; i < t->B; i++)
            if (clef_record_keep_bf16(b->table, &t->rec[i]) != 0) {
                snprintf(why, nwhy, "setup: out of memory");
                goto fail;
            }
    }
    return 0;
fail:
    setup_free(t);
    return -1;
}

static double setup_step(train_setup *t, const clef_backend *b)
{
    (void)b;
    return clef_train_step(t->k, &t->hd, t->batch, t->B, t->ws, &t->to);
}

// One backend at one geometry. Returns 0 PASS, 1 FAIL.
static int train_one(const clef_backend *b, const clef_bench_shape *s,
                     const clef_bench_opts *o, json_t *rows)
{
    train_setup t;
    char why[1100];
    if (setup_make(b, s, o, o->bf16, &t, why, sizeof why) != 0) {
        row(b, s, o->bf16, "FAIL", why, 0, 0, 0, 0, rows);
        return 1;
    }
    int failed = 1;
    // Warm-up update (also the first loss), then updates until the budget.
    double loss = setup_step(&t, b);
    if (!isfinite(loss)) {
        snprintf(why, sizeof why, "loss of the first update is %g", loss);
        row(b, s, o->bf16, "FAIL", why, 0, 0, 0, 0, rows);
        goto cleanup;
    }
    int reps = 0;
    double t0 = clef_now_s(), spent = 0.0;
    do {
        double l = setup_step(&t, b);
        reps++;
        spent = clef_now_s() - t0;
        if (!isfinite(l)) {
            snprintf(why, sizeof why, "loss of update %d is %g", reps + 1, l);
            row(b, s, o->bf16, "FAIL", why, 0, 0, 0, 0, rows);
            goto cleanup;
        }
    } while (
        !(spent >= o->budget_s && (reps >= 3 || spent / reps > o->budget_s)));
    double per = spent / reps;
    // GEMM and attention work of the update (core/flops.c)
    double gf = clef_update_flops(&t.cfg, t.batch, t.B,
                                  getenv("CLEF_MEMORY_ATTENTION")) /
                per * 1e-9;
    row(b, s, o->bf16, "PASS", NULL, 1.0 / per, gf, reps, loss, rows);
    failed = 0;
cleanup:
    setup_free(&t);
    return failed;
}

// The control: oneDNN's sgemm of the update's memory projection, X Wᵀ
// (B·T, w, d), the shape that dominates the update's work.
typedef struct control_gemm {
    int M, N, K;
    float *X, *W, *C;
} control_gemm;

static int control_make(const train_setup *t, control_gemm *g)
{
    g->M = t->rec[0].T * t->B, g->N = t->cfg.w, g->K = t->cfg.d;
    g->X = malloc(sizeof(float) * (size_t)g->M * g->K);
    g->W = malloc(sizeof(float) * (size_t)g->N * g->K);
    g->C = malloc(sizeof(float) * (size_t)g->M * g->N);
    if (!g->X || !g->W || !g->C)
        return -1;
    for (size_t i = 0; i < (size_t)g->M * g->K; i++)
        g->X[i] = (float)(i % 13) * 0.01f;
    for (size_t i = 0; i < (size_t)g->N * g->K; i++)
        g->W[i] = (float)(i % 7) * 0.01f;
    return 0;
}

static double control_time(const control_gemm *g)
{
    double t0 = clef_now_s();
    dnnl_sgemm('N', 'T', g->M, g->N, g->K, 1.0f, g->X, g->K, g->W, g->K, 0.0f,
               g->C, g->N);
    return clef_now_s() - t0;
}

static void control_free(control_gemm *g)
{
    free(g->X), free(g->W), free(g->C);
}

// A measured row's FAIL line, with the reason.
static void measured_fail(const clef_backend *b, const char *op,
                          const clef_bench_shape *s, const char *what,
                          const char *why)
{
    printf("%-7s %-16s %-10s %-36s FAIL       (%s)\n", b->name, op, s->name,
           what, why);
}

// A measured row's common fields (the rest is the caller's).
static json_t *measured_row(const clef_backend *b, const char *op,
                            const clef_bench_shape *s, int threads, int rounds)
{
    json_t *r = json_object();
    json_object_set_new(r, "backend", json_string(b->name));
    json_object_set_new(r, "op", json_string(op));
    json_object_set_new(r, "shape", json_string(s->name));
    json_object_set_new(r, "verdict", json_string("PASS"));
    json_object_set_new(r, "threads", json_integer(threads));
    json_object_set_new(r, "rounds", json_integer(rounds));
    return r;
}

// --scaling N: updates on 1 and N threads, alternating round by round so
// both see the same machine, and the control sgemm alternating the same way:
// on a shared machine the capacity of N threads drifts, and the control says
// what N threads could give in that window. Returns 0 PASS, 1 FAIL.
static int scaling_one(const clef_backend *b, const clef_bench_shape *s,
                       const clef_bench_opts *o, json_t *rows)
{
    enum { MAXR = 256 };
    const int nt[2] = {1, o->scaling}, saved = omp_get_max_threads();
    train_setup t;
    control_gemm g = {0};
    char why[1100], what[64];
    snprintf(what, sizeof what, "1 vs %d threads", o->scaling);
    if (setup_make(b, s, o, o->bf16, &t, why, sizeof why) != 0) {
        measured_fail(b, "train_scaling", s, what, why);
        return 1;
    }
    int failed = 1, rounds = 0;
    double upd[2][MAXR], ctl[2][MAXR], rtt[MAXR];
    if (control_make(&t, &g) != 0) {
        snprintf(why, sizeof why, "out of memory");
        goto out;
    }
    for (int k = 0; k < 2; k++) { // warm-up: first-touch, packing buffers
        omp_set_num_threads(nt[k]);
        (void)setup_step(&t, b);
        (void)control_time(&g);
    }
    double t0 = clef_now_s();
    while (rounds < MAXR && (rounds < 3 || clef_now_s() - t0 < o->budget_s)) {
        for (int k = 0; k < 2; k++) {
            omp_set_num_threads(nt[k]);
            double u0 = clef_now_s(), l = setup_step(&t, b);
            upd[k][rounds] = clef_now_s() - u0;
            ctl[k][rounds] = control_time(&g);
            if (!isfinite(l)) {
                snprintf(why, sizeof why, "loss of a timed update is %g", l);
                goto out;
            }
        }
        rtt[rounds] = clef_bench_round_trip_ns();
        rounds++;
    }
    double u1 = bench_median(upd[0], rounds), un = bench_median(upd[1], rounds);
    double c1 = bench_median(ctl[0], rounds), cn = bench_median(ctl[1], rounds);
    int slow = 0;
    for (int r = 0; r < rounds; r++)
        slow += rtt[r] > 150.0; // NaN (one CPU) counts as not slow
    const double rt = bench_median(rtt, rounds);
    // FLOP rates (core/flops.c's count) against the sgemm's, same threads
    const double fl = clef_update_flops(&t.cfg, t.batch, t.B,
                                        getenv("CLEF_MEMORY_ATTENTION"));
    const double cf = 2.0 * g.M * g.N * g.K;
    const double gf1 = fl / u1 * 1e-9, gfn = fl / un * 1e-9;
    const double cg1 = cf / c1 * 1e-9, cgn = cf / cn * 1e-9;
    printf("%-7s %-16s %-10s %-36s PASS       %.2fx (%.4g -> %.4g updates/s, "
           "medians of %d alternating rounds); oneDNN sgemm %dx%dx%d in the "
           "same window %.2fx; cross-core round trip %.0f ns (%d of %d rounds "
           "over 150 ns); update FLOP rate %.0f%% of that sgemm's on 1 "
           "thread (%.4g of %.4g GFLOP/s), %.0f%% on %d (%.4g of %.4g)\n",
           b->name, "train_scaling", s->name, what, u1 / un, 1.0 / u1, 1.0 / un,
           rounds, g.M, g.N, g.K, c1 / cn, rt, slow, rounds, 100.0 * gf1 / cg1,
           gf1, cg1, 100.0 * gfn / cgn, o->scaling, gfn, cgn);
    fflush(stdout);
    if (rows) {
        json_t *r = measured_row(b, "train_scaling", s, o->scaling, rounds);
        json_object_set_new(r, "updates_per_s_1", json_real(1.0 / u1));
        json_object_set_new(r, "updates_per_s_n", json_real(1.0 / un));
        json_object_set_new(r, "speedup", json_real(u1 / un));
        json_object_set_new(r, "control_speedup", json_real(c1 / cn));
        json_object_set_new(r, "round_trip_ns", json_real(rt));
        json_object_set_new(r, "slow_round_trip_rounds", json_integer(slow));
        json_object_set_new(r, "gflops_1", json_real(gf1));
        json_object_set_new(r, "gflops_n", json_real(gfn));
        json_object_set_new(r, "control_gflops_1", json_real(cg1));
        json_object_set_new(r, "control_gflops_n", json_real(cgn));
        json_array_append_new(rows, r);
    }
    failed = 0;
out:
    if (failed)
        measured_fail(b, "train_scaling", s, what, why);
    omp_set_num_threads(saved);
    control_free(&g);
    setup_free(&t);
    return failed;
}

// --precision fp32,bf16: the same head (same initial weights) and records
// in fp32 and in bf16, one update of each per round, alternating so both
// see the same machine; medians of the rounds. Returns 0 PASS, 1 FAIL.
static int precision_one(const clef_backend *b, const clef_bench_shape *s,
                         const clef_bench_opts *o, json_t *rows)
{
    enum { MAXR = 256 };
    train_setup t[2];
    char why[1100];
    const char *what = "bf16 vs fp32";
    int made = 0, failed = 1, rounds = 0;
    double upd[2][MAXR];
    for (; made < 2; made++)
        if (setup_make(b, s, o, made, &t[made], why, sizeof why) != 0)
            goto out;
    double first[2]; // warm-up (first-touch, packing buffers): the first
    for (int k = 0; k < 2; k++) // loss of the same head in each precision
        first[k] = setup_step(&t[k], b);
    const double t0 = clef_now_s();
    while (rounds < MAXR && (rounds < 3 || clef_now_s() - t0 < o->budget_s)) {
        for (int k = 0; k < 2; k++) {
            const double u0 = clef_now_s(), l = setup_step(&t[k], b);
            upd[k][rounds] = clef_now_s() - u0;
            if (!isfinite(l)) {
                snprintf(why, sizeof why, "loss of a timed %s update is %g",
                         k ? "bf16" : "fp32", l);
                goto out;
            }
        }
        rounds++;
    }
    const double u32 = bench_median(upd[0], rounds),
                 u16 = bench_median(upd[1], rounds);
    const double fl = clef_update_flops(&t[0].cfg, t[0].batch, t[0].B,
                                        getenv("CLEF_MEMORY_ATTENTION"));
    printf("%-7s %-16s %-10s %-36s PASS       %.2fx (fp32 %.4g -> bf16 %.4g "
           "updates/s, %.4g -> %.4g GFLOP/s, medians of %d alternating "
           "rounds, %d thread(s))\n",
           b->name, "train_precision", s->name, what, u32 / u16, 1.0 / u32,
           1.0 / u16, fl / u32 * 1e-9, fl / u16 * 1e-9, rounds,
           omp_get_max_threads());
    fflush(stdout);
    if (rows) {
        json_t *r = measured_row(b, "train_precision", s, omp_get_max_threads(),
                                 rounds);
        json_object_set_new(r, "updates_per_s_fp32", json_real(1.0 / u32));
        json_object_set_new(r, "updates_per_s_bf16", json_real(1.0 / u16));
        json_object_set_new(r, "speedup", json_real(u32 / u16));
        json_object_set_new(r, "first_loss_fp32", json_real(first[0]));
        json_object_set_new(r, "first_loss_bf16", json_real(first[1]));
        json_array_append_new(rows, r);
    }
    failed = 0;
out:
    if (failed)
        measured_fail(b, "train_precision", s, what, why);
    for (int k = 0; k < made; k++)
        setup_free(&t[k]);
    return failed;
}

void clef_bench_train(const clef_backend *const *backends, int nbackends,
                      const clef_bench_shape *const *shapes, int nshapes,
                      const clef_bench_opts *o, json_t *rows, int *passed,
                      int *failed, int *skipped)
{
    for (int si = 0; si < nshapes; si++) {
        const clef_bench_shape *s = shapes[si];
        if (s->w % s->h != 0) // not a head geometry
            continue;
        for (int bi = 0; bi < nbackends; bi++) {
            const clef_backend *b = backends[bi];
            const char *why = clef_backend_unavailable(b);
            if (why) {
                row(b, s, o->bf16, "SKIP", why, 0, 0, 0, 0, rows);
                (*skipped)++;
                continue;
            }
            if ((o->compare ? precision_one(b, s, o, rows)
                            : train_one(b, s, o, rows)) != 0)
                (*failed)++;
            else
                (*passed)++;
            if (!o->scaling)
                continue;
            if (scaling_one(b, s, o, rows) != 0)
                (*failed)++;
            else
                (*passed)++;
        }
    }
}

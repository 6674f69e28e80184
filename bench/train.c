// clef-bench --train: whole training updates per backend and geometry.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "head.h"

#define TRAIN_V 16 // lexical rows of the synthetic record
#define TRAIN_R 2  // routing layers (HEAD.md §1: every released size)
#define TRAIN_L 4  // field layers

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t next(uint64_t *s) // splitmix64
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)(next(s) >> 40) * (1.0f / 16777216.0f);
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
    int O = op->questions || op->options
                ? Q * (op->options ? op->options : 2)
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
        r->ids[t] = (int)(next(&st) % TRAIN_V);
    for (int q = 0; q <= Q; q++)
        r->opt_off[q] = (int)((long)q * O / Q);
    for (int q = 0; q < Q; q++) {
        int n = r->opt_off[q + 1] - r->opt_off[q];
        r->qtype[q] = q % 3 == 0 ? CLEF_QTYPE_NOUL
                      : q % 3 == 1 ? CLEF_QTYPE_CHOICE
                                   : CLEF_QTYPE_SCORE;
        int a = (int)(next(&st) % T), b = (int)(next(&st) % T);
        r->qspan[2 * q] = a < b ? a : b;
        r->qspan[2 * q + 1] = (a < b ? b : a) + 1;
        r->has_target[q] = 1;
        r->label[q] = (int)(next(&st) % n);
        r->target[r->opt_off[q] + r->label[q]] = 1.0f;
    }
    for (int o = 0; o < O; o++) {
        int a = (int)(next(&st) % T), b = (int)(next(&st) % T);
        r->ospan[2 * o] = a < b ? a : b;
        r->ospan[2 * o + 1] = (a < b ? b : a) + 1;
    }
    return 0;
}

static void row(const clef_backend *b, const clef_bench_shape *s,
                const char *verdict, const char *why, double ups, double gf,
                int reps, double loss, json_t *rows)
{
    if (why)
        printf("%-7s %-16s %-10s %-36s %-10s (%s)\n", b->name, "train_step",
               s->name, "-", verdict, why);
    else
        printf("%-7s %-16s %-10s %-36s %-10s %10.4g updates/s %10.3g GFLOP/s "
               "(%d updates, loss %.6g)\n",
               b->name, "train_step", s->name, "clef_train_step", verdict, ups,
               gf, reps, loss);
    fflush(stdout);
    if (!rows)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "backend", json_string(b->name));
    json_object_set_new(o, "op", json_string("train_step"));
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

// One backend at one geometry. Returns 0 PASS, 1 FAIL.
static int train_one(const clef_backend *b, const clef_bench_shape *s,
                     const clef_bench_opts *o, json_t *rows)
{
    clef_config cfg = {.d = s->d, .w = s->w, .h = s->h, .f = s->f,
                       .R = TRAIN_R, .L = TRAIN_L};
    enum { BMAX = 1024 };
    const int B = o->batch < 1 ? 1 : (o->batch > BMAX ? BMAX : o->batch);
    clef_head hd;
    clef_record *rec = calloc(B, sizeof(*rec));
    const clef_record **batch = calloc(B, sizeof(*batch));
    float **E = calloc(B, sizeof(*E));
    clef_ws *ws = NULL;
    clef_err err = {0};
    int failed = 1;
    char why[1100];
    if (!rec || !batch || !E) {
        free(rec);
        free(batch);
        free(E);
        row(b, s, "FAIL", "out of memory", 0, 0, 0, 0, rows);
        return 1;
    }
    if (clef_head_alloc(&hd, &cfg, &err) != 0) {
        snprintf(why, sizeof why, "head: %s", err.msg);
        row(b, s, "FAIL", why, 0, 0, 0, 0, rows);
        free(rec);
        free(batch);
        free(E);
        return 1;
    }
    clef_head_init_random(&hd, o->seed);
    // B records of the shape (different draws), one packed batch per update
    for (int i = 0; i < B; i++) {
        batch[i] = &rec[i];
        if (make_record(s, o, (o->seed ^ 0x5eed) + 7919 * (uint64_t)i, &rec[i],
                        &E[i]) != 0 ||
            clef_record_prepare(b->table, &rec[i], E[i], TRAIN_V, &err) != 0) {
            snprintf(why, sizeof why, "setup: %s",
                     err.msg[0] ? err.msg : "out of memory");
            row(b, s, "FAIL", why, 0, 0, 0, 0, rows);
            goto cleanup;
        }
    }
    clef_ws_limits lim;
    clef_ws_limits_for(rec, B, B, &lim);
    if (!(ws = clef_ws_create_limits(&cfg, &lim))) {
        row(b, s, "FAIL", "setup: out of memory", 0, 0, 0, 0, rows);
        goto cleanup;
    }
    clef_train_opts to;
    clef_train_opts_default(&to);

    // Warm-up update (also the first loss), then updates until the budget.
    double loss = clef_train_step(b->table, &hd, batch, B, ws, &to);
    if (!isfinite(loss)) {
        snprintf(why, sizeof why, "loss of the first update is %g", loss);
        row(b, s, "FAIL", why, 0, 0, 0, 0, rows);
        goto cleanup;
    }
    int reps = 0;
    double t0 = now_s(), spent = 0.0;
    do {
        double l = clef_train_step(b->table, &hd, batch, B, ws, &to);
        reps++;
        spent = now_s() - t0;
        if (!isfinite(l)) {
            snprintf(why, sizeof why, "loss of update %d is %g", reps + 1, l);
            row(b, s, "FAIL", why, 0, 0, 0, 0, rows);
            goto cleanup;
        }
    } while (!(spent >= o->budget_s && (reps >= 3 || spent / reps > o->budget_s)));
    double per = spent / reps;
    // GEMM and attention work of the update (core/flops.c)
    double gf = clef_update_flops(&cfg, batch, B) / per * 1e-9;
    row(b, s, "PASS", NULL, 1.0 / per, gf, reps, loss, rows);
    failed = 0;
cleanup:
    clef_ws_free(ws);
    for (int i = 0; i < B; i++) {
        clef_record_free(&rec[i]);
        free(E[i]);
    }
    free(rec);
    free(batch);
    free(E);
    clef_head_free(&hd);
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
                row(b, s, "SKIP", why, 0, 0, 0, 0, rows);
                (*skipped)++;
                continue;
            }
            if (train_one(b, s, o, rows) != 0)
                (*failed)++;
            else
                (*passed)++;
        }
    }
}

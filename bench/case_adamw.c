// AdamW on the head's largest tensor: max(w·d, 4w², f·w) parameters, at
// step 3 with weight decay on.
#include "case.h"

#include <math.h>
#include <stdio.h>

typedef struct bench_adamw {
    int n;
    clef_adamw_args args;
    float *theta, *g, *m, *v;
} bench_adamw;

static int adamw_setup(clef_bench_case *c, void *st, bench_rng *rng)
{
    bench_adamw *aw = st;
    const clef_bench_shape *s = c->shape;
    long n = (long)s->w * s->d;
    if ((long)4 * s->w * s->w > n)
        n = (long)4 * s->w * s->w;
    if ((long)s->f * s->w > n)
        n = (long)s->f * s->w;
    aw->n = (int)n;
    snprintf(c->dims, sizeof c->dims, "n=%ld", n);
    BENCH_ADD(c, aw, theta, BENCH_ACC, 1, (int)n, (int)n);
    BENCH_ADD(c, aw, g, BENCH_IN, 1, (int)n, (int)n);
    BENCH_ADD(c, aw, m, BENCH_ACC, 1, (int)n, (int)n);
    BENCH_ADD(c, aw, v, BENCH_ACC, 1, (int)n, (int)n);
    bench_fill_uniform(theta, rng, -1, 1);
    bench_fill_uniform(g, rng, -1, 1);
    bench_fill_uniform(m, rng, -0.1f, 0.1f);
    bench_fill_uniform(v, rng, 0, 0.01f); // v >= 0
    double lr = 1e-3, b1 = 0.9, b2 = 0.999;
    int t = 3;
    aw->args = (clef_adamw_args){
        .lr = (float)lr,
        .beta1 = (float)b1,
        .beta2 = (float)b2,
        .eps = 1e-8f,
        .decay = 0.01f,
        .step_size = (float)(lr / (1.0 - pow(b1, t))),
        .bc2_sqrt = (float)sqrt(1.0 - pow(b2, t)),
    };
    c->tol = &bench_tol_adamw;
    return 0;
}

static void adamw_call(const clef_kernels *k, void *st)
{
    bench_adamw *aw = st;
    k->adamw((size_t)aw->n, aw->theta, aw->g, aw->m, aw->v, &aw->args);
}

const bench_case_def bench_case_adamw = {sizeof(bench_adamw), adamw_setup,
                                         adamw_call};

// clef_adamw_step against the definition: one kernel call per tensor with
// that tensor's decay (HEAD.md §8, scope weights and all). The step groups
// consecutive tensors of the same decay into one call and splits large runs
// into chunks across threads, which must not change a single bit.
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "head.h"
#include "scheduler/registry.h"
#include "util.h"

static void reference_step(const clef_kernels *k, clef_head *hd,
                           const clef_train_opts *o)
{
    hd->step++;
    const double t = (double)hd->step;
    clef_adamw_args a = {
        .lr = (float)o->lr,
        .beta1 = (float)o->beta1,
        .beta2 = (float)o->beta2,
        .eps = (float)o->eps,
        .step_size = (float)(o->lr / (1.0 - pow(o->beta1, t))),
        .bc2_sqrt = (float)sqrt(1.0 - pow(o->beta2, t)),
    };
    for (int i = 0; i < hd->ntensors; i++) {
        const clef_tensor_info *ti = &hd->tensors[i];
        int decays = o->decay_all || ti->decays_in_weights_scope;
        a.decay = decays ? (float)o->weight_decay : 0.f;
        k->adamw(ti->numel, hd->params + ti->offset, hd->grads + ti->offset,
                 hd->m + ti->offset, hd->v + ti->offset, &a);
    }
}

static void check(const char *backend, const clef_config *cfg, int decay_all)
{
    const clef_backend *be = clef_backend_find(backend);
    cr_assert_not_null(be);
    if (clef_backend_unavailable(be))
        cr_skip_test("%s: %s", backend, clef_backend_unavailable(be));
    clef_head a, b;
    clef_err err = {0};
    cr_assert_eq(clef_head_alloc(&a, cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_head_alloc(&b, cfg, &err), 0, "%s", err.msg);
    clef_head_init_random(&a, 5);
    clef_head_init_random(&b, 5);
    uint64_t rng = 99;
    clef_train_opts o;
    clef_train_opts_default(&o);
    o.lr = 3e-3;
    o.weight_decay = 0.05;
    o.decay_all = decay_all;
    for (int s = 0; s < 3; s++) {
        clef_test_fill_normal(a.grads, a.nparams, 0.f, 0.1f, &rng);
        memcpy(b.grads, a.grads, sizeof(float) * a.nparams);
        clef_adamw_step(be->table, &a, &o);
        reference_step(be->table, &b, &o);
        cr_assert_eq(memcmp(a.params, b.params, sizeof(float) * a.nparams), 0,
                     "%s, step %d: parameters differ from per-tensor calls",
                     backend, s);
        cr_assert_eq(memcmp(a.m, b.m, sizeof(float) * 2 * a.nparams), 0,
                     "%s, step %d: moments differ", backend, s);
    }
    clef_head_free(&a);
    clef_head_free(&b);
}

static const clef_config tiny = {
    .d = 8, .w = 8, .h = 2, .f = 16, .R = 2, .L = 4};
// runs of over 2^17 parameters: chunked across threads
static const clef_config large = {
    .d = 256, .w = 192, .h = 4, .f = 384, .R = 1, .L = 2};

Test(adamw_step, equals_per_tensor_calls_scalar)
{
    check("scalar", &tiny, 0);
    check("scalar", &tiny, 1);
    check("scalar", &large, 0);
}

Test(adamw_step, equals_per_tensor_calls_avx512)
{
    check("avx512", &tiny, 0);
    check("avx512", &tiny, 1);
    check("avx512", &large, 0);
}

Test(adamw_step, equals_per_tensor_calls_avx2)
{
    check("avx2", &tiny, 0);
    check("avx2", &large, 0);
}

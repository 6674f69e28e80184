// Packed batches and threads: a batch computed packed agrees with the same
// records computed one by one, a batch too large for its workspace is split
// into packed sub-batches with the same update, and with a fixed backend the
// weights after training are byte-identical for any thread count.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "head.h"
#include "isa_common.h"
#include "mm.h"
#include "ref_head.h"
#include "scheduler/registry.h"
#include "util.h"

#define NREC 5
// Records of different geometry: T, and per question a type and option count.
static const int rec_T[NREC] = {9, 4, 13, 1, 7};
static const int rec_Q[NREC] = {3, 1, 2, 2, 4};
static const int rec_types[NREC][4] = {
    {0, 2, 1}, {1}, {2, 1}, {0, 1}, {1, 1, 2, 0}};
static const int rec_nopt[NREC][4] = {
    {2, 3, 4}, {1}, {5, 2}, {2, 3}, {2, 1, 3, 2}};

typedef clef_test_batch fixture;

// The small head, or (big) one large enough that every threaded path really
// splits: memory GEMMs over 4 MFLOP, w·d and T·d over 2^16 (memory backward,
// X = x̂γ + β), AdamW runs over 2^17 parameters, and d wide enough that the
// memory backward's D runs in blocks of different widths (fixture_ws).
static const int big_T[NREC] = {300, 257, 64, 17, 200};

static void fixture_init_size(fixture *f, uint64_t seed, int big)
{
    const clef_config cfg =
        big ? (clef_config){.d = 1300,
                            .w = 256,
                            .h = 4,
                            .f = 200,
                            .R = 1,
                            .L = 1}
            : (clef_config){.d = 6, .w = 8, .h = 2, .f = 12, .R = 2, .L = 2};
    const clef_test_batch_spec spec = {.n = NREC,
                                       .V = 11,
                                       .T = big ? big_T : rec_T,
                                       .Q = rec_Q,
                                       .types = rec_types,
                                       .nopt = rec_nopt,
                                       .rng_mul = 7919,
                                       .rng_add = 1};
    clef_test_batch_init(f, &cfg, seed, &spec);
}

static void fixture_init(fixture *f, uint64_t seed)
{
    fixture_init_size(f, seed, 0);
}

static void fixture_free(fixture *f)
{
    clef_test_batch_free(f);
}

// A workspace for batches of up to B of f's records, memory attentions in
// `mode` ("auto", "project" or "absorb"), the memory backward's D in as
// many blocks as d allows (4 for the big head: core/backward.c, d_chunks).
static clef_ws *fixture_ws(const fixture *f, int B, const char *mode)
{
    clef_ws_limits lim;
    clef_ws_limits_for(f->recs, NREC, B, &lim);
    clef_ws *ws = clef_ws_create_limits(&f->cfg, &lim);
    cr_assert_not_null(ws);
    cr_assert_eq(clef_ws_set_memory_attention(ws, mode), 0);
    clef_ws_set_d_block_flops(ws, 1.0);
    return ws;
}

// |a − b| ≤ 1e-5 · max(|b|, scale) element by element.
static void expect_close_rel(const char *what, const float *a, const float *b,
                             size_t n, double scale)
{
    for (size_t i = 0; i < n; i++) {
        double tol = 1e-5 * fmax(fabs(b[i]), scale);
        cr_expect(fabs((double)a[i] - b[i]) <= tol,
                  "%s[%zu]: packed %.9g, one by one %.9g", what, i, a[i], b[i]);
    }
}

static void packed_logits_equal_record_by_record(const char *mode)
{
    fixture f;
    fixture_init(&f, 3);
    clef_ws_limits lim;
    clef_ws_limits_for(f.recs, NREC, NREC, &lim);
    clef_ws *big = clef_ws_create_limits(&f.cfg, &lim);
    clef_ws_limits_for(f.recs, NREC, 1, &lim);
    clef_ws *one = clef_ws_create_limits(&f.cfg, &lim);
    cr_assert(big && one);
    cr_assert_eq(clef_ws_set_memory_attention(big, mode), 0);
    cr_assert_eq(clef_ws_set_memory_attention(one, mode), 0);
    int O = 0;
    for (int b = 0; b < NREC; b++)
        O += f.recs[b].O;
    float *zb = clef_test_falloc(O), *z1 = clef_test_falloc(O);
    clef_batch_forward(&clef_scalar_kernels, &f.hd, f.ptr, NREC, big, zb);
    for (int b = 0, o = 0; b < NREC; o += f.recs[b].O, b++)
        clef_head_forward(&clef_scalar_kernels, &f.hd, f.ptr[b], one, z1 + o);
    expect_close_rel("logit", zb, z1, O, 1e-3);
    free(zb);
    free(z1);
    clef_ws_free(big);
    clef_ws_free(one);
    fixture_free(&f);
}

Test(batch, packed_logits_equal_record_by_record)
{
    packed_logits_equal_record_by_record("project");
}

Test(batch, packed_logits_equal_record_by_record_absorbed)
{
    packed_logits_equal_record_by_record("absorb");
}

// The same update three ways: one packed batch of all records, packed
// sub-batches (a workspace that fits fewer records), and a workspace that
// fits one record at a time. Gradients and weights agree within 1e-5.
// (Each memory-attention form on both sides: in "auto" a whole batch and its
// sub-batches may pick different forms, whose rounding differs by more.)
static void packed_update_equals_sub_batches(const char *mode)
{
    fixture a, b;
    fixture_init(&a, 5);
    fixture_init(&b, 5);
    clef_train_opts o = clef_test_train_opts();
    clef_ws_limits lim;
    clef_ws_limits_for(a.recs, NREC, NREC, &lim);
    clef_ws *big = clef_ws_create_limits(&a.cfg, &lim);
    clef_ws_limits_for(b.recs, NREC, 1, &lim);
    clef_ws *one = clef_ws_create_limits(&b.cfg, &lim);
    cr_assert(big && one);
    cr_assert_eq(clef_ws_set_memory_attention(big, mode), 0);
    cr_assert_eq(clef_ws_set_memory_attention(one, mode), 0);
    double la =
        clef_train_step(&clef_scalar_kernels, &a.hd, a.ptr, NREC, big, &o);
    double lb =
        clef_train_step(&clef_scalar_kernels, &b.hd, b.ptr, NREC, one, &o);
    cr_expect(fabs(la - lb) <= 1e-5 * fabs(lb), "loss %.9g vs %.9g", la, lb);
    // Packed and sequential sums add the records' contributions in another
    // order: the difference is a few FLT_EPSILON of the magnitudes summed,
    // which are of the order of the largest gradient, so small gradients are
    // compared against 1e-2 of it.
    double gscale = clef_test_max_abs(b.hd.grads, b.hd.nparams);
    expect_close_rel("grad", a.hd.grads, b.hd.grads, a.hd.nparams,
                     1e-2 * gscale);
    expect_close_rel("param", a.hd.params, b.hd.params, a.hd.nparams, 1e-3);
    clef_ws_free(big);
    clef_ws_free(one);
    fixture_free(&a);
    fixture_free(&b);
}

Test(batch, packed_update_equals_sub_batches)
{
    packed_update_equals_sub_batches("project");
}

Test(batch, packed_update_equals_sub_batches_absorbed)
{
    packed_update_equals_sub_batches("absorb");
}

// The batch loss is the mean over all of its questions: a batch of two
// records is not the mean of the two records' losses when their question
// counts differ.
Test(batch, loss_is_mean_over_all_questions_of_the_batch)
{
    fixture f;
    fixture_init(&f, 9);
    clef_train_opts o = clef_test_train_opts();
    o.smoothing = o.brier = o.ordinal = 0; // plain cross-entropy
    clef_ws_limits lim;
    clef_ws_limits_for(f.recs, NREC, 2, &lim);
    clef_ws *ws = clef_ws_create_limits(&f.cfg, &lim);
    const clef_record *pair[2] = {f.ptr[0], f.ptr[2]}; // 3 and 2 questions
    float z[64], p[64], dz[64];
    clef_batch_forward(&clef_scalar_kernels, &f.hd, pair, 2, ws, z);
    double loss = clef_batch_loss(&clef_scalar_kernels, ws, z, &o, p, dz);
    double want = 0;
    int nq = 0, off = 0;
    for (int r = 0; r < 2; r++) {
        for (int q = 0; q < pair[r]->Q; q++, nq++) {
            for (int i = pair[r]->opt_off[q]; i < pair[r]->opt_off[q + 1]; i++)
                want -= pair[r]->target[i] * log(p[off + i]);
        }
        off += pair[r]->O;
    }
    want /= nq;
    cr_expect(fabs(loss - want) <= 64 * FLT_EPSILON * fabs(want),
              "batch loss %.9g, mean over %d questions %.9g", loss, nq, want);
    clef_ws_free(ws);
    fixture_free(&f);
}

// Trains `steps` updates of batch 2 with n threads; returns the weights.
static float *train_with_threads(const clef_kernels *k, int threads, int steps,
                                 int big, const char *mode)
{
    fixture f;
    fixture_init_size(&f, 17, big);
    clef_train_opts o = clef_test_train_opts();
    clef_ws_limits lim;
    clef_ws_limits_for(f.recs, NREC, 2, &lim);
    clef_ws *ws = clef_ws_create_limits(&f.cfg, &lim);
    cr_assert_eq(clef_ws_set_memory_attention(ws, mode), 0);
    omp_set_num_threads(threads);
    for (int s = 0; s < steps; s++) {
        int b = (2 * s) % (NREC - 1);
        clef_train_step(k, &f.hd, f.ptr + b, 2, ws, &o);
    }
    float *w = clef_test_falloc(f.hd.nparams);
    memcpy(w, f.hd.params, sizeof(float) * f.hd.nparams);
    clef_ws_free(ws);
    fixture_free(&f);
    return w;
}

static void check_thread_invariance_mode(const char *backend, const char *mode)
{
    const clef_kernels *kb = isa_table_or_skip(backend); // any backend
    const int counts[] = {1, 2, 3, 8}; // 8 > the cores of a 2-core machine
    const int before = omp_get_max_threads();
    // the scalar reference is single-threaded: the small head is enough
    const int big = strcmp(backend, "scalar") != 0;
    float *ref = train_with_threads(kb, 1, 6, big, mode);
    fixture f;
    fixture_init_size(&f, 17, big);
    size_t n = f.hd.nparams;
    fixture_free(&f);
    for (size_t c = 1; c < sizeof(counts) / sizeof(counts[0]); c++) {
        float *w = train_with_threads(kb, counts[c], 6, big, mode);
        cr_expect_eq(memcmp(ref, w, sizeof(float) * n), 0,
                     "%s (%s): weights after 6 updates differ between 1 and %d "
                     "threads",
                     backend, mode, counts[c]);
        free(w);
    }
    free(ref);
    omp_set_num_threads(before);
}

// both forms of the memory attentions (core/memattn.h)
static void check_thread_invariance(const char *backend)
{
    check_thread_invariance_mode(backend, "project");
    check_thread_invariance_mode(backend, "absorb");
}

Test(batch, weights_identical_for_any_thread_count_scalar)
{
    check_thread_invariance("scalar");
}

Test(batch, weights_identical_for_any_thread_count_avx2)
{
    check_thread_invariance("avx2");
}

Test(batch, weights_identical_for_any_thread_count_avx512)
{
    check_thread_invariance("avx512");
}

Test(batch, weights_identical_for_any_thread_count_onednn)
{
    check_thread_invariance("onednn");
}

Test(batch, weights_identical_for_any_thread_count_blis)
{
    check_thread_invariance("blis");
}

Test(batch, weights_identical_for_any_thread_count_auto)
{
    check_thread_invariance("auto");
}

// core/flops.c counts the work of the form that runs: the projected and the
// absorbed memory attentions differ by exactly their products' counts
// (forward + backward = 3 × forward), per routing layer (O queries) and per
// field layer (Q queries).
Test(batch, update_flops_follow_the_memory_attention_form)
{
    fixture f;
    fixture_init(&f, 9);
    const clef_record *r = f.ptr[0];
    const double T = r->T, Q = r->Q, O = r->O, w = f.cfg.w, h = f.cfg.h;
    double proj = 0, abs_ = 0;
    const double nq[2] = {O, Q}, layers[2] = {f.cfg.R, f.cfg.L};
    for (int i = 0; i < 2; i++) {
        proj += layers[i] * 3 * (2 * T * 2 * w * w + 2 * nq[i] * T * w * 2);
        abs_ +=
            layers[i] * 3 * (2 * nq[i] * w * w * 2 + 2 * h * nq[i] * T * w * 2);
    }
    double fp = clef_update_flops(&f.cfg, f.ptr, 1, "project");
    double fa = clef_update_flops(&f.cfg, f.ptr, 1, "absorb");
    cr_expect(fabs((fp - fa) - (proj - abs_)) <= 1e-9 * fp,
              "project %.6g - absorb %.6g = %.6g, expected %.6g", fp, fa,
              fp - fa, proj - abs_);
    fixture_free(&f);
}

// Gradient clipping as torch.nn.utils.clip_grad_norm_: the global norm in
// double (fixed chunks: the same bits on 1 and 2 threads) matches a plain
// double sum, and a clipped update equals grads × max / (‖g‖ + 1e-6) fed to
// the same AdamW step.
Test(batch, gradient_clipping_follows_clip_grad_norm)
{
    fixture a, b;
    fixture_init_size(&a, 13, 1);
    fixture_init_size(&b, 13, 1);
    clef_ws_limits lim;
    clef_ws_limits_for(a.recs, NREC, 2, &lim);
    clef_ws *ws = clef_ws_create_limits(&a.cfg, &lim);
    cr_assert_not_null(ws);
    clef_train_opts o = clef_test_train_opts();
    const clef_kernels *k = &clef_scalar_kernels;

    // b: the gradients by hand, their norm, then clip and AdamW by hand
    const int O = a.recs[0].O + a.recs[1].O;
    float *z = clef_test_falloc(O), *p = clef_test_falloc(O),
          *dz = clef_test_falloc(O);
    memset(b.hd.grads, 0, sizeof(float) * b.hd.nparams);
    clef_batch_forward(k, &b.hd, b.ptr, 2, ws, z);
    clef_batch_loss(k, ws, z, &o, p, dz);
    clef_batch_backward(k, &b.hd, ws, dz);
    double ref = 0.0;
    for (size_t i = 0; i < b.hd.nparams; i++)
        ref += (double)b.hd.grads[i] * b.hd.grads[i];
    ref = sqrt(ref);
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    double n1 = clef_grad_norm(&b.hd);
    omp_set_num_threads(2);
    double n2 = clef_grad_norm(&b.hd);
    omp_set_num_threads(before);
    cr_expect(n1 == n2, "norm %.17g on 1 thread, %.17g on 2", n1, n2);
    cr_expect(fabs(n1 - ref) <= 1e-12 * ref, "norm %.17g, plain sum %.17g", n1,
              ref);
    cr_assert(b.hd.nparams > 3 * ((size_t)1 << 16), "one chunk only: %zu",
              b.hd.nparams);

    o.max_grad_norm = 0.25 * n1; // clips: coef ≈ 0.25
    const float c = (float)(o.max_grad_norm / (n1 + 1e-6));
    for (size_t i = 0; i < b.hd.nparams; i++)
        b.hd.grads[i] *= c;
    clef_adamw_step(k, &b.hd, &o);

    clef_train_step(k, &a.hd, a.ptr, 2, ws, &o);
    cr_expect_eq(memcmp(a.hd.params, b.hd.params, sizeof(float) * a.hd.nparams),
                 0, "clipped update differs from grads x %.9g + AdamW", c);
    free(z), free(p), free(dz);
    clef_ws_free(ws);
    fixture_free(&a);
    fixture_free(&b);
}

// clef_train_step clears only the small gradients and lets the update's first
// backward pass write the weight gradients its GEMMs own: with the gradient
// buffer full of NaN beforehand, a step must still equal zeroed gradients,
// plain accumulation and AdamW, bit for bit (both memory-attention forms;
// one packed pass, and sub-batches that add after the first).
static void first_pass_writes_every_owned_gradient(const char *mode, int B)
{
    fixture a, b;
    fixture_init(&a, 21);
    fixture_init(&b, 21);
    clef_ws_limits lim;
    clef_ws_limits_for(a.recs, NREC, B, &lim);
    clef_ws *wa = clef_ws_create_limits(&a.cfg, &lim);
    clef_ws_limits_for(b.recs, NREC, NREC, &lim);
    clef_ws *wb = clef_ws_create_limits(&b.cfg, &lim);
    cr_assert(wa && wb);
    cr_assert_eq(clef_ws_set_memory_attention(wa, mode), 0);
    cr_assert_eq(clef_ws_set_memory_attention(wb, mode), 0);
    clef_train_opts o = clef_test_train_opts();
    const clef_kernels *k = &clef_scalar_kernels;

    clef_test_fill_const(a.hd.grads, a.hd.nparams, NAN);
    clef_train_step(k, &a.hd, a.ptr, NREC, wa, &o);

    // the plain way, one record at a time into zeroed gradients
    int n_q, n_score, O = 0;
    clef_batch_counts(b.ptr, NREC, &n_q, &n_score);
    for (int r = 0; r < NREC; r++)
        O = O > b.recs[r].O ? O : b.recs[r].O;
    float *z = clef_test_falloc(O), *p = clef_test_falloc(O),
          *dz = clef_test_falloc(O);
    memset(b.hd.grads, 0, sizeof(float) * b.hd.nparams);
    for (int r = 0; r < NREC; r++) {
        clef_batch_forward(k, &b.hd, b.ptr + r, 1, wb, z);
        clef_record_loss(k, b.ptr[r], z, &o, n_q, n_score, p, dz);
        clef_batch_backward(k, &b.hd, wb, dz);
    }
    clef_adamw_step(k, &b.hd, &o);
    for (size_t i = 0; i < a.hd.nparams; i++)
        cr_assert(isfinite(a.hd.params[i]),
                  "%s B=%d: param %zu is %g: a "
                  "gradient the first pass owns was not written",
                  mode, B, i, a.hd.params[i]);
    expect_close_rel("param", a.hd.params, b.hd.params, a.hd.nparams, 1e-3);
    free(z), free(p), free(dz);
    clef_ws_free(wa);
    clef_ws_free(wb);
    fixture_free(&a);
    fixture_free(&b);
}

Test(batch, first_pass_writes_every_owned_gradient)
{
    first_pass_writes_every_owned_gradient("project", NREC);
    first_pass_writes_every_owned_gradient("project", 2);
    first_pass_writes_every_owned_gradient("absorb", NREC);
    first_pass_writes_every_owned_gradient("absorb", 2);
}

// Without clipping, on more than one thread, clef_train_step runs AdamW of
// every tensor but W_m and hidden_norm beside the last pass's memory
// backward (core/train.c). AdamW is elementwise, so three updates must leave
// parameters and moments bit for bit as AdamW after the pass does (forced by
// a clipping threshold no gradient reaches), in both forms, with one packed
// pass and with sub-batches. (The thread-count tests above compare the two
// as well: one thread never runs AdamW beside D.) A tensor updated while the
// memory backward still reads it breaks this.
static void adamw_beside_case(const char *backend, const char *mode, int B)
{
    const clef_kernels *kb = isa_table_or_skip(backend); // any backend
    const int before = omp_get_max_threads();
    omp_set_num_threads(2);
    fixture f[2];
    for (int i = 0; i < 2; i++) {
        fixture_init_size(&f[i], 41, 1);
        clef_ws *ws = fixture_ws(&f[i], B, mode);
        clef_train_opts o = clef_test_train_opts();
        o.max_grad_norm = i ? 1e30 : 0; // 1: AdamW after the pass
        for (int s = 0; s < 3; s++)
            clef_train_step(kb, &f[i].hd, f[i].ptr + (s & 1), NREC - (s & 1),
                            ws, &o);
        clef_ws_free(ws);
    }
    omp_set_num_threads(before);
    for (int t = 0; t < f[0].hd.ntensors; t++) {
        const clef_tensor_info *ti = &f[0].hd.tensors[t];
        const size_t o = ti->offset, m = sizeof(float) * ti->numel;
        cr_expect(memcmp(f[0].hd.params + o, f[1].hd.params + o, m) == 0 &&
                      memcmp(f[0].hd.m + o, f[1].hd.m + o, m) == 0 &&
                      memcmp(f[0].hd.v + o, f[1].hd.v + o, m) == 0,
                  "%s %s B=%d: %s differs from AdamW after the pass", backend,
                  mode, B, ti->name);
    }
    fixture_free(&f[0]);
    fixture_free(&f[1]);
}

static void adamw_beside(const char *backend)
{
    adamw_beside_case(backend, "project", NREC);
    adamw_beside_case(backend, "project", 2);
    adamw_beside_case(backend, "absorb", NREC);
    adamw_beside_case(backend, "absorb", 2);
}

Test(batch, adamw_beside_memory_backward_equals_adamw_after_avx512)
{
    adamw_beside("avx512");
}
Test(batch, adamw_beside_memory_backward_equals_adamw_after_onednn)
{
    adamw_beside("onednn");
}

// One forward, loss and backward of f's NREC records on k: the logits
// (returned, *O of them; the caller frees) and f->hd.grads (zeroed first).
static float *batch_pass(const clef_kernels *k, fixture *f, clef_ws *ws, int *O)
{
    *O = 0;
    for (int b = 0; b < NREC; b++)
        *O += f->recs[b].O;
    float *z = clef_test_falloc(*O);
    float *p = clef_test_falloc(*O), *dz = clef_test_falloc(*O);
    clef_train_opts o = clef_test_train_opts();
    memset(f->hd.grads, 0, sizeof(float) * f->hd.nparams);
    clef_batch_forward(k, &f->hd, f->ptr, NREC, ws, z);
    clef_batch_loss(k, ws, z, &o, p, dz);
    clef_batch_backward(k, &f->hd, ws, dz);
    free(p), free(dz);
    return z;
}

// Every backend runs the whole head as the scalar reference does, in both
// memory-attention forms: logits and gradients of one packed batch agree
// within 128 FLT_EPSILON of their largest magnitude (measured: logits 3.5-6.2,
// gradients 31-44; a deep chain of differently ordered float sums; the
// per-op bounds are in tests/test_isa_*). CLEF_TEST_BACKEND_REPORT=1 prints
// the worst errors. prepack 0 turns off the pre-packed GEMM operands
// (clef_ws_set_prepack), which the hand-written backends use at this width.
static void backend_matches_scalar_pk(const char *backend, const char *mode,
                                      int prepack)
{
    const clef_kernels *kb = isa_table_or_skip(backend); // any backend
    fixture f[2];
    const clef_kernels *ks[2] = {&clef_scalar_kernels, kb};
    float *z[2], *g[2];
    int O = 0;
    for (int i = 0; i < 2; i++) {
        fixture_init_size(&f[i], 31, 1);
        clef_ws *ws = fixture_ws(&f[i], NREC, mode);
        clef_ws_set_prepack(ws, prepack);
        cr_assert(clef_ws_prepacks(&f[i].cfg), "the fixture is too narrow to "
                                               "pre-pack");
        z[i] = batch_pass(ks[i], &f[i], ws, &O);
        g[i] = f[i].hd.grads;
        clef_ws_free(ws);
    }
    const double tol_z =
        128 * FLT_EPSILON * fmax(clef_test_max_abs(z[0], O), 1.0);
    const double tol_g =
        128 * FLT_EPSILON * clef_test_max_abs(g[0], f[0].hd.nparams);
    for (int o = 0; o < O; o++)
        cr_expect(fabs((double)z[1][o] - z[0][o]) <= tol_z,
                  "%s (%s) logit %d: %.9g, scalar %.9g", backend, mode, o,
                  z[1][o], z[0][o]);
    size_t bad = 0, first = 0;
    double worst_g = 0, worst_z = 0;
    for (size_t i = 0; i < f[0].hd.nparams; i++) {
        double e = fabs((double)g[1][i] - g[0][i]);
        worst_g = fmax(worst_g, e);
        if (!(e <= tol_g) && !bad++)
            first = i;
    }
    for (int o = 0; o < O; o++)
        worst_z = fmax(worst_z, fabs((double)z[1][o] - z[0][o]));
    if (getenv("CLEF_TEST_BACKEND_REPORT"))
        fprintf(stderr,
                "[batch] %s (%s): worst logit %.1f, gradient %.1f "
                "FLT_EPSILON of scale (allowed 128)\n",
                backend, mode, worst_z / (tol_z / 128),
                worst_g / (tol_g / 128));
    cr_expect_eq(bad, 0,
                 "%s (%s): %zu gradients differ from scalar by more "
                 "than %.3g; first [%zu] %.9g vs %.9g",
                 backend, mode, bad, tol_g, first, g[1][first], g[0][first]);
    for (int i = 0; i < 2; i++) {
        free(z[i]);
        fixture_free(&f[i]);
    }
}

static void backend_matches_scalar(const char *backend, const char *mode)
{
    backend_matches_scalar_pk(backend, mode, 1);
}

Test(batch, backends_match_scalar_avx2)
{
    backend_matches_scalar("avx2", "project");
    backend_matches_scalar("avx2", "absorb");
    backend_matches_scalar_pk("avx2", "absorb", 0);
}
Test(batch, backends_match_scalar_avx512)
{
    backend_matches_scalar("avx512", "project");
    backend_matches_scalar("avx512", "absorb");
    backend_matches_scalar_pk("avx512", "absorb", 0);
}
Test(batch, backends_match_scalar_onednn)
{
    backend_matches_scalar("onednn", "project");
    backend_matches_scalar("onednn", "absorb");
}
Test(batch, backends_match_scalar_blis)
{
    backend_matches_scalar("blis", "project");
    backend_matches_scalar("blis", "absorb");
}

// CLEF_PREPACK=0 at workspace creation is clef_ws_set_prepack(ws, 0): the
// same logits, bit for bit; and pre-packing is really in use by default (at
// this fixture the memory attentions' products run unpacked without it, so
// their bits differ).
Test(batch, prepack_env_turns_off_prepacking)
{
    const clef_kernels *k = isa_table_or_skip("avx512");
    fixture f;
    fixture_init_size(&f, 23, 1);
    int O = 0;
    for (int b = 0; b < NREC; b++)
        O += f.recs[b].O;
    float *z[3];
    for (int i = 0; i < 3; i++) {
        if (i == 0)
            setenv("CLEF_PREPACK", "0", 1);
        clef_ws *ws = fixture_ws(&f, NREC, "absorb");
        unsetenv("CLEF_PREPACK");
        if (i == 1)
            clef_ws_set_prepack(ws, 0);
        z[i] = clef_test_falloc(O);
        clef_batch_forward(k, &f.hd, f.ptr, NREC, ws, z[i]);
        clef_ws_free(ws);
    }
    cr_expect(memcmp(z[0], z[1], sizeof(float) * O) == 0,
              "CLEF_PREPACK=0 and clef_ws_set_prepack(ws, 0) differ");
    cr_expect(memcmp(z[0], z[2], sizeof(float) * O) != 0,
              "pre-packing on and off give the same bits: is it in use?");
    for (int i = 0; i < 3; i++)
        free(z[i]);
    fixture_free(&f);
}

// A head too narrow to pre-pack keeps each memory transposed once per batch
// and its memory attentions read it (clef_mempack.transposed, gemm_nt_bt):
// logits and every gradient bitwise those of prepacking off, in both
// backends that have it and in both memory-attention forms' absorbed one,
// and the transposed products really run (a counting gemm_nt_bt).
static int (*g_nt_bt)(int, int, int, const float *, int, const float *, int,
                      float *, int, int);
static int g_nt_bt_calls;

static int counting_nt_bt(int M, int N, int K, const float *A, int lda,
                          const float *Bt, int ldbt, float *C, int ldc, int acc)
{
    g_nt_bt_calls++;
    return g_nt_bt(M, N, K, A, lda, Bt, ldbt, C, ldc, acc);
}

// *k = backend's table with *spy, its prepack whose gemm_nt_bt counts calls.
static void counting_table(const char *backend, clef_gemm_prepack *spy,
                           clef_kernels *k)
{
    const clef_kernels *kb = isa_table_or_skip(backend);
    cr_assert(kb->prepack && kb->prepack->gemm_nt_bt, "%s: no gemm_nt_bt",
              backend);
    *spy = *kb->prepack;
    g_nt_bt = spy->gemm_nt_bt;
    spy->gemm_nt_bt = counting_nt_bt;
    *k = *kb;
    k->prepack = spy;
    g_nt_bt_calls = 0;
}

static void narrow_transposed_bitwise(const char *backend)
{
    clef_gemm_prepack spy;
    clef_kernels k;
    counting_table(backend, &spy, &k);
    fixture f[2];
    float *z[2], *g[2];
    int O = 0;
    for (int i = 0; i < 2; i++) {
        fixture_init(&f[i], 41);
        clef_ws *ws = fixture_ws(&f[i], NREC, "absorb");
        cr_assert(!clef_ws_prepacks(&f[i].cfg),
                  "the fixture is wide enough to pack");
        clef_ws_set_prepack(ws, i);
        z[i] = batch_pass(&k, &f[i], ws, &O);
        g[i] = f[i].hd.grads;
        clef_ws_free(ws);
        if (i == 0)
            cr_assert_eq(g_nt_bt_calls, 0,
                         "%s: gemm_nt_bt ran with prepacking off", backend);
    }
    cr_assert_gt(g_nt_bt_calls, 0, "%s: the transposed memories were not read",
                 backend);
    cr_expect(memcmp(z[0], z[1], sizeof(float) * O) == 0,
              "%s: logits differ with the memories transposed", backend);
    long d = clef_test_first_diff(g[0], g[1], f[0].hd.nparams);
    cr_expect(d < 0, "%s: gradient %ld differs with the memories transposed",
              backend, d);
    for (int i = 0; i < 2; i++) {
        free(z[i]);
        fixture_free(&f[i]);
    }
}

// A table whose gemm_nt is not the prepack's own (an auto table tuned to
// another backend's, here a wrapper) never reads the transposed memories:
// their bits would be the prepack backend's, not its gemm_nt's.
static clef_gemm_fn g_real_nt;
static void wrapped_nt(int M, int N, int K, const float *A, int lda,
                       const float *B, int ldb, float *C, int ldc, int acc)
{
    g_real_nt(M, N, K, A, lda, B, ldb, C, ldc, acc);
}

Test(batch, narrow_memories_transposed_only_for_the_prepacks_gemm_nt)
{
    clef_gemm_prepack spy;
    clef_kernels k;
    counting_table("avx512", &spy, &k);
    g_real_nt = k.gemm_nt;
    k.gemm_nt = wrapped_nt;
    fixture f;
    fixture_init(&f, 41);
    clef_ws *ws = fixture_ws(&f, NREC, "absorb");
    int O;
    float *z = batch_pass(&k, &f, ws, &O);
    cr_expect_eq(g_nt_bt_calls, 0, "gemm_nt_bt ran under another gemm_nt");
    k.gemm_nt = g_real_nt; // the prepack's own: now it is used
    free(z);
    z = batch_pass(&k, &f, ws, &O);
    cr_expect_gt(g_nt_bt_calls, 0, "the prepack's own gemm_nt did not use it");
    free(z);
    clef_ws_free(ws);
    fixture_free(&f);
}

Test(batch, narrow_memories_transposed_bitwise_avx512)
{
    narrow_transposed_bitwise("avx512");
}
Test(batch, narrow_memories_transposed_bitwise_avx2)
{
    narrow_transposed_bitwise("avx2");
}

// bf16 training rounds each absorbed attention's memory once per batch
// (clef_mempack.m16) instead of at every product that reads it: the same
// logits and gradients, bit for bit, as rounding it per product (prepacking
// off, clef_ws_set_prepack), with fewer elements converted. Wide (w = 256,
// the bf16 kernels) and narrow (w = 8, the widened small products) heads.
static void (*g_real_cvt)(size_t, const float *, uint16_t *);
static size_t g_cvt_elems;
static void counting_cvt(size_t n, const float *x, uint16_t *y)
{
#pragma omp atomic
    g_cvt_elems += n;
    g_real_cvt(n, x, y);
}

static void bf16_memories_rounded_once(const char *backend, int big)
{
    const clef_kernels *kb = isa_table_or_skip(backend);
    fixture f[2];
    float *z[2], *g[2];
    size_t converted[2];
    int O = 0;
    for (int i = 0; i < 2; i++) {
        fixture_init_size(&f[i], 53, big);
        struct clef_mm mm;
        clef_kernels k;
        cr_assert_eq(clef_mm_init(&mm, &f[i].hd), 0);
        cr_assert_eq(clef_mm_table(kb, &mm, &k), 0, "%s: no bf16 GEMM",
                     backend);
        g_real_cvt = k.cvt_f32_bf16;
        k.cvt_f32_bf16 = counting_cvt;
        clef_mm_refresh(&k);
        clef_ws *ws = fixture_ws(&f[i], NREC, "absorb");
        clef_ws_set_prepack(ws, i == 0); // 0: rounded once; 1: per product
        g_cvt_elems = 0;
        z[i] = batch_pass(&k, &f[i], ws, &O);
        converted[i] = g_cvt_elems;
        g[i] = f[i].hd.grads;
        clef_ws_free(ws);
        clef_mm_free(&mm);
    }
    cr_expect(memcmp(z[0], z[1], sizeof(float) * O) == 0,
              "%s (w %d): logits differ with the memories rounded once",
              backend, f[0].cfg.w);
    long d = clef_test_first_diff(g[0], g[1], f[0].hd.nparams);
    cr_expect(d < 0,
              "%s (w %d): gradient %ld differs with the memories "
              "rounded once",
              backend, f[0].cfg.w, d);
    cr_expect_lt(converted[0], converted[1],
                 "%s (w %d): %zu elements converted with the memories rounded "
                 "once, %zu without",
                 backend, f[0].cfg.w, converted[0], converted[1]);
    for (int i = 0; i < 2; i++) {
        free(z[i]);
        fixture_free(&f[i]);
    }
}

Test(batch, bf16_memories_rounded_once_bitwise_scalar)
{
    bf16_memories_rounded_once("scalar", 0);
    bf16_memories_rounded_once("scalar", 1);
}
Test(batch, bf16_memories_rounded_once_bitwise_avx512_bf16)
{
    bf16_memories_rounded_once("avx512_bf16", 0);
    bf16_memories_rounded_once("avx512_bf16", 1);
}
Test(batch, bf16_memories_rounded_once_bitwise_auto)
{
    bf16_memories_rounded_once("auto", 1);
}

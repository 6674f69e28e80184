// Thread-count invariance of whole updates on the library backends (issue
// 16): training through clef_train_step with oneDNN or BLIS, the memory
// attentions projected or absorbed, on batches of three records (a bucket
// of one geometry and a batch of mixed geometries, so the records' memory
// attentions run on several threads at once), must leave the same parameter
// bits on 1 thread, on 2 threads, on 2 threads again and on 3 threads; in
// bf16 too, on oneDNN's bf16 GEMMs and on avx512's widened ones.
//
// The head is large enough that every threaded path splits: GEMMs well over
// the serial threshold, memory products over a megaflop, the memory
// backward's D in blocks (fixture_ws), AdamW over 2^17 parameters.
#include <criterion/criterion.h>
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

#define NREC 6
#define STEPS 4
// records 0-2: one bucket (T 200, the same questions); 3-5 of mixed T
static const int rec_T[NREC] = {200, 200, 200, 300, 64, 17};
static const int rec_Q[NREC] = {3, 3, 3, 2, 4, 1};
static const int rec_types[NREC][4] = {{0, 1, 2}, {0, 1, 2},    {0, 1, 2},
                                       {2, 1},    {1, 1, 2, 0}, {1}};
static const int rec_nopt[NREC][4] = {{2, 3, 4}, {2, 3, 4},    {2, 3, 4},
                                      {5, 2},    {2, 1, 3, 2}, {3}};

typedef clef_test_batch bits_run;

static void run_init(bits_run *r, uint64_t seed)
{
    const clef_config cfg = {
        .d = 256, .w = 128, .h = 4, .f = 256, .R = 1, .L = 1};
    const clef_test_batch_spec spec = {.n = NREC,
                                       .V = 13,
                                       .T = rec_T,
                                       .Q = rec_Q,
                                       .types = rec_types,
                                       .nopt = rec_nopt,
                                       .rng_mul = 6007,
                                       .rng_add = 5};
    clef_test_batch_init(r, &cfg, seed, &spec);
}

static void run_free(bits_run *r)
{
    clef_test_batch_free(r);
}

// STEPS updates of batch 3 (the bucket, then the mixed batch, in turn) on
// `threads` threads, in bf16 when bf16 (the backend's bf16 GEMMs, core/mm.h);
// returns the parameters (malloc'd, *n floats).
static float *train_bits(const clef_kernels *k, const char *mode, int bf16,
                         int threads, size_t *n)
{
    bits_run r;
    run_init(&r, 29);
    struct clef_mm mm;
    clef_kernels kb;
    if (bf16) {
        cr_assert_eq(clef_mm_init(&mm, &r.hd), 0);
        cr_assert_eq(clef_mm_table(k, &mm, &kb), 0, "%s: no bf16 GEMMs",
                     k->backend);
        k = &kb;
    }
    clef_train_opts o = clef_test_train_opts();
    clef_ws_limits lim;
    clef_ws_limits_for(r.recs, NREC, 3, &lim);
    clef_ws *ws = clef_ws_create_limits(&r.cfg, &lim);
    cr_assert_not_null(ws);
    cr_assert_eq(clef_ws_set_memory_attention(ws, mode), 0);
    clef_ws_set_d_block_flops(ws, 1.0);
    omp_set_num_threads(threads);
    for (int s = 0; s < STEPS; s++)
        clef_train_step(k, &r.hd, r.ptr + 3 * (s % 2), 3, ws, &o);
    *n = r.hd.nparams;
    float *w = clef_test_falloc(*n);
    memcpy(w, r.hd.params, sizeof(float) * *n);
    if (bf16)
        clef_mm_free(&mm);
    clef_ws_free(ws);
    run_free(&r);
    return w;
}

static void check_bits_in(const char *backend, const char *mode, int bf16)
{
    const clef_kernels *k = isa_table_or_skip(backend);
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: two threads would not run at once");
    const int before = omp_get_max_threads();
    const int counts[] = {2, 2, 3}; // 2 twice: run to run as well
    size_t n = 0, m = 0;
    float *ref = train_bits(k, mode, bf16, 1, &n);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        float *w = train_bits(k, mode, bf16, counts[c], &m);
        cr_assert_eq(m, n);
        long i = clef_test_first_diff(ref, w, n);
        cr_expect(i < 0,
                  "%s (%s%s): after %d updates, parameter %ld is %.9g on 1 "
                  "thread and %.9g on %d (run %zu)",
                  backend, mode, bf16 ? ", bf16" : "", STEPS, i,
                  i < 0 ? 0.0 : ref[i], i < 0 ? 0.0 : w[i], counts[c], c + 1);
        free(w);
    }
    free(ref);
    omp_set_num_threads(before);
}

static void check_bits(const char *backend, const char *mode)
{
    check_bits_in(backend, mode, 0);
}

Test(thread_bits, onednn_project)
{
    check_bits("onednn", "project");
}

Test(thread_bits, onednn_absorb)
{
    check_bits("onednn", "absorb");
}

Test(thread_bits, blis_project)
{
    check_bits("blis", "project");
}

Test(thread_bits, blis_absorb)
{
    check_bits("blis", "absorb");
}

// oneDNN's bf16 matmul (auto's choice for the large bf16 products where the
// CPU has no AMX): the same blocks of C on any thread count.
Test(thread_bits, onednn_bf16_project)
{
    check_bits_in("onednn", "project", 1);
}

// avx512's bf16 GEMMs (its fp32 GEMMs on widened operands, for CPUs without
// bf16 arithmetic): the fp32 kernels' splits, elementwise widening.
Test(thread_bits, avx512_widened_bf16_project)
{
    check_bits_in("avx512", "project", 1);
}

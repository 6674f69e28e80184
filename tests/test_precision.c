// Suite precision: --precision bf16 (core/mm.h).
//
//   products_are_the_bf16_kernels_on_rounded_operands: clef_mm_nt / nn / tn
//       on a bf16 table give exactly the bits of the table's gemm_bf16_* on
//       operands rounded by its cvt_f32_bf16, over strided and odd shapes,
//       with the parameter operand read from the mirror: changed parameters
//       are seen after clef_mm_refresh, and not before.
//   fp32_table_is_untouched: without a bf16 context the products are the
//       fp32 GEMMs' bits.
//   update_bits_do_not_depend_on_threads: bf16 updates on the auto table
//       (AMX or AVX512-BF16 kernels where the CPU has them) and on scalar
//       leave the same bits on 1 and 2 threads.
//   mirror_refreshes_only_when_stale: each update's refresh is skipped
//       while AdamW keeps the mirror current (every bf16 update run here
//       also checks the mirror bit for bit), and runs after
//       clef_mm_params_changed.
//   training_tracks_fp32: 60 bf16 updates of a small head stay within a
//       band of the fp32 run's losses (see CURVE_BAND: the measured figures
//       are in the test's output).
//   cli_*: result.json and resume checks, bad values.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "head.h"
#include "isa_common.h"
#include "mm.h"
#include "package.h"
#include "ref_head.h"
#include "util.h"
#include "util_package.h"

#define BF16_EPS (1.0 / 256) // 2^-8: bf16's unit roundoff ×2 (8 bits)

// A bf16 table of k with a context for the "parameters" p (n floats).
static void bf16_table(const clef_kernels *k, struct clef_mm *mm, float *p,
                       size_t n, clef_kernels *out)
{
    clef_head fake = {.params = p, .nparams = n};
    cr_assert_eq(clef_mm_init(mm, &fake), 0);
    cr_assert_eq(clef_mm_table(k, mm, out), 0, "%s has no bf16 GEMM",
                 k->backend);
}

// X (rows, cols) of stride ld, rounded to bf16 by k into a dense copy.
static uint16_t *rounded(const clef_kernels *k, const float *X, int rows,
                         int cols, int ld)
{
    uint16_t *y = malloc(sizeof(uint16_t) * (size_t)rows * cols + 2);
    for (int r = 0; r < rows; r++)
        k->cvt_f32_bf16((size_t)cols, X + (size_t)r * ld, y + (size_t)r * cols);
    return y;
}

// The rounded values of a (n) as floats (bf16 bits in the high half).
static float *widen(const uint16_t *a, size_t n)
{
    float *y = clef_test_falloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)a[i] << 16;
        memcpy(y + i, &u, sizeof(float));
    }
    return y;
}

// What clef_mm_* must compute, in bits: below CLEF_MM_BF16_SMALL_FLOPS the
// table's fp32 kernel on the rounded operands, else its bf16 kernel.
static void expected_product(const clef_kernels *k, int form, int M, int N,
                             int K, const uint16_t *a, int la, int ar,
                             const uint16_t *b, int lb, int br, float *C)
{
    if (2.0 * M * N * K < CLEF_MM_BF16_SMALL_FLOPS) {
        float *fa = widen(a, (size_t)ar * la), *fb = widen(b, (size_t)br * lb);
        const clef_gemm_fn f = form == 0   ? k->gemm_nt
                               : form == 1 ? k->gemm_nn
                                           : k->gemm_tn;
        f(M, N, K, fa, la, fb, lb, C, N, 1);
        free(fa), free(fb);
        return;
    }
    const clef_gemm_bf16_fn f = form == 0   ? k->gemm_bf16_nt
                                : form == 1 ? k->gemm_bf16_nn
                                            : k->gemm_bf16_tn;
    f(M, N, K, a, la, b, lb, C, N, 1);
}

static void mm_form(const clef_kernels *kb, int form, int M, int N, int K,
                    const float *A, int lda, const float *B, int ldb, float *C)
{
    if (form == 0)
        clef_mm_nt(kb, M, N, K, A, lda, B, ldb, C, N, 1);
    else if (form == 1)
        clef_mm_nn(kb, M, N, K, A, lda, B, ldb, C, N, 1);
    else
        clef_mm_tn(kb, M, N, K, A, lda, B, ldb, C, N, 1);
}

// One shape (M, N, K) of every form, two passes (the second after the
// parameters changed and the mirror was refreshed).
static void products_case(const clef_kernels *k, int M, int N, int K)
{
    const int pad = 3;
    uint64_t rng = 77 + (uint64_t)M;
    // the "parameters": B of every form, stored with a stride
    const size_t np = (size_t)(N + K) * (N + K + pad);
    float *params = clef_test_falloc(np);
    clef_test_fill_uniform(params, np, -1, 1, &rng);
    float *A = clef_test_falloc((size_t)(M + K) * (M + K + pad));
    clef_test_fill_uniform(A, (size_t)(M + K) * (M + K + pad), -1, 1, &rng);
    struct clef_mm mm;
    clef_kernels kb;
    bf16_table(k, &mm, params, np, &kb);
    clef_mm_refresh(&kb);
    float *got = clef_test_falloc((size_t)M * N);
    float *want = clef_test_falloc((size_t)M * N);
    float *stale = clef_test_falloc((size_t)M * N);
    for (int form = 0; form < 3; form++) {
        // nt: A (M,K), B (N,K); nn: A (M,K), B (K,N); tn: A (K,M), B (K,N)
        const int ar = form == 2 ? K : M, ac = form == 2 ? M : K;
        const int br = form == 0 ? N : K, bc = form == 0 ? K : N;
        const int lda = ac + pad, ldb = bc + pad;
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < M * N; i++)
                got[i] = want[i] = 0.5f; // accumulate onto the same C
            uint16_t *a = rounded(k, A, ar, ac, lda);
            uint16_t *b = rounded(k, params, br, bc, ldb);
            expected_product(k, form, M, N, K, a, ac, ar, b, bc, br, want);
            mm_form(&kb, form, M, N, K, A, lda, params, ldb, got);
            cr_expect_eq(memcmp(got, want, sizeof(float) * M * N), 0,
                         "%dx%dx%d form %d pass %d: not the %s's bits", M, N, K,
                         form, pass,
                         2.0 * M * N * K < CLEF_MM_BF16_SMALL_FLOPS
                             ? "fp32 kernel on the rounded operands"
                             : "bf16 kernel");
            free(a), free(b);
            // pass 1: new parameters, seen once the mirror is refreshed
            for (size_t i = 0; i < np; i++)
                params[i] = -params[i] * 0.75f;
            memcpy(stale, got, sizeof(float) * M * N);
            for (int i = 0; i < M * N; i++)
                got[i] = 0.5f;
            mm_form(&kb, form, M, N, K, A, lda, params, ldb, got);
            cr_expect_eq(memcmp(got, stale, sizeof(float) * M * N), 0,
                         "form %d: the mirror changed without a refresh", form);
            clef_mm_refresh(&kb);
        }
    }
    clef_mm_free(&mm);
    free(params), free(A), free(got), free(want), free(stale);
}

// Both sides of CLEF_MM_BF16_SMALL_FLOPS (7·13·19: small; 40·72·400 = 2.3
// MFLOP: the bf16 kernels).
Test(precision, products_are_the_bf16_kernels_on_rounded_operands)
{
    const clef_kernels *k = &clef_scalar_kernels;
    cr_assert(2.0 * 7 * 13 * 19 < CLEF_MM_BF16_SMALL_FLOPS &&
              2.0 * 40 * 72 * 400 >= CLEF_MM_BF16_SMALL_FLOPS);
    products_case(k, 7, 13, 19);
    products_case(k, 40, 72, 400);
}

// The small products' activations are rounded by cvt_f32_bf16 and widened
// back (core/mm.c): its bits on values that test the rounding (ties to even
// both ways, the carry into the exponent, the largest finite rounding to
// Inf, denormals, NaN with its payload in the low half, ±0, ±Inf), each
// seen alone through a 64×1×1 product with a parameter of 1.
Test(precision, small_products_round_activations_as_cvt)
{
    const clef_kernels *k = &clef_scalar_kernels;
    static const uint32_t bits[] = {
        0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x3f807fffu, 0x3fff8000u,
        0x7f7fffffu, 0x7f7f8000u, 0x7f7f7fffu, 0x00000001u, 0x00008000u,
        0x00018000u, 0x007fffffu, 0x7f800001u, 0xffc00001u, 0x7fbfffffu,
        0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u, 0xbf808000u};
    enum { M = 64 };
    float A[M], one = 1.0f, got[M], want[M];
    for (int i = 0; i < M; i++) {
        const uint32_t u = bits[i % (sizeof bits / sizeof bits[0])] ^
                           (i >= 32 ? 0x80000000u : 0);
        memcpy(&A[i], &u, sizeof u);
    }
    struct clef_mm mm;
    clef_kernels kb;
    bf16_table(k, &mm, &one, 1, &kb);
    clef_mm_refresh(&kb);
    cr_assert(2.0 * M < CLEF_MM_BF16_SMALL_FLOPS);
    uint16_t *a = rounded(k, A, M, 1, 1), *b = rounded(k, &one, 1, 1, 1);
    for (int i = 0; i < M; i++)
        got[i] = want[i] = 0.5f;
    expected_product(k, 0, M, 1, 1, a, 1, M, b, 1, 1, want);
    clef_mm_nt(&kb, M, 1, 1, A, 1, &one, 1, got, 1, 1);
    for (int i = 0; i < M; i++)
        cr_expect(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                  "row %d (%08x): %a, want %a", i,
                  (unsigned)bits[i % (sizeof bits / sizeof bits[0])], got[i],
                  want[i]);
    free(a), free(b);
    clef_mm_free(&mm);
}

Test(precision, fp32_table_is_untouched)
{
    const clef_kernels *k = &clef_scalar_kernels;
    cr_assert_null(k->mm);
    const int M = 5, N = 6, K = 7;
    uint64_t rng = 3;
    float *A = clef_test_falloc(M * K), *B = clef_test_falloc(N * K);
    clef_test_fill_uniform(A, M * K, -1, 1, &rng);
    clef_test_fill_uniform(B, N * K, -1, 1, &rng);
    float *x = clef_test_falloc(M * N), *y = clef_test_falloc(M * N);
    k->gemm_nt(M, N, K, A, K, B, K, x, N, 0);
    clef_mm_nt(k, M, N, K, A, K, B, K, y, N, 0);
    cr_expect_eq(memcmp(x, y, sizeof(float) * M * N), 0);
    free(A), free(B), free(x), free(y);
}

// ---- whole updates ----

#define NREC 3
static const int rec_T[NREC] = {40, 40, 23};
static const int rec_Q[NREC] = {2, 2, 3};
static const int rec_types[NREC][4] = {{1, 2}, {1, 2}, {0, 1, 1}};
static const int rec_nopt[NREC][4] = {{3, 4}, {3, 4}, {2, 2, 3}};

typedef struct run_out {
    float *w;       // (nparams) parameters after the run
    double *losses; // (steps) the batch loss of each update
    size_t n;
} run_out;

// The mirror after update s: marked current and, bit for bit, the
// parameters rounded by the table's conversion (AdamW's chunks wrote it;
// no refresh ran since the first update's).
static void mirror_is_current(const clef_kernels *k, const struct clef_mm *mm,
                              int s)
{
    cr_assert(mm->current, "update %d left the mirror stale", s);
    uint16_t *want = malloc(sizeof(uint16_t) * mm->pn);
    k->cvt_f32_bf16(mm->pn, mm->pbase, want);
    size_t i = 0;
    while (i < mm->pn && want[i] == mm->pbf[i])
        i++;
    cr_assert_eq(i, mm->pn,
                 "update %d: mirror[%zu] = 0x%04x, parameter %.9g rounds "
                 "to 0x%04x",
                 s, i, i < mm->pn ? mm->pbf[i] : 0,
                 i < mm->pn ? mm->pbase[i] : 0.0, i < mm->pn ? want[i] : 0);
    free(want);
}

// `steps` updates of the 3-record batch on `threads` threads, in bf16 on
// table k (or fp32 when !bf16), from one head and batch.
static run_out train(const clef_kernels *k, int bf16, int threads, int steps,
                     const clef_config *cfg)
{
    const clef_test_batch_spec spec = {.n = NREC,
                                       .V = 11,
                                       .T = rec_T,
                                       .Q = rec_Q,
                                       .types = rec_types,
                                       .nopt = rec_nopt,
                                       .rng_mul = 4099,
                                       .rng_add = 17};
    clef_test_batch r;
    clef_test_batch_init(&r, cfg, 7, &spec);
    clef_train_opts o = clef_test_train_opts();
    o.lr = 3e-3;
    clef_ws_limits lim;
    clef_ws_limits_for(r.recs, NREC, NREC, &lim);
    clef_ws *ws = clef_ws_create_limits(cfg, &lim);
    cr_assert_not_null(ws);
    clef_ws_set_d_block_flops(ws, 1.0);
    struct clef_mm mm;
    clef_kernels kb;
    if (bf16) {
        cr_assert_eq(clef_mm_init(&mm, &r.hd), 0);
        cr_assert_eq(clef_mm_table(k, &mm, &kb), 0);
        k = &kb;
    }
    run_out out = {.n = r.hd.nparams,
                   .losses = calloc((size_t)steps, sizeof(double))};
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    for (int s = 0; s < steps; s++) {
        out.losses[s] = clef_train_step(k, &r.hd, r.ptr, NREC, ws, &o);
        if (bf16) // AdamW wrote the mirror beside the parameters
            mirror_is_current(k, &mm, s);
    }
    omp_set_num_threads(before);
    out.w = clef_test_falloc(out.n);
    memcpy(out.w, r.hd.params, sizeof(float) * out.n);
    if (bf16)
        clef_mm_free(&mm);
    clef_ws_free(ws);
    clef_test_batch_free(&r);
    return out;
}

static void run_free(run_out *o)
{
    free(o->w), free(o->losses);
}

static void check_threads(const char *backend)
{
    const clef_kernels *k = isa_table_or_skip(backend);
    if (omp_get_num_procs() < 2)
        cr_skip_test("one CPU: two threads would not run at once");
    const clef_config cfg = {
        .d = 192, .w = 128, .h = 4, .f = 256, .R = 1, .L = 1};
    run_out a = train(k, 1, 1, 3, &cfg), b = train(k, 1, 2, 3, &cfg);
    const long diff = clef_test_first_diff(a.w, b.w, a.n);
    cr_expect(diff < 0,
              "%s bf16: parameter %ld is %.9g on 1 thread, %.9g "
              "on 2",
              backend, diff, diff < 0 ? 0.0 : a.w[diff],
              diff < 0 ? 0.0 : b.w[diff]);
    run_free(&a), run_free(&b);
}

Test(precision, update_bits_do_not_depend_on_threads_auto, .timeout = 60)
{
    check_threads("auto");
}
Test(precision, update_bits_do_not_depend_on_threads_scalar, .timeout = 60)
{
    check_threads("scalar");
}

// The update's refresh is skipped while the mirror is current, and runs
// again after clef_mm_params_changed.
Test(precision, mirror_refreshes_only_when_stale)
{
    const clef_kernels *k = &clef_scalar_kernels;
    float p[40];
    for (int i = 0; i < 40; i++)
        p[i] = 0.1f * (float)i;
    struct clef_mm mm;
    clef_kernels kb;
    bf16_table(k, &mm, p, 40, &kb);
    cr_expect_not(mm.current, "a new mirror is empty");
    clef_mm_refresh_stale(&kb);
    cr_assert(mm.current);
    uint16_t b;
    k->cvt_f32_bf16(1, p + 7, &b);
    cr_expect_eq(mm.pbf[7], b);
    p[7] = 3.0f; // written behind the mirror's back: not seen
    clef_mm_refresh_stale(&kb);
    cr_expect_eq(mm.pbf[7], b, "a current mirror was refreshed");
    clef_mm_params_changed(&kb); // said: the next update refreshes
    clef_mm_refresh_stale(&kb);
    k->cvt_f32_bf16(1, p + 7, &b);
    cr_expect_eq(mm.pbf[7], b);
    cr_expect(mm.current);
    p[9] = -2.0f; // AdamW's way: the chunk written beside the parameters
    clef_mm_mirror(&kb, 8, 2);
    k->cvt_f32_bf16(1, p + 9, &b);
    cr_expect_eq(mm.pbf[9], b);
    clef_mm_mirror(k, 8, 2); // an fp32 table: nothing
    clef_mm_params_changed(k);
    clef_mm_refresh_stale(k);
    clef_mm_free(&mm);
}

// Records kept in bf16 (clef_record_keep_bf16: x̂ as bf16, H and the
// fp32 x̂ freed) train bit for bit as records whose fp32 x̂ holds the same
// bf16 values and goes through the per-call conversion.
Test(precision, records_kept_in_bf16_match_rounded_fp32, .timeout = 60)
{
    const clef_kernels *k = isa_table_or_skip("auto");
    const clef_config cfg = {.d = 96, .w = 64, .h = 4, .f = 96, .R = 1, .L = 1};
    const clef_test_batch_spec spec = {.n = NREC,
                                       .V = 11,
                                       .T = rec_T,
                                       .Q = rec_Q,
                                       .types = rec_types,
                                       .nopt = rec_nopt,
                                       .rng_mul = 4099,
                                       .rng_add = 17};
    clef_test_batch r[2];
    float *w[2];
    for (int v = 0; v < 2; v++) {
        clef_test_batch_init(&r[v], &cfg, 7, &spec);
        for (int i = 0; i < NREC; i++) {
            clef_record *rec = &r[v].recs[i];
            const size_t n = (size_t)rec->T * rec->d;
            if (v == 1) {
                cr_assert_eq(clef_record_keep_bf16(k, rec), 0);
                cr_expect(!rec->xhat && !rec->H && rec->xhat16);
                continue;
            }
            uint16_t *b = malloc(sizeof(uint16_t) * n);
            k->cvt_f32_bf16(n, rec->xhat, b);
            for (size_t j = 0; j < n; j++) {
                const uint32_t u = (uint32_t)b[j] << 16;
                memcpy(rec->xhat + j, &u, sizeof(float));
            }
            free(b);
        }
        clef_train_opts o = clef_test_train_opts();
        clef_ws_limits lim;
        clef_ws_limits_for(r[v].recs, NREC, NREC, &lim);
        clef_ws *ws = clef_ws_create_limits(&cfg, &lim);
        struct clef_mm mm;
        clef_kernels kb;
        cr_assert_eq(clef_mm_init(&mm, &r[v].hd), 0);
        cr_assert_eq(clef_mm_table(k, &mm, &kb), 0);
        for (int s = 0; s < 3; s++)
            clef_train_step(&kb, &r[v].hd, r[v].ptr, NREC, ws, &o);
        w[v] = clef_test_falloc(r[v].hd.nparams);
        memcpy(w[v], r[v].hd.params, sizeof(float) * r[v].hd.nparams);
        clef_mm_free(&mm);
        clef_ws_free(ws);
    }
    const long diff = clef_test_first_diff(w[0], w[1], r[0].hd.nparams);
    cr_expect(diff < 0,
              "parameter %ld: %.9g (rounded fp32 x̂) vs %.9g (bf16 "
              "x̂)",
              diff, diff < 0 ? 0.0 : w[0][diff], diff < 0 ? 0.0 : w[1][diff]);
    for (int v = 0; v < 2; v++) {
        free(w[v]);
        clef_test_batch_free(&r[v]);
    }
}

// The band. Two runs from one head take slightly different paths through the
// fast fall of the loss (bf16's rounding moves each update a little) and
// meet again on the plateau, so the band is on the curve's scale: at every
// step |loss_bf16 − loss_fp32| ≤ CURVE_BAND · loss_fp32(step 1), and at the
// end ≤ FINAL_EPS bf16 epsilons of the final loss. Measured here (AMX):
// 8.5 % of the first loss at step 12 (0.545 against 0.656 through the
// fall), 0.03 % at step 60.
#define CURVE_BAND 0.15
#define FINAL_EPS 8.0
#define STEPS 60

Test(precision, training_tracks_fp32, .timeout = 60)
{
    const clef_kernels *k = isa_table_or_skip("auto");
    const clef_config cfg = {.d = 64, .w = 32, .h = 4, .f = 64, .R = 2, .L = 2};
    run_out f = train(k, 0, 1, STEPS, &cfg), b = train(k, 1, 1, STEPS, &cfg);
    double worst = 0;
    int at = 0;
    for (int s = 0; s < STEPS; s++) {
        if (getenv("CLEF_TEST_CURVES"))
            fprintf(stderr, "%d %.6f %.6f\n", s + 1, f.losses[s], b.losses[s]);
        const double d = fabs(b.losses[s] - f.losses[s]) / f.losses[0];
        if (d > worst)
            worst = d, at = s;
    }
    const double fin =
        fabs(b.losses[STEPS - 1] - f.losses[STEPS - 1]) / f.losses[STEPS - 1];
    fprintf(stderr,
            "[precision] bf16 vs fp32 over %d steps: worst %.3g of "
            "the first loss at step %d (%.6g vs %.6g); final %.3g "
            "relative (%.2f bf16 eps); fp32 %.6g -> %.6g\n",
            STEPS, worst, at + 1, b.losses[at], f.losses[at], fin,
            fin / BF16_EPS, f.losses[0], f.losses[STEPS - 1]);
    cr_expect(f.losses[STEPS - 1] < 0.8 * f.losses[0],
              "the fp32 run must learn for the band to mean anything");
    cr_expect(worst <= CURVE_BAND,
              "bf16 loss off fp32's by %.3g of the "
              "first loss at step %d (band %.3g)",
              worst, at + 1, CURVE_BAND);
    cr_expect(fin <= FINAL_EPS * BF16_EPS,
              "final loss off by %.3g relative (band %.3g)", fin,
              FINAL_EPS * BF16_EPS);
    run_free(&f), run_free(&b);
}

// ---- the CLI ----

#define TRAIN                                                                  \
    "train --quiet --batch 2 --lr 0.01 --threads 1 "                           \
    "--package %s/package.json --run-dir %s/%s"

// The logits clef score prints for run b's weights (at most n), in order.
static int score_logits(const char *dir, const char *pkg, const char *extra,
                        double *z, int n)
{
    cr_assert_eq(tp_clef(dir,
                         "score --weights %s/b/weights.safetensors "
                         "--package %s/package.json%s",
                         dir, pkg, extra),
                 0, "%s", tp_err(dir));
    char *out = tp_slurp(tp_path(dir, "out"), NULL);
    cr_assert_not_null(out);
    int m = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL), *sc;
        size_t i;
        cr_assert_not_null(j, "not JSON: %s", line);
        json_array_foreach (json_object_get(j, "scores"), i, sc) {
            if (m < n)
                z[m++] = json_number_value(json_object_get(sc, "logit"));
        }
        json_decref(j);
    }
    free(out);
    return m;
}

Test(precision, cli_records_checks_and_refuses, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    cr_assert_eq(
        tp_clef(dir, TRAIN " --epochs 2 --precision bf16", pkg, dir, "b"), 0,
        "%s", tp_err(dir));
    json_t *r = tp_load_json(tp_path(dir, "b/result.json"));
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_object_get(r, "train"), "precision")),
                     "bf16");
    const long steps =
        (long)json_integer_value(json_object_get(r, "completed_steps"));
    json_decref(r);
    char ck[256];
    snprintf(ck, sizeof(ck), "%s/b/checkpoint-%ld.safetensors", dir, steps);
    cr_expect_eq(
        tp_clef(dir, TRAIN " --epochs 3 --resume %s", pkg, dir, "b", ck), 2,
        "resuming a bf16 run in fp32 must exit 2");
    cr_expect(strstr(tp_err(dir), "precision") != NULL, "%s", tp_err(dir));
    cr_expect_eq(tp_clef(dir, TRAIN " --epochs 3 --precision bf16 --resume %s",
                         pkg, dir, "b", ck),
                 0, "%s", tp_err(dir));
    // clef score in both precisions: the same replies to bf16 rounding
    double zf[64], zb[64];
    const int nf = score_logits(dir, pkg, "", zf, 64);
    const int nb = score_logits(dir, pkg, " --precision bf16", zb, 64);
    cr_assert(nf > 0 && nf == nb, "%d vs %d logits", nf, nb);
    for (int i = 0; i < nf; i++)
        cr_expect(fabs(zf[i] - zb[i]) <= 16 * BF16_EPS * fmax(fabs(zf[i]), 1),
                  "logit %d: %.6g fp32, %.6g bf16", i, zf[i], zb[i]);
    // --export-dtype bf16: BF16 tensors, each the master weight rounded
    // (the export check), which clef score loads
    cr_assert_eq(
        tp_clef(dir, TRAIN " --epochs 2 --export-dtype bf16", pkg, dir, "e"), 0,
        "%s", tp_err(dir));
    json_t *re = tp_load_json(tp_path(dir, "e/result.json"));
    cr_expect(json_is_true(
        json_object_get(json_object_get(re, "checks"), "export_parity")));
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_object_get(re, "train"), "export_dtype")),
                     "bf16");
    json_decref(re);
    cr_assert_eq(tp_clef(dir, "inspect %s/e/weights.safetensors", dir), 0);
    char *listing = tp_slurp(tp_path(dir, "out"), NULL);
    cr_expect(listing && strstr(listing, " BF16 ") && !strstr(listing, " F32 "),
              "%s", listing);
    free(listing);
    cr_expect_eq(tp_clef(dir,
                         "score --weights %s/e/weights.safetensors --package "
                         "%s/package.json",
                         dir, pkg),
                 0, "%s", tp_err(dir));
    cr_expect_eq(tp_clef(dir, TRAIN " --export-dtype f16", pkg, dir, "bad"), 2);
    cr_expect_eq(tp_clef(dir, TRAIN " --precision fp16", pkg, dir, "bad"), 2);
    cr_expect(strstr(tp_err(dir), "--precision") != NULL, "%s", tp_err(dir));
    cr_expect(!tp_exists(tp_path(dir, "bad")));
    tp_rmdir(dir);
}

// A sweep of bf16 runs keeps the shared package's x̂ in bf16 once; each
// run's weights are still those of clef train alone (which keeps its own).
Test(precision, cli_sweep_runs_match_train_alone, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    cr_assert_eq(tp_clef(dir,
                         "sweep --package %s/package.json --sweep-dir %s/sw "
                         "--grid lr=1e-3,3e-3 --epochs 4 --precision bf16 "
                         "--parallel 2",
                         pkg, dir),
                 0, "%s", tp_err(dir));
    const char *lrs[2] = {"1e-3", "3e-3"};
    for (int i = 0; i < 2; i++) {
        char run[64], a[4200], b[4200];
        snprintf(run, sizeof(run), "alone%d", i);
        cr_assert_eq(tp_clef(dir,
                             "train --quiet --threads 1 --package "
                             "%s/package.json --run-dir %s/%s --epochs 4 "
                             "--precision bf16 --lr %s",
                             pkg, dir, run, lrs[i]),
                     0, "%s", tp_err(dir));
        snprintf(a, sizeof(a), "%s/%s/weights.safetensors", dir, run);
        snprintf(b, sizeof(b), "%s/sw/runs/lr=%s/weights.safetensors", dir,
                 lrs[i]);
        cr_expect(tp_same_file(a, b), "lr=%s: the sweep's run differs", lrs[i]);
    }
    tp_rmdir(dir);
}

// clef_package_read_half keeps F16 / BF16 hidden states as their bits (no
// float copy) and prepare_bf16 turns them into the same bf16 x̂ as the
// float read does; a NaN in a half-precision record is refused either way.
Test(precision, half_hidden_states_load_without_a_float_copy)
{
    char *dir = tp_tmpdir();
    cr_assert_eq(tp_write_mixed_package(dir), 0);
    char manifest[4200];
    snprintf(manifest, sizeof(manifest), "%s/package.json", dir);
    clef_package a, b;
    clef_err err = {0};
    cr_assert_eq(clef_package_read(manifest, NULL, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_package_read_half(manifest, NULL, &b, &err), 0, "%s",
                 err.msg);
    const clef_kernels *k = &clef_scalar_kernels;
    int halves = 0;
    for (int i = 0; i < b.nrecords; i++) {
        const clef_record *r = &b.records[i];
        halves += r->Hh != NULL;
        cr_expect((r->Hh == NULL) == (r->H != NULL), "record %s", r->id);
    }
    cr_expect_eq(halves, 2, "m-1 (F16) and m-2 (BF16) stay half");
    cr_assert_eq(clef_package_prepare_bf16(&a, k, &err), 0, "%s", err.msg);
    cr_assert_eq(clef_package_prepare_bf16(&b, k, &err), 0, "%s", err.msg);
    for (int i = 0; i < b.nrecords; i++) {
        const clef_record *ra = &a.records[i], *rb = &b.records[i];
        cr_expect(!rb->H && !rb->Hh && !rb->xhat && rb->xhat16);
        cr_expect_eq(memcmp(ra->xhat16, rb->xhat16,
                            sizeof(uint16_t) * (size_t)ra->T * ra->d),
                     0, "record %s: another x̂", ra->id);
        cr_expect_eq(
            memcmp(ra->qvhat, rb->qvhat, sizeof(float) * (size_t)ra->Q * ra->d),
            0, "record %s: other span means", ra->id);
    }
    clef_package_free(&a);
    clef_package_free(&b);
    // a NaN (F16 0x7e00) as m-1's first hidden value
    char shard[4200];
    snprintf(shard, sizeof(shard), "%s/records-000.safetensors", dir);
    size_t n, begin, end;
    uint8_t *bytes = (uint8_t *)tp_slurp(shard, &n);
    cr_assert_eq(tp_st_locate(bytes, n, "m-1/hidden", &begin, &end), 0);
    bytes[begin] = 0x00, bytes[begin + 1] = 0x7e;
    cr_assert_eq(tp_write(shard, bytes, n), 0);
    free(bytes);
    json_t *m = tp_manifest_load(dir);
    cr_assert_eq(tp_manifest_save(dir, m), 0);
    json_decref(m);
    cr_expect_neq(clef_package_read_half(manifest, NULL, &b, &err), 0);
    cr_expect(strstr(err.msg, "m-1") && strstr(err.msg, "hidden") &&
                  strstr(err.msg, "non-finite"),
              "%s", err.msg);
    tp_rmdir(dir);
}

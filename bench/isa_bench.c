// isa_bench: the ISA backends' performance goals, measured directly
// (one thread, CPU time, best of N), independent of clef-bench:
//   gemm  GFLOP/s of clef_f32_gemm_{nt,nn,tn}_* (avx512, avx2) against
//         oneDNN's dnnl_sgemm at the head's mid and released shapes, and
//         at the released head's few-row products (rows-nb, -Q, -O); with
//         B hot (one copy, reused) and cold (a fresh copy per product, as
//         an update meets each weight); the ratio is oneDNN's time over
//         clef's, run back to back, the median of the 9 pairs
//   bw    GB/s of layernorm, GELU, AdamW and softmax against memcpy at a size
//         far beyond L2 (16 Mi floats per tensor)
//
// Its own program, not part of clef-bench (CMake target isa-bench, x86):
//   OMP_NUM_THREADS=1 build/bin/isa-bench gemm
//   OMP_NUM_THREADS=1 build/bin/isa-bench bw
// Time is CPU time of the process (CLOCK_PROCESS_CPUTIME_ID): on a shared
// machine it is far steadier than wall time; one thread makes them equal.
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/avx2/avx2.h"
#include "backends/avx512/avx512.h"
#include "bench/median.h"
#include "cpu/cpu.h"
#include "cpu/clock.h"

#define REPS 9

typedef enum { NT, NN, TN } layout;
static const char *lname[] = {"nt", "nn", "tn"};

static clef_gemm_fn gemm_of(const clef_kernels *k, layout l)
{
    return l == NT ? k->gemm_nt : l == NN ? k->gemm_nn : k->gemm_tn;
}

// Copies of B the cold timing cycles through: at least two per repetition
// (clef's and oneDNN's each read a B no product has touched since it was
// filled) and at least COLD_BYTES of them, beyond any last-level cache, as
// an update meets each weight once per pass.
#define COLD_BYTES ((size_t)256 << 20)
static int cold_copies(size_t nb)
{
    size_t n = COLD_BYTES / (nb * sizeof(float)) + 1;
    return n < 2 * REPS ? 2 * REPS : n > 128 ? 128 : (int)n;
}

// C = op(A) op(B) by clef (k) and by dnnl_sgemm, back to back REPS times,
// with B hot (one copy, reused: in cache as far as it fits) or cold: the
// best seconds of each, and the median over the repetitions of oneDNN's
// time over clef's in the same repetition (a paired ratio: on a shared
// machine both rates drift together by far more than they differ, and the
// two bests may come from different moments).
static void time_gemm(const clef_kernels *k, layout l, int M, int N, int K,
                      int cold, double *t_clef, double *t_dnnl, double *ratio)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N;
    const int copies = cold ? cold_copies(nb) : 1;
    float *A = aligned_alloc(64, na * 4);
    float *B = aligned_alloc(64, nb * 4 * copies);
    float *C = aligned_alloc(64, (size_t)M * N * 4);
    if (!A || !B || !C) {
        fprintf(stderr, "isa-bench: out of memory for %d copies of B\n",
                copies);
        exit(1);
    }
    for (size_t i = 0; i < na; i++)
        A[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < nb; i++)
        B[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
    for (int c = 1; c < copies; c++)
        memcpy(B + nb * c, B, nb * 4);
    int lda = l == TN ? M : K, ldb = l == NT ? K : N;
    clef_gemm_fn fn = gemm_of(k, l);
    double pair[REPS];
    *t_clef = *t_dnnl = 1e30;
    for (int r = 0; r < REPS; r++) { // interleaved: both see the same machine
        const float *Bc = B + nb * ((2 * r) % copies);
        const float *Bd = B + nb * ((2 * r + 1) % copies);
        double tc = clef_cpu_time_s();
        fn(M, N, K, A, lda, Bc, ldb, C, N, 0);
        tc = clef_cpu_time_s() - tc;
        double td = clef_cpu_time_s();
        dnnl_sgemm(l == TN ? 'T' : 'N', l == NT ? 'T' : 'N', M, N, K, 1.0f, A,
                   lda, Bd, ldb, 0.0f, C, N);
        td = clef_cpu_time_s() - td;
        *t_clef = tc < *t_clef ? tc : *t_clef;
        *t_dnnl = td < *t_dnnl ? td : *t_dnnl;
        pair[r] = td / tc;
    }
    *ratio = bench_median(pair, REPS);
    free(A), free(B), free(C);
}

// One row of the gemm table: op l at (M, N, K) on table k against oneDNN,
// B hot, then cold.
static void gemm_row(const clef_kernels *k, int isa, const char *shape,
                     layout l, int M, int N, int K)
{
    double tc, td, uc, ud, rh, rc, fl = 2.0 * M * N * K;
    time_gemm(k, l, M, N, K, 0, &tc, &td, &rh);
    time_gemm(k, l, M, N, K, 1, &uc, &ud, &rc);
    printf("%-8s %-9s %-3s %5d %5d %5d %-32s %7.1f %7.1f %6.1f%% %7.1f %7.1f "
           "%6.1f%%\n",
           clef_isa_name(isa), shape, lname[l], M, N, K, k->names[l],
           fl / tc * 1e-9, fl / td * 1e-9, 100.0 * rh, fl / uc * 1e-9,
           fl / ud * 1e-9, 100.0 * rc);
}

static int bench_gemm(void)
{
    // the head's GEMMs (clef-bench shapes): the memory projection forward
    // (nt), its input gradient (nn) and its weight gradient (tn)
    struct {
        const char *shape;
        int T, d, w;
    } s[] = {{"mid", 256, 1024, 512}, {"released", 512, 5120, 1024}};
    const clef_kernels *tabs[] = {&clef_avx512_kernels, &clef_avx2_kernels};
    int isas[] = {CLEF_ISA_AVX512, CLEF_ISA_AVX2};
    printf("%-58s %-23s %s\n", "", "B hot (GFLOP/s)", "B cold (GFLOP/s)");
    printf("%-8s %-9s %-3s %5s %5s %5s %-32s %7s %7s %7s %7s %7s %7s\n", "isa",
           "shape", "op", "M", "N", "K", "kernel", "clef", "oneDNN", "ratio",
           "clef", "oneDNN", "ratio");
    for (int t = 0; t < 2; t++) {
        if (clef_cpu_get()->isa_native < isas[t]) {
            printf("%-8s SKIP (cpu lacks %s)\n", clef_isa_name(isas[t]),
                   clef_isa_name(isas[t]));
            continue;
        }
        for (int si = 0; si < 2; si++)
            for (int l = NT; l <= TN; l++) {
                int M = l == TN ? s[si].w : s[si].T;
                int N = l == NT ? s[si].w : s[si].d;
                int K = l == NT ? s[si].d : l == NN ? s[si].w : s[si].T;
                gemm_row(tabs[t], isas[t], s[si].shape, (layout)l, M, N, K);
            }
        // the released head's few-row products (batch 4: nb = 4 records,
        // Q = 32 questions, O = 128 options): a whole weight against the
        // records' g, the questions' qv or the options' rows, forward (nt,
        // W (N, K)) and their input gradients (nn, W (K, N))
        static const struct {
            const char *shape;
            layout l;
            int M, N, K;
        } r[] = {
            {"rows-nb", NT, 4, 1024, 5120},  {"rows-nb", NN, 4, 5120, 1024},
            {"rows-Q", NT, 32, 1024, 5120},  {"rows-Q", NN, 32, 5120, 1024},
            {"rows-Q", NT, 32, 4096, 1024},  {"rows-Q", NN, 32, 1024, 4096},
            {"rows-O", NT, 128, 1024, 5120}, {"rows-O", NN, 128, 5120, 1024},
        };
        for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
            gemm_row(tabs[t], isas[t], r[i].shape, r[i].l, r[i].M, r[i].N,
                     r[i].K);
    }
    return 0;
}

#define BEST(expr, out)                                                        \
    do {                                                                       \
        out = 1e30;                                                            \
        for (int r_ = 0; r_ < REPS; r_++) {                                    \
            double t_ = clef_cpu_time_s();                                     \
            expr;                                                              \
            t_ = clef_cpu_time_s() - t_;                                       \
            out = t_ < out ? t_ : out;                                         \
        }                                                                      \
    } while (0)

// The plain copy kernel the bandwidth goals compare with: one load and one
// store per float, no library tricks (non-temporal stores, rep movsb).
__attribute__((noinline,
               optimize("no-tree-loop-distribute-patterns"))) static void
plain_copy(size_t n, const float *restrict x, float *restrict y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
}

static void bw_row(const char *name, double bytes, double t, double copy)
{
    printf("%-36s %8.1f GB/s %6.1f%% of copy\n", name, bytes / t * 1e-9,
           100.0 * (bytes / t) / copy);
}

static int bench_bw(void)
{
    size_t n = (size_t)16 << 20; // floats per tensor: 64 MiB, far beyond L2
    int d = 1024, rows = (int)(n / d);
    float *x = aligned_alloc(64, n * 4), *y = aligned_alloc(64, n * 4);
    float *h = aligned_alloc(64, n * 4), *g = aligned_alloc(64, n * 4);
    float *m = aligned_alloc(64, n * 4), *v = aligned_alloc(64, n * 4);
    float *gm = malloc(d * 4), *bt = malloc(d * 4), *rs = malloc(rows * 4);
    float *dg = calloc(d, 4), *db = calloc(d, 4);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(i % 997) * 6e-3f - 3.0f; // GELU inputs over [−3, 3]
        y[i] = h[i] = 0.0f, g[i] = 1e-2f, m[i] = 0.0f, v[i] = 1e-3f;
    }
    for (int i = 0; i < d; i++)
        gm[i] = 1.0f, bt[i] = 0.0f;
    double t, copy;
    BEST(memcpy(y, x, n * 4), t);
    printf("%-36s %8.1f GB/s (read + write, 8 bytes per float)\n",
           "copy (memcpy)", 8.0 * n / t * 1e-9);
    BEST(plain_copy(n, x, y), t);
    copy = 8.0 * n / t;
    printf("%-36s %8.1f GB/s (the baseline below)\n", "copy (plain loop)",
           copy * 1e-9);
    const clef_kernels *tabs[] = {&clef_avx512_kernels, &clef_avx2_kernels};
    int isas[] = {CLEF_ISA_AVX512, CLEF_ISA_AVX2};
    clef_adamw_args a = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1e-2f, 0.03f};
    for (int ti = 0; ti < 2; ti++) {
        const clef_kernels *k = tabs[ti];
        if (clef_cpu_get()->isa_native < isas[ti])
            continue;
        BEST(k->layernorm_fwd(rows, d, x, gm, bt, y, h, rs), t);
        bw_row(k->names[CLEF_OP_layernorm_fwd], 12.0 * n, t,
               copy); // x; y, xhat
        BEST(k->layernorm_bwd(rows, d, g, h, rs, gm, y, dg, db), t);
        bw_row(k->names[CLEF_OP_layernorm_bwd], 16.0 * n, t,
               copy); // dy, xhat; dx rw
        BEST(k->gelu_fwd(n, x, y), t);
        bw_row(k->names[CLEF_OP_gelu_fwd], 8.0 * n, t, copy);
        BEST(k->gelu_bwd(n, x, g, y), t);
        bw_row(k->names[CLEF_OP_gelu_bwd], 16.0 * n, t, copy); // x, dy; dx rw
        BEST(k->adamw(n, h, g, m, v, &a), t);
        bw_row(k->names[CLEF_OP_adamw], 28.0 * n, t, copy); // θ,m,v rw; g
        BEST(k->softmax_fwd(rows, d, x, y), t);
        bw_row(k->names[CLEF_OP_softmax_fwd], 8.0 * n, t, copy);
    }
    free(x), free(y), free(h), free(g), free(m), free(v);
    free(gm), free(bt), free(rs), free(dg), free(db);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const clef_cpu *c = clef_cpu_get();
    printf("cpu: %s | native %s | L1d %zu KiB, L2 %zu KiB\n", c->model,
           clef_isa_name(c->isa_native), c->l1d >> 10, c->l2 >> 10);
    if (!strcmp(mode, "gemm"))
        return bench_gemm();
    if (!strcmp(mode, "bw"))
        return bench_bw();
    fprintf(stderr, "usage: isa-bench gemm|bw\n");
    return 2;
}

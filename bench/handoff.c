// clef-bench --handoff: what handing cache lines from one thread to another
// costs on this machine (docs/PERF-NOTES.md, "Threads").
//
//   clef-bench --handoff [--mb MB=1,8] [--rounds R=30]
//
// Thread 1 times three operations on a buffer of MB MiB, each in two states:
// "own" when thread 1 itself left the buffer so, "other" when thread 0 did.
//   read    sum the buffer         (own: 1 wrote it;  other: 0 wrote it)
//   rmw     add 1 to every float   (own: 1 wrote it;  other: 0 wrote it)
//   write   store over the buffer  (own: 1 read it;   other: 0 and 1 read it)
// Rates are GB/s of the buffer, medians over the rounds. On a shared VM the
// host may place the two vCPUs close or apart; the cross-core round trip
// printed with them (ping-pong of one line) says which.
#include "bench_handoff.h"
#include "median.h"

#include "cpu/cpu.h"
#include "scheduler/threads.h"

#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_READ, OP_RMW, OP_WRITE, NOPS, MAXROUNDS = 1000 };
static const char *const op_name[NOPS] = {"read", "rmw", "write"};

// The passes, portable: noipa so that the compiler can neither merge, hoist
// nor drop them; 8 partial sums so that the adds do not bound the read.
__attribute__((noipa)) static float read_c(const float *restrict x, size_t n)
{
    float s[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            s[k] += x[i + k];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

__attribute__((noipa)) static void rmw_c(float *restrict x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        x[i] += 1.f;
}

__attribute__((noipa)) static void write_c(float *restrict x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        x[i] = 2.f;
}

#if defined(__x86_64__)
#include <immintrin.h>
// Full cache lines per instruction, as the kernels move them (x is 64-byte
// aligned and n a multiple of 16). Used when the CPU and OS run AVX-512.
#define AVX512 __attribute__((noipa, target("avx512f")))
AVX512 static float read_z(const float *x, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        s0 = _mm512_add_ps(s0, _mm512_load_ps(x + i));
        s1 = _mm512_add_ps(s1, _mm512_load_ps(x + i + 16));
        s2 = _mm512_add_ps(s2, _mm512_load_ps(x + i + 32));
        s3 = _mm512_add_ps(s3, _mm512_load_ps(x + i + 48));
    }
    return _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

AVX512 static void rmw_z(float *x, size_t n)
{
    const __m512 one = _mm512_set1_ps(1.f);
    for (size_t i = 0; i < n; i += 16)
        _mm512_store_ps(x + i, _mm512_add_ps(_mm512_load_ps(x + i), one));
}

AVX512 static void write_z(float *x, size_t n)
{
    const __m512 two = _mm512_set1_ps(2.f);
    for (size_t i = 0; i < n; i += 16)
        _mm512_store_ps(x + i, two);
}
#endif

typedef struct passes {
    float (*read)(const float *, size_t);
    void (*rmw)(float *, size_t);
    void (*write)(float *, size_t);
    const char *isa;
} passes;

static passes pick_passes(void)
{
#if defined(__x86_64__)
    if (clef_isa_level() >= CLEF_ISA_AVX512)
        return (passes){read_z, rmw_z, write_z, "avx512"};
#endif
    return (passes){read_c, rmw_c, write_c, "portable C"};
}

// Thread 1's pass of op, timed, after the buffer was left in state `other`.
// Runs on both threads of the enclosing 2-thread region; sink is the
// calling thread's own (the sums only keep the reads alive).
static double one_case(const passes *p, float *x, size_t n, int op, int other,
                       int tid, volatile float *sink)
{
    double dt = 0.0;
#pragma omp barrier
    if (tid == 1) // start from lines thread 1 owns, modified
        p->rmw(x, n);
#pragma omp barrier
    if (op != OP_WRITE && other && tid == 0)
        p->rmw(x, n); // now thread 0 owns them, modified
    if (op == OP_WRITE && (other ? 1 : tid == 1))
        *sink += p->read(x, n); // shared by both, or by thread 1 alone
#pragma omp barrier
    if (tid == 1) {
        const double t0 = omp_get_wtime();
        if (op == OP_READ)
            *sink += p->read(x, n);
        else if (op == OP_RMW)
            p->rmw(x, n);
        else
            p->write(x, n);
        dt = omp_get_wtime() - t0;
    }
    return dt;
}

int clef_bench_handoff_run(size_t bytes, int rounds,
                           double rate[CLEF_HANDOFF_OPS][2])
{
    if (rounds < 1 || rounds > MAXROUNDS || bytes < 4096 ||
        clef_cpu_get()->pus < 2)
        return -1;
    const size_t n = bytes / 64 * 16; // whole cache lines
    const passes p = pick_passes();
    float *x = aligned_alloc(64, n * sizeof(float));
    double *t = malloc(sizeof(double) * NOPS * 2 * (size_t)rounds);
    int two = 0;
    if (!x || !t)
        goto out;
    memset(x, 0, n * sizeof(float));
    volatile float sink[2][16] = {{0.f}}; // a cache line per thread
#pragma omp parallel num_threads(2)
    {
        const int tid = omp_get_thread_num();
        if (omp_get_num_threads() == 2) {
            if (tid == 0)
                two = 1;
            for (int r = 0; r < rounds; r++)
                for (int c = 0; c < NOPS * 2; c++) {
                    const double dt =
                        one_case(&p, x, n, c / 2, c % 2, tid, &sink[tid][0]);
                    if (tid == 1)
                        t[(size_t)c * rounds + r] = dt;
                }
        }
    }
    for (int c = 0; two && c < NOPS * 2; c++) {
        const double s = bench_median(t + (size_t)c * rounds, rounds);
        rate[c / 2][c % 2] =
            s > 0 ? (double)(n * sizeof(float)) / s / 1e9 : NAN;
    }
out:
    free(x);
    free(t);
    return two ? 0 : -1;
}

// Ping-pong through an atomic. On this shared VM it is about 50 ns when the
// host runs the two vCPUs on one core complex and 300+ ns when it moves them
// apart.
double clef_bench_round_trip_ns(void)
{
    enum { N = 20000 };
    static _Alignas(64) atomic_int flag;
    double t0 = 0.0, t1 = 0.0;
    if (clef_cpu_get()->pus < 2) // two spinning threads on one CPU: no
        return NAN;
    atomic_store(&flag, 0);
#pragma omp parallel num_threads(2)
    {
        const int t = omp_get_thread_num();
        if (omp_get_num_threads() == 2) {
#pragma omp barrier
            if (t == 0)
                t0 = omp_get_wtime();
            for (int i = 0; i < N; i++) {
                const int want = 2 * i + t;
                while (atomic_load_explicit(&flag, memory_order_acquire) !=
                       want)
                    ;
                atomic_store_explicit(&flag, want + 1, memory_order_release);
            }
            if (t == 0)
                t1 = omp_get_wtime();
        }
    }
    return (t1 - t0) / N * 1e9;
}

int clef_bench_wants_handoff(int argc, char **argv)
{
    return argc > 1 && strcmp(argv[1], "--handoff") == 0;
}

static int bad(const char *flag, const char *v)
{
    fprintf(stderr,
            "clef-bench --handoff: %s: '%s' is not valid (see "
            "clef-bench --help)\n",
            flag, v ? v : "(missing)");
    return 2;
}

int clef_bench_handoff_main(int argc, char **argv)
{
    double mbs[8] = {1, 8};
    int nmb = 2, rounds = 30;
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(argv[i], "--mb") == 0 && v) {
            const double mb = strtod(v, &end);
            if (*end || !(mb >= 0.01 && mb <= 1024))
                return bad(argv[i], v);
            mbs[0] = mb, nmb = 1, i++;
        } else if (strcmp(argv[i], "--rounds") == 0 && v) {
            const long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > MAXROUNDS)
                return bad(argv[i], v);
            rounds = (int)r, i++;
        } else
            return bad(argv[i], v);
    }
    if (clef_cpu_get()->pus < 2) {
        printf("handoff SKIPPED: one CPU, no second thread to hand lines to\n");
        return 0;
    }
    clef_threads_setup(2); // threads 0 and 1 bound to cores 0 and 1
    printf("cross-core round trip %.0f ns; passes in %s\n",
           clef_bench_round_trip_ns(), pick_passes().isa);
    for (int m = 0; m < nmb; m++) {
        double rate[NOPS][2];
        const size_t bytes = (size_t)(mbs[m] * 1048576.0) / 64 * 64;
        if (clef_bench_handoff_run(bytes, rounds, rate)) {
            fprintf(stderr,
                    "clef-bench --handoff: %g MiB: no two threads or "
                    "no memory\n",
                    mbs[m]);
            return 1;
        }
        for (int op = 0; op < NOPS; op++)
            printf("handoff %-5s %6.2f MiB  own %7.1f GB/s  other %7.1f GB/s  "
                   "(%d rounds)\n",
                   op_name[op], mbs[m], rate[op][0], rate[op][1], rounds);
    }
    printf("cross-core round trip %.0f ns\n", clef_bench_round_trip_ns());
    return 0;
}

// The update loop allocates nothing: after a warm-up (first touch, GEMM
// packing buffers grown to size), clef_train_step on a fixed workspace makes
// no malloc, calloc, realloc or aligned allocation call, from any thread, on
// clef's own backends (scalar, avx2, avx512; auto's built-in order), on 1 and
// 2 threads.
//
// The library backends allocate inside the libraries on every call, which
// clef cannot prevent: oneDNN creates a dnnl_memory_t per operand and an
// execution context per dnnl_primitive_execute; BLIS opens an OpenMP region
// per call, and libgomp allocates a team of one. For them the test checks
// that the heap in use stays bounded across updates: oneDNN's internal
// caches still settle by a few hundred bytes after the warm-up, while a leak
// of anything per call (thousands of calls) would exceed the bound by far.
//
// This file interposes the allocator for the whole test binary: each entry
// point forwards to glibc's own (__libc_*) and counts only while a test has
// switched counting on. Under AddressSanitizer it counts through ASan's
// allocation hooks instead (see CLEF_TEST_ASAN below).
#include <criterion/criterion.h>
#include <errno.h>
#include <omp.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "head.h"
#include "ref_head.h"
#include "scheduler/registry.h"
#include "util.h"

static atomic_int g_counting;
static atomic_long g_calls;

static void count(void)
{
    if (atomic_load_explicit(&g_counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
}

#if defined(__SANITIZE_ADDRESS__)
#define CLEF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLEF_TEST_ASAN 1
#endif
#endif

#ifdef CLEF_TEST_ASAN
// Under AddressSanitizer (scripts/stages/60-sanitize.sh) the allocator
// belongs to ASan: replacing malloc would crash its start-up. Its hooks see
// every allocation instead (malloc, calloc, realloc, the aligned ones, from
// any thread), and its own statistics give the heap in use. GCC 12 ships
// no <sanitizer/allocator_interface.h>; both are in libasan (compiler-rt's
// allocator interface, declared here as there).
int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void *, size_t),
    void (*free_hook)(const volatile void *));
size_t __sanitizer_get_current_allocated_bytes(void);

static void on_malloc(const volatile void *p, size_t n)
{
    (void)p, (void)n;
    count();
}

static void on_free(const volatile void *p)
{
    (void)p;
}

static int g_hooked;

__attribute__((constructor)) static void install_hooks(void)
{
    g_hooked = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}

static long heap_in_use(void)
{
    return (long)__sanitizer_get_current_allocated_bytes();
}
#else
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    count();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    count();
    void *p = __libc_memalign(align, n);
    if (!p && n)
        return ENOMEM;
    *out = p;
    return 0;
}

static long heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)(m.uordblks + m.hblkhd);
}
#endif

#define NREC 3
// Records of different geometry, large enough that the threaded paths split
// (memory GEMMs over 4 MFLOP, AdamW over 2^17 parameters).
static const int rec_T[NREC] = {200, 57, 131};
static const int rec_Q[NREC] = {3, 1, 2};
static const int rec_types[NREC][4] = {{0, 2, 1}, {1}, {2, 1}};
static const int rec_nopt[NREC][4] = {{2, 3, 4}, {1}, {5, 2}};

// Allocation calls made during 4 updates after the warm-up; *grown: bytes
// of heap in use after them minus before.
static long calls_in_updates(const clef_kernels *k, int threads, long *grown)
{
    const clef_config cfg = {
        .d = 300, .w = 256, .h = 4, .f = 200, .R = 1, .L = 1};
    clef_head hd;
    clef_err err = {0};
    cr_assert_eq(clef_head_alloc(&hd, &cfg, &err), 0, "%s", err.msg);
    clef_head_init_random(&hd, 5);
    uint64_t rng = 77;
    const int V = 7;
    float *E = clef_test_falloc((size_t)V * cfg.d);
    clef_test_fill_normal(E, (size_t)V * cfg.d, 0.f, 1.f, &rng);
    clef_record recs[NREC];
    const clef_record *ptr[NREC];
    for (int b = 0; b < NREC; b++) {
        int soft[4] = {b & 1, 0, 1, 0};
        clef_test_random_record(&recs[b], rec_T[b], cfg.d, rec_Q[b],
                                rec_types[b], rec_nopt[b], soft, V, &rng);
        cr_assert_eq(clef_record_prepare(k, &recs[b], E, V, &err), 0, "%s",
                     err.msg);
        ptr[b] = &recs[b];
    }
    clef_ws_limits lim;
    clef_ws_limits_for(recs, NREC, NREC, &lim);
    clef_ws *ws = clef_ws_create_limits(&cfg, &lim);
    cr_assert_not_null(ws);
    clef_train_opts o;
    clef_train_opts_default(&o);
    o.max_grad_norm = 1.0; // the clipping pass too
    omp_set_num_threads(threads);
    // warm-up: every batch shape once (buffers grow to their largest)
    // (two rounds: the buffers have grown to their largest after one)
    for (int s = 0; s < 2; s++) {
        clef_train_step(k, &hd, ptr, NREC, ws, &o);
        clef_train_step(k, &hd, ptr + 1, NREC - 1, ws, &o);
    }
    const long heap0 = heap_in_use();
    atomic_store(&g_calls, 0);
    atomic_store(&g_counting, 1);
    for (int s = 0; s < 2; s++) {
        clef_train_step(k, &hd, ptr, NREC, ws, &o);
        clef_train_step(k, &hd, ptr + 1, NREC - 1, ws, &o);
    }
    atomic_store(&g_counting, 0);
    *grown = heap_in_use() - heap0;
    long calls = atomic_load(&g_calls);
    clef_ws_free(ws);
    for (int b = 0; b < NREC; b++)
        clef_record_free(&recs[b]);
    free(E);
    clef_head_free(&hd);
    return calls;
}

// library: 1 for oneDNN and BLIS (they may allocate, but must not retain).
static void expect_no_allocation(const char *backend, int library)
{
    const clef_backend *be = clef_backend_find(backend);
    cr_assert_not_null(be, "backend %s not registered", backend);
    const char *why = clef_backend_unavailable(be);
    if (why)
        cr_skip_test("backend %s: %s", backend, why);
    const int before = omp_get_max_threads();
    for (int t = 1; t <= 2; t++) {
        long grown = 0, calls = calls_in_updates(be->table, t, &grown);
        if (!library)
            cr_expect_eq(calls, 0,
                         "%s, %d thread(s): %ld allocation calls in 4 updates",
                         backend, t, calls);
        const long bound = library ? 64 << 10 : 0;
        cr_expect(grown <= bound,
                  "%s, %d thread(s): heap grew by %ld bytes in "
                  "4 updates (%ld allocation calls)",
                  backend, t, grown, calls);
    }
    omp_set_num_threads(before);
}

// The counter itself must be able to fail.
Test(noalloc, the_counter_sees_allocations)
{
#ifdef CLEF_TEST_ASAN
    cr_assert(g_hooked, "ASan refused the allocation hooks");
#endif
    atomic_store(&g_calls, 0);
    atomic_store(&g_counting, 1);
    // volatile: the compiler may drop an allocation nothing reads (GCC does
    // for calloc/aligned_alloc + free under -fsanitize=address)
    void *volatile p = malloc(64), *volatile q = calloc(4, 8),
                   *volatile r = aligned_alloc(64, 128);
    p = realloc(p, 256);
    atomic_store(&g_counting, 0);
    long calls = atomic_load(&g_calls);
    cr_expect_eq(calls, 4, "%ld allocation calls counted, not 4", calls);
    free(p), free(q), free(r);
}

Test(noalloc, scalar)
{
    expect_no_allocation("scalar", 0);
}
Test(noalloc, avx2)
{
    expect_no_allocation("avx2", 0);
}
Test(noalloc, avx512)
{
    expect_no_allocation("avx512", 0);
}
Test(noalloc, onednn_retains_nothing)
{
    expect_no_allocation("onednn", 1);
}
Test(noalloc, blis_retains_nothing)
{
    expect_no_allocation("blis", 1);
}

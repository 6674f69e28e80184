// oneDNN plumbing: the CPU engine (one per process), a stream per thread,
// the primitive cache and per-thread scratch.
//
// The cache: CACHE_SLOTS primitives keyed by (kind, sizes, strides,
// accumulate, thread count: oneDNN plans a primitive's threads when it
// creates it). A lookup holds the mutex for a few compares; a miss builds
// the primitive outside the mutex (milliseconds) and inserts it, evicting
// the least recently used entry nobody holds. When every slot is held the
// primitive is used once and destroyed (counted as `uncached`).
#include "onednn_int.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS 512

static dnnl_engine_t g_engine;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void)
{
    if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success)
        g_engine = NULL;
}

dnnl_engine_t clef_onednn_engine(void)
{
    pthread_once(&g_engine_once, engine_init);
    return g_engine;
}

// A stream per thread: oneDNN streams are not meant to be shared between
// threads that execute concurrently. Created on a thread's first call, kept
// for its life (OpenMP threads are pooled).
static _Thread_local dnnl_stream_t tls_stream;

dnnl_stream_t clef_onednn_stream(void)
{
    if (tls_stream)
        return tls_stream;
    dnnl_engine_t e = clef_onednn_engine();
    if (!e || dnnl_stream_create(&tls_stream, e, dnnl_stream_default_flags) !=
                  dnnl_success)
        tls_stream = NULL;
    return tls_stream;
}

int clef_onednn_create(dnnl_primitive_t *prim, const_dnnl_op_desc_t desc,
                       const_dnnl_primitive_attr_t attr,
                       const_dnnl_primitive_desc_t hint)
{
    dnnl_engine_t e = clef_onednn_engine();
    dnnl_primitive_desc_t pd = NULL;
    *prim = NULL;
    if (!e || dnnl_primitive_desc_create(&pd, desc, attr, e, hint) !=
                  dnnl_success)
        return -1;
    dnnl_status_t st = dnnl_primitive_create(prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        *prim = NULL;
        return -1;
    }
    return 0;
}

// ---- the cache ----
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static clef_onednn_prim g_slots[CACHE_SLOTS];
static unsigned long long g_tick;
static long g_hits, g_misses, g_evictions, g_uncached;

static clef_onednn_prim *find_locked(const clef_onednn_key *key)
{
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (g_slots[i].used && memcmp(&g_slots[i].key, key, sizeof *key) == 0)
            return &g_slots[i];
    return NULL;
}

// A free slot, else the least recently used one nobody holds (its primitive
// destroyed), else NULL.
static clef_onednn_prim *victim_locked(void)
{
    clef_onednn_prim *lru = NULL;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        clef_onednn_prim *s = &g_slots[i];
        if (!s->used)
            return s;
        if (s->refs == 0 && (!lru || s->last_use < lru->last_use))
            lru = s;
    }
    if (lru) {
        dnnl_primitive_destroy(lru->prim);
        memset(lru, 0, sizeof *lru);
        g_evictions++;
    }
    return lru;
}

clef_onednn_prim *clef_onednn_acquire(const clef_onednn_key *k,
                                      clef_onednn_build_fn build)
{
    clef_onednn_key kt;
    memcpy(&kt, k, sizeof kt); // padding too: keys compare bytewise
    kt.threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const clef_onednn_key *key = &kt;
    pthread_mutex_lock(&g_lock);
    clef_onednn_prim *p = find_locked(key);
    if (p) {
        p->refs++;
        p->last_use = ++g_tick;
        g_hits++;
        pthread_mutex_unlock(&g_lock);
        return p;
    }
    g_misses++;
    pthread_mutex_unlock(&g_lock);

    // Build outside the lock: other shapes keep running meanwhile.
    clef_onednn_prim fresh;
    memset(&fresh, 0, sizeof fresh);
    memcpy(&fresh.key, key, sizeof *key);
    if (build(&fresh) != 0)
        return NULL;

    pthread_mutex_lock(&g_lock);
    p = find_locked(key); // another thread may have built it meanwhile
    if (p) {
        p->refs++;
        p->last_use = ++g_tick;
        pthread_mutex_unlock(&g_lock);
        dnnl_primitive_destroy(fresh.prim);
        return p;
    }
    p = victim_locked();
    if (p) {
        memcpy(p, &fresh, sizeof *p);
        p->used = 1;
        p->refs = 1;
        p->last_use = ++g_tick;
        pthread_mutex_unlock(&g_lock);
        return p;
    }
    g_uncached++;
    pthread_mutex_unlock(&g_lock);
    p = malloc(sizeof *p);
    if (!p) {
        dnnl_primitive_destroy(fresh.prim);
        return NULL;
    }
    memcpy(p, &fresh, sizeof *p);
    p->owned = 1;
    p->refs = 1;
    return p;
}

void clef_onednn_release(clef_onednn_prim *p)
{
    if (!p)
        return;
    if (p->owned) {
        dnnl_primitive_destroy(p->prim);
        free(p);
        return;
    }
    pthread_mutex_lock(&g_lock);
    p->refs--;
    pthread_mutex_unlock(&g_lock);
}

void clef_onednn_cache_get_stats(clef_onednn_cache_stats *s)
{
    pthread_mutex_lock(&g_lock);
    s->hits = g_hits, s->misses = g_misses;
    s->evictions = g_evictions, s->uncached = g_uncached;
    s->entries = 0;
    for (int i = 0; i < CACHE_SLOTS; i++)
        s->entries += g_slots[i].used;
    s->capacity = CACHE_SLOTS;
    pthread_mutex_unlock(&g_lock);
}

void clef_onednn_cache_clear(void)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        clef_onednn_prim *s = &g_slots[i];
        if (s->used && s->refs == 0) {
            dnnl_primitive_destroy(s->prim);
            memset(s, 0, sizeof *s);
        }
    }
    pthread_mutex_unlock(&g_lock);
}

// ---- execution ----
int clef_onednn_run(const clef_onednn_prim *p, int n,
                    const clef_onednn_arg *args)
{
    enum { MAX_ARGS = 12 };
    dnnl_exec_arg_t ea[MAX_ARGS];
    dnnl_stream_t s = clef_onednn_stream();
    int made = 0, rc = -1;
    if (!s || n > MAX_ARGS)
        return -1;
    for (; made < n; made++) {
        ea[made].arg = args[made].arg;
        if (dnnl_memory_create(&ea[made].memory, args[made].md,
                               clef_onednn_engine(),
                               (void *)args[made].ptr) != dnnl_success)
            goto cleanup;
    }
    if (dnnl_primitive_execute(p->prim, s, n, ea) == dnnl_success &&
        dnnl_stream_wait(s) == dnnl_success)
        rc = 0;
cleanup:
    for (int i = 0; i < made; i++)
        dnnl_memory_destroy(ea[i].memory);
    return rc;
}

int clef_onednn_threads_begin(int serial)
{
    int saved = omp_get_max_threads();
    if (serial && saved > 1)
        omp_set_num_threads(1);
    return saved;
}

void clef_onednn_threads_end(int saved)
{
    if (omp_get_max_threads() != saved)
        omp_set_num_threads(saved);
}

// ---- scratch ----
static _Thread_local float *tls_scratch;
static _Thread_local size_t tls_scratch_n;

float *clef_onednn_scratch(size_t n)
{
    if (n <= tls_scratch_n)
        return tls_scratch;
    float *p = realloc(tls_scratch, n * sizeof(float));
    if (!p)
        return NULL;
    tls_scratch = p;
    tls_scratch_n = n;
    return p;
}

// oneDNN plumbing: the CPU engine (one per process), per-thread state (a
// stream, scratch, the scratchpad of the primitives it runs), the primitive
// cache.
//
// The cache: CACHE_SLOTS primitives keyed by (kind, sizes, strides,
// accumulate). A lookup holds the mutex for a few compares; a miss builds
// the primitive outside the mutex (milliseconds) and inserts it, evicting
// the least recently used entry nobody holds. When every slot is held the
// primitive is used once and destroyed (counted as `uncached`).
//
// Per-thread state lives in a registry (a list under a mutex): a thread's
// entry is freed when the thread ends (a pthread key's destructor), and
// whatever is left (the main thread's, OpenMP's pooled threads'), the cache
// and the engine at process exit, so LeakSanitizer finds nothing.
#include "onednn_int.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS 512
#define PAD_ALIGN 64 // scratchpad alignment (bytes)

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

// ---- per-thread state ----
// oneDNN streams are not meant to be shared between threads that execute
// concurrently; scratch and scratchpads are written while a call runs.
typedef struct tls_state {
    dnnl_stream_t stream;
    float *scratch; // clef_onednn_scratch
    size_t scratch_n;
    void *pad; // scratchpad of the primitives this thread runs
    size_t pad_bytes;
    struct tls_state *prev, *next; // the registry
} tls_state;

static _Thread_local tls_state *tls;
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tls_state *g_reg;
static pthread_key_t g_reg_key;
static pthread_once_t g_reg_once = PTHREAD_ONCE_INIT;

static void state_free(tls_state *st)
{
    if (st->stream)
        dnnl_stream_destroy(st->stream);
    free(st->scratch);
    free(st->pad);
    free(st);
}

static void unlink_locked(tls_state *st)
{
    if (st->prev)
        st->prev->next = st->next;
    else
        g_reg = st->next;
    if (st->next)
        st->next->prev = st->prev;
}

// A thread ends: its state goes (unless process exit took it already).
static void thread_exit(void *arg)
{
    tls_state *st = arg, *s;
    pthread_mutex_lock(&g_reg_lock);
    for (s = g_reg; s && s != st; s = s->next)
        ;
    if (s)
        unlink_locked(st);
    pthread_mutex_unlock(&g_reg_lock);
    if (s)
        state_free(st);
}

static void reg_init(void)
{
    pthread_key_create(&g_reg_key, thread_exit);
}

// This thread's state, made and registered on its first call; NULL on out
// of memory.
static tls_state *state(void)
{
    if (tls)
        return tls;
    pthread_once(&g_reg_once, reg_init);
    tls_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    pthread_mutex_lock(&g_reg_lock);
    st->next = g_reg;
    if (g_reg)
        g_reg->prev = st;
    g_reg = st;
    pthread_mutex_unlock(&g_reg_lock);
    pthread_setspecific(g_reg_key, st);
    tls = st;
    return st;
}

int clef_onednn_thread_states(void)
{
    int n = 0;
    pthread_mutex_lock(&g_reg_lock);
    for (const tls_state *st = g_reg; st; st = st->next)
        n++;
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}

dnnl_stream_t clef_onednn_stream(void)
{
    tls_state *st = state();
    if (!st)
        return NULL;
    if (st->stream)
        return st->stream;
    dnnl_engine_t e = clef_onednn_engine();
    if (!e || dnnl_stream_create(&st->stream, e, dnnl_stream_default_flags) !=
                  dnnl_success)
        st->stream = NULL;
    return st->stream;
}

// This thread's scratchpad of at least n bytes (grown, never shrunk).
static void *scratchpad(size_t n)
{
    tls_state *st = state();
    if (!st)
        return NULL;
    if (n <= st->pad_bytes)
        return st->pad;
    size_t sz = (n + PAD_ALIGN - 1) / PAD_ALIGN * PAD_ALIGN;
    void *p = aligned_alloc(PAD_ALIGN, sz);
    if (!p)
        return NULL;
    free(st->pad);
    st->pad = p;
    st->pad_bytes = sz;
    return p;
}

float *clef_onednn_scratch(size_t n)
{
    tls_state *st = state();
    if (!st)
        return NULL;
    if (n <= st->scratch_n)
        return st->scratch;
    float *p = realloc(st->scratch, n * sizeof(float));
    if (!p)
        return NULL;
    st->scratch = p;
    st->scratch_n = n;
    return p;
}

// attr (or defaults) with a user-managed scratchpad: a new attribute.
static dnnl_primitive_attr_t user_pad_attr(const_dnnl_primitive_attr_t attr)
{
    dnnl_primitive_attr_t a = NULL;
    dnnl_status_t st = attr ? dnnl_primitive_attr_clone(&a, attr)
                            : dnnl_primitive_attr_create(&a);
    if (st != dnnl_success)
        return NULL;
    if (dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user) !=
        dnnl_success) {
        dnnl_primitive_attr_destroy(a);
        return NULL;
    }
    return a;
}

int clef_onednn_create(clef_onednn_prim *p, const_dnnl_op_desc_t desc,
                       const_dnnl_primitive_attr_t attr,
                       const_dnnl_primitive_desc_t hint)
{
    dnnl_engine_t e = clef_onednn_engine();
    dnnl_primitive_attr_t a = e ? user_pad_attr(attr) : NULL;
    dnnl_primitive_desc_t pd = NULL;
    int rc = -1;
    p->prim = NULL;
    if (!a || dnnl_primitive_desc_create(&pd, desc, a, e, hint) != dnnl_success)
        goto cleanup;
    const dnnl_memory_desc_t *pad =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    memset(&p->pad_md, 0, sizeof p->pad_md);
    p->pad_bytes = pad ? dnnl_memory_desc_get_size(pad) : 0;
    if (p->pad_bytes)
        p->pad_md = *pad;
    if (dnnl_primitive_create(&p->prim, pd) != dnnl_success) {
        p->prim = NULL;
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (a)
        dnnl_primitive_attr_destroy(a);
    return rc;
}

int clef_onednn_create_bwd(clef_onednn_prim *p, const_dnnl_op_desc_t bwd,
                           const_dnnl_op_desc_t fwd)
{
    dnnl_primitive_desc_t hint = NULL;
    if (dnnl_primitive_desc_create(&hint, fwd, NULL, clef_onednn_engine(),
                                   NULL) != dnnl_success)
        return -1;
    int rc = clef_onednn_create(p, bwd, NULL, hint);
    dnnl_primitive_desc_destroy(hint);
    return rc;
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
    const clef_onednn_key *key = k;
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

    // Build outside the lock: other shapes keep running meanwhile. Planned
    // for one thread (onednn_int.h), hints included.
    clef_onednn_prim fresh;
    memset(&fresh, 0, sizeof fresh);
    memcpy(&fresh.key, key, sizeof *key);
    int saved = clef_onednn_threads_begin();
    int built = build(&fresh);
    clef_onednn_threads_end(saved);
    if (built != 0)
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
    void *pad = p->pad_bytes ? scratchpad(p->pad_bytes) : NULL;
    int made = 0, rc = -1;
    if (!s || n + 1 > MAX_ARGS || (p->pad_bytes && !pad))
        return -1;
    for (; made < n; made++) {
        ea[made].arg = args[made].arg;
        if (dnnl_memory_create(&ea[made].memory, &p->md[args[made].md],
                               clef_onednn_engine(),
                               (void *)args[made].ptr) != dnnl_success)
            goto cleanup;
    }
    if (pad) {
        ea[made].arg = DNNL_ARG_SCRATCHPAD;
        if (dnnl_memory_create(&ea[made].memory, &p->pad_md,
                               clef_onednn_engine(), pad) != dnnl_success)
            goto cleanup;
        made++;
    }
    if (dnnl_primitive_execute(p->prim, s, made, ea) == dnnl_success &&
        dnnl_stream_wait(s) == dnnl_success)
        rc = 0;
cleanup:
    for (int i = 0; i < made; i++)
        dnnl_memory_destroy(ea[i].memory);
    return rc;
}

int clef_onednn_call(int kind, int64_t d0, int64_t d1,
                     clef_onednn_build_fn build, int n,
                     const clef_onednn_arg *args)
{
    clef_onednn_key key;
    memset(&key, 0, sizeof key);
    key.kind = kind;
    key.d[0] = d0, key.d[1] = d1;
    int saved = clef_onednn_threads_begin();
    clef_onednn_prim *p = clef_onednn_acquire(&key, build);
    int rc = -1;
    if (p) {
        rc = clef_onednn_run(p, n, args);
        clef_onednn_release(p);
    }
    clef_onednn_threads_end(saved);
    return rc;
}

int clef_onednn_threads_begin(void)
{
    int saved = omp_get_max_threads();
    if (saved > 1)
        omp_set_num_threads(1);
    return saved;
}

void clef_onednn_threads_end(int saved)
{
    if (omp_get_max_threads() != saved)
        omp_set_num_threads(saved);
}

// ---- process exit ----
// Every thread's state, the cache and the engine. Runs before libdnnl's own
// finalisers (the executable's run first), when no clef call is running.
__attribute__((destructor)) static void onednn_shutdown(void)
{
    pthread_mutex_lock(&g_reg_lock);
    tls_state *st = g_reg;
    g_reg = NULL;
    pthread_mutex_unlock(&g_reg_lock);
    while (st) {
        tls_state *next = st->next;
        state_free(st);
        st = next;
    }
    tls = NULL; // (other threads' entries are no longer in the registry)
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (g_slots[i].used)
            dnnl_primitive_destroy(g_slots[i].prim);
    memset(g_slots, 0, sizeof g_slots);
    pthread_mutex_unlock(&g_lock);
    if (g_engine)
        dnnl_engine_destroy(g_engine);
    g_engine = NULL;
}

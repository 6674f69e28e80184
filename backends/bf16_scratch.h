// Per-thread scratch for the bf16 GEMMs of the including file (the packed
// operands of backends/x86/bf16_pack.h's users, the widened ones of
// backends/gemm_bf16_widen.h's): portable C, any ISA.
#ifndef CLEF_BF16_SCRATCH_H
#define CLEF_BF16_SCRATCH_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// The packing scratch of the including file: an A and a B buffer, 64-byte
// aligned, kept per calling thread and grown once (kernels.h: no kernel
// allocates per call). A thread's buffers are freed when it exits, through a
// pthread key's destructor (sweep workers and OpenMP threads of nested teams
// come and go; a _Thread_local pointer alone leaks their buffers); the main
// thread's stay reachable through its TLS until the process ends.
typedef struct bf16_scratch {
    void *p;
    size_t n;
} bf16_scratch;

typedef struct bf16_scratch_pair {
    bf16_scratch a, b;
} bf16_scratch_pair;

static _Thread_local bf16_scratch_pair bf16_tls;
static pthread_key_t bf16_tls_key;
static pthread_once_t bf16_tls_once = PTHREAD_ONCE_INIT;
static int bf16_tls_key_ok;

static void bf16_tls_free(void *v)
{
    bf16_scratch_pair *s = v;
    free(s->a.p);
    free(s->b.p);
    memset(s, 0, sizeof *s);
}

static void bf16_tls_key_make(void)
{
    bf16_tls_key_ok = pthread_key_create(&bf16_tls_key, bf16_tls_free) == 0;
}

// s: &bf16_tls.a or &bf16_tls.b; at least n bytes, NULL on OOM.
static inline void *bf16_scratch_get(bf16_scratch *s, size_t n)
{
    if (s->n >= n)
        return s->p;
    n = (n + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(64, n);
    if (!p)
        return NULL;
    free(s->p);
    s->p = p;
    s->n = n;
    pthread_once(&bf16_tls_once, bf16_tls_key_make);
    if (bf16_tls_key_ok)
        pthread_setspecific(bf16_tls_key, &bf16_tls);
    return p;
}

#endif

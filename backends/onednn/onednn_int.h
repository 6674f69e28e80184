// Internals of the oneDNN backend: engine, per-thread stream, the primitive
// cache, per-thread scratch. Only backends/onednn/*.c and tests include it.
#ifndef CLEF_ONEDNN_INT_H
#define CLEF_ONEDNN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>

#include "onednn.h"

// Cached primitive kinds (one per oneDNN primitive clef builds).
enum {
    ONEDNN_GEMM_NT = 1,
    ONEDNN_GEMM_NN,
    ONEDNN_GEMM_TN,
    ONEDNN_LN_FWD,
    ONEDNN_LN_BWD,
    ONEDNN_GELU_FWD,
    ONEDNN_GELU_BWD,
    ONEDNN_SOFTMAX_FWD,
    ONEDNN_SOFTMAX_BWD,
};

#define ONEDNN_KEY_DIMS 6
#define ONEDNN_MAX_MD 4

// What identifies a primitive: its kind, sizes and strides (meaning per kind),
// and whether it accumulates into its output. Zero every key before filling
// it: keys are compared bytewise.
// The thread count is part of the key: oneDNN fixes a primitive's thread
// count (and work split) when it creates it. clef_onednn_acquire() fills it.
typedef struct clef_onednn_key {
    int kind;
    int accumulate;
    int64_t d[ONEDNN_KEY_DIMS];
    int threads; // omp_get_max_threads(), 1 inside a parallel region
} clef_onednn_key;

typedef struct clef_onednn_prim {
    clef_onednn_key key;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t md[ONEDNN_MAX_MD]; // per kind (see the builders)
    // cache bookkeeping (under the cache lock)
    unsigned long long last_use;
    int refs, used, owned; // owned: outside the cache, destroyed on release
} clef_onednn_prim;

// Fills p->prim and p->md from p->key. 0, or -1 when oneDNN refuses.
typedef int (*clef_onednn_build_fn)(clef_onednn_prim *p);

dnnl_engine_t clef_onednn_engine(void); // NULL when creation failed
dnnl_stream_t clef_onednn_stream(void); // this thread's; NULL on failure

// The cached primitive for key (built with build on a miss) at the calling
// thread's thread count (key->threads is overwritten), held until
// clef_onednn_release(). NULL when it cannot be built. Lookups take a mutex
// for a few compares; building happens outside it.
clef_onednn_prim *clef_onednn_acquire(const clef_onednn_key *key,
                                      clef_onednn_build_fn build);
void clef_onednn_release(clef_onednn_prim *p);

// Runs p with n (arg, md, pointer) triples on this thread's stream. 0 or -1.
typedef struct clef_onednn_arg {
    int arg;
    const dnnl_memory_desc_t *md;
    const void *ptr;
} clef_onednn_arg;
int clef_onednn_run(const clef_onednn_prim *p, int n,
                    const clef_onednn_arg *args);

// Small calls run on one thread: below these sizes a team of threads costs
// more than it saves (measured, oneDNN 2.6 on Zen 4: a 32x32x64 GEMM is
// faster on 1 thread, 64x64x64 on 2).
#define ONEDNN_SERIAL_FLOPS 262144.0 // 2^18 GEMM flops
#define ONEDNN_SERIAL_ELEMS 16384.0  // 2^14 elements (the "small" class)
// Caps this thread's OpenMP thread count at 1 when serial; returns the count
// to give back to clef_onednn_threads_end (omp_set_num_threads only changes
// the calling thread's setting).
int clef_onednn_threads_begin(int serial);
void clef_onednn_threads_end(int saved);

// This thread's scratch of at least n floats (grown, never shrunk, kept for
// the thread's life). NULL on out of memory.
float *clef_onednn_scratch(size_t n);

// The best hand-written table, for calls that fall through at run time.
const clef_kernels *clef_onednn_fallback(void);

// Creates a primitive from an op descriptor (attr and hint may be NULL).
int clef_onednn_create(dnnl_primitive_t *prim, const_dnnl_op_desc_t desc,
                       const_dnnl_primitive_attr_t attr,
                       const_dnnl_primitive_desc_t hint);

#endif

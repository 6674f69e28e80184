// Internals of the oneDNN backend: engine, per-thread stream, the primitive
// cache, per-thread scratch and scratchpads. Only backends/onednn/*.c and
// tests include it.
//
// Threads (issue 16): every primitive is created and executed with one
// OpenMP thread (clef_onednn_threads_begin), so oneDNN never splits a
// reduction (matmul's K, LayerNorm's γ/β sums) by the thread count, and
// never plans for a team it will not get inside clef's parallel regions.
// Parallelism comes from clef: a GEMM's output is cut into blocks fixed by
// its shape (gemm.c), the row-wise ops into chunks by core/rows.c, and each
// block runs on one thread of clef's team. Each primitive uses a
// user-managed scratchpad, the executing thread's (oneDNN's library
// scratchpad is a thread-local buffer of the creating thread's size, wrong
// for a cached primitive run on another thread).
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
    ONEDNN_GEMM_BF16_NT, // the same three layouts, bf16 src and weights
    ONEDNN_GEMM_BF16_NN,
    ONEDNN_GEMM_BF16_TN,
};

#define ONEDNN_KEY_DIMS 6
#define ONEDNN_MAX_MD 4

// What identifies a primitive: its kind, sizes and strides (meaning per kind),
// and whether it accumulates into its output. Zero every key before filling
// it: keys are compared bytewise. (Every primitive is planned for one
// thread, so the thread count is not part of it.)
typedef struct clef_onednn_key {
    int kind;
    int accumulate;
    int64_t d[ONEDNN_KEY_DIMS];
} clef_onednn_key;

typedef struct clef_onednn_prim {
    clef_onednn_key key;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t md[ONEDNN_MAX_MD]; // per kind (see the builders)
    dnnl_memory_desc_t pad_md;            // its scratchpad (user mode)
    size_t pad_bytes;                     // 0: needs none
    // cache bookkeeping (under the cache lock)
    unsigned long long last_use;
    int refs, used, owned; // owned: outside the cache, destroyed on release
} clef_onednn_prim;

// Fills p->prim and p->md from p->key. 0, or -1 when oneDNN refuses.
typedef int (*clef_onednn_build_fn)(clef_onednn_prim *p);

dnnl_engine_t clef_onednn_engine(void); // NULL when creation failed
dnnl_stream_t clef_onednn_stream(void); // this thread's; NULL on failure

// The cached primitive for key (built with build on a miss), held until
// clef_onednn_release(). NULL when it cannot be built. Lookups take a mutex
// for a few compares; building happens outside it.
clef_onednn_prim *clef_onednn_acquire(const clef_onednn_key *key,
                                      clef_onednn_build_fn build);
void clef_onednn_release(clef_onednn_prim *p);

// Runs p with n (arg, p->md index, pointer) triples on this thread's
// stream, with this thread's scratchpad. Call it between
// clef_onednn_threads_begin and _end. 0 or -1.
typedef struct clef_onednn_arg {
    int arg;
    int md; // index into the primitive's md[]
    const void *ptr;
} clef_onednn_arg;
int clef_onednn_run(const clef_onednn_prim *p, int n,
                    const clef_onednn_arg *args);

// One call of the primitive of kind and sizes (d0, d1) (every other key
// field 0; built with build on a miss), on this thread alone: threads,
// acquire, run, release. 0, or -1 when oneDNN refuses (the caller then
// runs clef_onednn_fallback()'s kernel).
int clef_onednn_call(int kind, int64_t d0, int64_t d1,
                     clef_onednn_build_fn build, int n,
                     const clef_onednn_arg *args);

// Sets this thread's OpenMP thread count to 1 (oneDNN plans and runs every
// primitive on the calling thread alone); returns the count to give back to
// clef_onednn_threads_end (omp_set_num_threads only changes the calling
// thread's setting).
int clef_onednn_threads_begin(void);
void clef_onednn_threads_end(int saved);

// This thread's scratch of at least n floats (grown, never shrunk, kept for
// the thread's life; freed when the thread ends or at process exit). NULL on
// out of memory.
float *clef_onednn_scratch(size_t n);

// Threads whose state (stream, scratch, scratchpad) is registered now: a
// thread's goes when it ends (tests).
int clef_onednn_thread_states(void);

// The best hand-written table, for calls that fall through at run time.
const clef_kernels *clef_onednn_fallback(void);

// Creates p->prim from an op descriptor (attr and hint may be NULL), with a
// user-managed scratchpad (p->pad_md, p->pad_bytes). 0 or -1.
int clef_onednn_create(clef_onednn_prim *p, const_dnnl_op_desc_t desc,
                       const_dnnl_primitive_attr_t attr,
                       const_dnnl_primitive_desc_t hint);
// Creates p->prim from a backward op descriptor, with the primitive
// descriptor of its forward op descriptor fwd as the hint. 0 or -1.
int clef_onednn_create_bwd(clef_onednn_prim *p, const_dnnl_op_desc_t bwd,
                           const_dnnl_op_desc_t fwd);

#endif

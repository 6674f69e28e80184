// The oneDNN backend's table: oneDNN kernels for the ops it has (the rest
// NULL, for the selector to fill; see onednn.h).
#include "onednn_int.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#include "backends/scalar/scalar.h"
#include "cpu/cpu.h" // clef_verbose

#define NATIVE(op) .op = clef_f32_##op##__onednn,
#define NATIVE_NAME(op) [CLEF_OP_##op] = "clef_f32_" #op "__onednn",
// clang-format off
#define ONEDNN_OPS(X)                                                          \
    X(gemm_nt) X(gemm_nn) X(gemm_tn) X(layernorm_fwd) X(layernorm_bwd)         \
    X(gelu_fwd) X(gelu_bwd) X(softmax_fwd) X(softmax_bwd)

// An op oneDNN lacks stays NULL here; the selector (scheduler/registry.c)
// gives it the best hand-written kernel.
#define BF16(op) .gemm_bf16_##op = clef_bf16_gemm_##op##__onednn,
#define BF16_NAME(op)                                                          \
    [CLEF_OP_gemm_bf16_##op] = "clef_bf16_gemm_" #op "__onednn",
#define ONEDNN_BF16_OPS(X) X(nt) X(nn) X(tn)
clef_kernels clef_onednn_table = {
    .backend = "onednn",
    ONEDNN_OPS(NATIVE)
    ONEDNN_BF16_OPS(BF16)
    .names = {ONEDNN_OPS(NATIVE_NAME) ONEDNN_BF16_OPS(BF16_NAME)},
};
// clang-format on

static const char *g_why;
static const clef_kernels *g_fallback = &clef_scalar_kernels;
static char g_version[32];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(g_version, sizeof g_version, "%d.%d.%d", v->major, v->minor,
             v->patch);
    if (!clef_onednn_engine()) {
        g_why = "oneDNN could not create a CPU engine";
        return;
    }
    if (clef_verbose())
        fprintf(stderr,
                "clef: onednn: oneDNN %s, OpenMP runtime, %d thread(s) "
                "(primitives on one thread each; GEMMs in blocks fixed by "
                "shape over clef's team)\n",
                g_version, omp_get_max_threads());
}

const char *clef_onednn_unavailable(void)
{
    pthread_once(&g_once, resolve);
    return g_why;
}

const clef_kernels *clef_onednn_kernels(void)
{
    pthread_once(&g_once, resolve);
    return &clef_onednn_table;
}

const clef_kernels *clef_onednn_fallback(void)
{
    pthread_once(&g_once, resolve);
    return g_fallback;
}

void clef_onednn_set_fallback(const clef_kernels *t)
{
    g_fallback = t;
}

const char *clef_onednn_version(void)
{
    pthread_once(&g_once, resolve);
    return g_version;
}

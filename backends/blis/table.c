// The BLIS backend's table: BLIS's GEMMs (every other op NULL, for the
// selector to fill), and what BLIS chose for this CPU.
#include <blis.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "blis_backend.h"
#include "cpu/cpu.h" // clef_verbose

// The GEMMs only: an op BLIS lacks stays NULL here, and the selector
// (scheduler/registry.c) gives it the best hand-written kernel.
clef_kernels clef_blis_table = {
    .backend = "blis",
    .gemm_nt = clef_f32_gemm_nt__blis,
    .gemm_nn = clef_f32_gemm_nn__blis,
    .gemm_tn = clef_f32_gemm_tn__blis,
    .names = {[CLEF_OP_gemm_nt] = "clef_f32_gemm_nt__blis",
              [CLEF_OP_gemm_nn] = "clef_f32_gemm_nn__blis",
              [CLEF_OP_gemm_tn] = "clef_f32_gemm_tn__blis"},
};

static char g_arch[32], g_version[32];
static char g_names[3][64]; // GEMM names with the sub-configuration
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    const char *arch = bli_arch_string(bli_arch_query_id());
    snprintf(g_arch, sizeof g_arch, "%s", arch ? arch : "unknown");
    snprintf(g_version, sizeof g_version, "%s", bli_info_get_version_str());
    static const char *const ops[3] = {"gemm_nt", "gemm_nn", "gemm_tn"};
    for (int i = 0; i < 3; i++)
        snprintf(g_names[i], sizeof g_names[i], "clef_f32_%s__blis_%s", ops[i],
                 g_arch);
    clef_blis_table.names[CLEF_OP_gemm_nt] = g_names[0];
    clef_blis_table.names[CLEF_OP_gemm_nn] = g_names[1];
    clef_blis_table.names[CLEF_OP_gemm_tn] = g_names[2];
    if (clef_verbose())
        fprintf(stderr,
                "clef: blis: BLIS %s, sub-configuration %s%s; %d thread(s) "
                "(omp_get_max_threads(); 1 inside parallel regions)\n",
                g_version, g_arch,
                strcmp(g_arch, "generic") == 0
                    ? " (BLIS does not know this CPU: portable C kernels, "
                      "auto avoids it)"
                    : "",
                omp_get_max_threads());
}

const char *clef_blis_unavailable(void)
{
    pthread_once(&g_once, resolve);
    return NULL;
}

const clef_kernels *clef_blis_kernels(void)
{
    pthread_once(&g_once, resolve);
    return &clef_blis_table;
}

const char *clef_blis_arch(void)
{
    pthread_once(&g_once, resolve);
    return g_arch;
}

int clef_blis_arch_is_generic(void)
{
    return strcmp(clef_blis_arch(), "generic") == 0;
}

const char *clef_blis_version(void)
{
    pthread_once(&g_once, resolve);
    return g_version;
}

// The backend registry (see registry.h): one line per backend.
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/amx/amx.h"
#include "backends/avx2/avx2.h"
#include "backends/avx512/avx512.h"
#include "backends/avx512_bf16/avx512_bf16.h"
#include "cpu/cpu.h"
#include "scheduler/tune.h" // auto
#ifndef CLEF_MINIMAL
#include "backends/blis/blis_backend.h"
#include "backends/onednn/onednn.h"
#endif

#if defined(__aarch64__)
#include <sys/auxv.h> // getauxval, AT_HWCAP
#include "backends/neon/neon.h"
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1) // asm/hwcap.h on arm64
#endif

const char *clef_need_neon(void)
{
    return getauxval(AT_HWCAP) & HWCAP_ASIMD ? NULL : "cpu lacks asimd";
}
#define CLEF_NEON_ENTRY                                                        \
    {                                                                          \
        "neon", &clef_neon_kernels, clef_need_neon                             \
    }
#else
#define CLEF_NEON_ENTRY                                                        \
    {                                                                          \
        "neon", NULL, NULL                                                     \
    } // arm64 builds only
#endif

const char *clef_need_avx2(void)
{
    const clef_cpu *c = clef_cpu_get();
    if (!c->avx2)
        return "cpu lacks avx2";
    if (!c->fma)
        return "cpu lacks fma";
    if (!c->f16c)
        return "cpu lacks f16c";
    if (clef_isa_level() < CLEF_ISA_AVX2)
        return "capped by CLEF_MAX_ISA";
    return NULL;
}

const char *clef_need_avx512(void)
{
    const clef_cpu *c = clef_cpu_get();
    if (!c->avx512f)
        return "cpu lacks avx512f";
    if (!c->avx512bw)
        return "cpu lacks avx512bw";
    if (!c->avx512dq)
        return "cpu lacks avx512dq";
    if (!c->avx512vl)
        return "cpu lacks avx512vl";
    if (!c->fma)
        return "cpu lacks fma";
    if (clef_isa_level() < CLEF_ISA_AVX512)
        return "capped by CLEF_MAX_ISA";
    return NULL;
}

const char *clef_need_avx512_bf16(void)
{
    const char *why = clef_need_avx512();
    if (why)
        return why;
    if (!clef_cpu_get()->avx512bf16)
        return "cpu lacks avx512_bf16";
    if (clef_isa_level() < CLEF_ISA_AVX512_BF16)
        return "capped by CLEF_MAX_ISA";
    return NULL;
}

const char *clef_need_amx(void)
{
    const char *why = clef_need_avx512_bf16();
    if (why)
        return why;
    const clef_cpu *c = clef_cpu_get();
    if (!c->amx)
        return c->amx_why; // cpu, OS tile state or the arch_prctl grant
    if (clef_isa_level() < CLEF_ISA_AMX)
        return "capped by CLEF_MAX_ISA";
    return NULL;
}

#if defined(__x86_64__) || defined(__i386__)
#include "scheduler/dispatch.h"

// 1 when name carries "__<tag>" followed by nothing, "_" or "(".
static int tagged(const char *name, const char *tag)
{
    const char *p = name ? strstr(name, "__") : NULL;
    for (; p; p = strstr(p + 2, "__")) {
        size_t n = strlen(tag);
        if (strncmp(p + 2, tag, n) == 0 &&
            (p[2 + n] == 0 || p[2 + n] == '(' || p[2 + n] == '_'))
            return 1;
    }
    return 0;
}

// The x86 hand-written tables carry only their own ops (amx, avx512_bf16:
// nothing but the bf16 GEMMs; avx2, avx512: every op): the first time one says
// it can run, each op it lacks gets the dispatcher's kernel for it under
// CLEF_MAX_ISA (the best hand-written one), pointer and name, one store
// each.
static void compose_x86(clef_kernels *t, const char *tag)
{
    int verbose = clef_verbose();
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        if (tagged(t->names[op], tag))
            continue;
        const clef_candidate *c =
            clef_dispatch_pick((clef_op)op, clef_isa_level(), NULL);
        clef_kernels_set(t, (clef_op)op, c->fn);
        t->names[op] = c->name;
        if (verbose)
            fprintf(stderr,
                    "clef: %s: %-16s -> %s (fall-through: %s has no kernel "
                    "for it; the dispatcher's)\n",
                    t->backend, clef_op_names[op], c->name, t->backend);
    }
}

#define X86_READY(name, table, tag, need)                                      \
    static pthread_once_t g_##name##_once = PTHREAD_ONCE_INIT;                 \
    static void name##_compose(void)                                           \
    {                                                                          \
        compose_x86(&table, tag);                                              \
    }                                                                          \
    static const char *name##_ready(void)                                      \
    {                                                                          \
        const char *why = need();                                              \
        if (!why)                                                              \
            pthread_once(&g_##name##_once, name##_compose);                    \
        return why;                                                            \
    }
X86_READY(avx2, clef_avx2_kernels, "avx2", clef_need_avx2)
X86_READY(avx512, clef_avx512_kernels, "avx512", clef_need_avx512)
X86_READY(avx512_bf16, clef_avx512_bf16_table, "avx512bf16",
          clef_need_avx512_bf16)
X86_READY(amx, clef_amx_table, "amx", clef_need_amx)
#undef X86_READY
#endif

#ifndef CLEF_MINIMAL
// The library backends export their tables as they fill them; the ops they
// lack are composed here, once, when they first say they can run: the best
// hand-written kernels take those ops (and oneDNN's refused shapes).
static pthread_once_t g_onednn_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_blis_once = PTHREAD_ONCE_INIT;

static void onednn_compose(void)
{
    clef_onednn_set_fallback(clef_best_handwritten()->table);
    clef_fill_fallthrough(&clef_onednn_table, "onednn");
}

static void blis_compose(void)
{
    clef_fill_fallthrough(&clef_blis_table, "blis");
}

static const char *onednn_ready(void)
{
    const char *why = clef_onednn_unavailable();
    if (!why)
        pthread_once(&g_onednn_once, onednn_compose);
    return why;
}

static const char *blis_ready(void)
{
    const char *why = clef_blis_unavailable();
    if (!why)
        pthread_once(&g_blis_once, blis_compose);
    return why;
}
#endif

// Backends whose tables are not written yet read {"name", NULL, NULL}.
// Declare a new table here (or include the backend's header) and fill its line.
static const clef_backend g_backends[] = {
    {"scalar", &clef_scalar_kernels, NULL},
#if defined(__x86_64__) || defined(__i386__)
    {"avx2", &clef_avx2_kernels, avx2_ready},
    {"avx512", &clef_avx512_kernels, avx512_ready},
    {"avx512_bf16", &clef_avx512_bf16_table, avx512_bf16_ready},
    {"amx", &clef_amx_table, amx_ready},
#else // x86 kernels are built for x86 targets only
    {"avx2", NULL, NULL},
    {"avx512", NULL, NULL},
    {"avx512_bf16", NULL, NULL},
    {"amx", NULL, NULL},
#endif
    CLEF_NEON_ENTRY,
#ifndef CLEF_MINIMAL // library backends (issue 6)
    {"onednn", &clef_onednn_table, onednn_ready},
    {"blis", &clef_blis_table, blis_ready},
#else
    {"onednn", NULL, NULL},
    {"blis", NULL, NULL},
#endif
    {"auto", &clef_auto_table,
     clef_auto_unavailable}, // per op: scheduler/tune.h
};

int clef_backend_count(void)
{
    return (int)(sizeof g_backends / sizeof g_backends[0]);
}

const clef_backend *clef_backend_at(int i)
{
    if (i < 0 || i >= clef_backend_count())
        return NULL;
    return &g_backends[i];
}

const clef_backend *clef_backend_find(const char *name)
{
    for (int i = 0; i < clef_backend_count(); i++)
        if (strcmp(g_backends[i].name, name) == 0)
            return &g_backends[i];
    return NULL;
}

const char *clef_backend_unavailable(const clef_backend *b)
{
    if (!b->table)
        return "not compiled in this build";
    return b->unavailable ? b->unavailable() : NULL;
}

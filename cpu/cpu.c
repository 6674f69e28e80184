// CPU detection: cpuid + XGETBV for ISA flags, hwloc for topology and caches.
// Built without ISA flags (see cpu.h).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE // syscall()
#endif
#include "cpu/cpu.h"

#ifdef CLEF_HAVE_HWLOC // off in CLEF_MINIMAL builds (aarch64 cross)
#include <hwloc.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CLEF_X86 1
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CLEF_AMX_LINUX 1
#endif

static clef_cpu g_cpu;
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

#ifdef CLEF_X86
// XCR0 via XGETBV; only called when cpuid reports OSXSAVE.
static uint64_t read_xcr0(void)
{
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static void detect_isa(clef_cpu *c)
{
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d))
        return;
    unsigned max_leaf = a;
    memcpy(c->vendor + 0, &b, 4);
    memcpy(c->vendor + 4, &d, 4);
    memcpy(c->vendor + 8, &cx, 4);
    c->vendor[12] = 0;

    __get_cpuid(1, &a, &b, &cx, &d);
    int osxsave = (cx >> 27) & 1;
    int fma = (cx >> 12) & 1;
    int f16c = (cx >> 29) & 1;
    int avx = (cx >> 28) & 1;
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    c->os_ymm = avx && (xcr0 & 0x6) == 0x6; // SSE + AVX state
    c->os_zmm =
        c->os_ymm && (xcr0 & 0xe0) == 0xe0; // opmask, ZMM_Hi256, Hi16_ZMM

    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, cx, d);
        c->amx_bf16 = (d >> 22) & 1;
        c->amx_tile = (d >> 24) & 1;
        c->avx2 = c->os_ymm && ((b >> 5) & 1);
        c->avx512f = c->os_zmm && ((b >> 16) & 1);
        c->avx512dq = c->os_zmm && ((b >> 17) & 1);
        c->avx512bw = c->os_zmm && ((b >> 30) & 1);
        c->avx512vl = c->os_zmm && ((b >> 31) & 1);
        c->avx512vnni = c->os_zmm && ((cx >> 11) & 1);
        __cpuid_count(7, 1, a, b, cx, d);
        c->avx512bf16 = c->os_zmm && ((a >> 5) & 1);
    }
    c->fma = c->os_ymm && fma;
    c->f16c = c->os_ymm && f16c;
    c->os_amx = (xcr0 & 0x60000) == 0x60000; // XTILECFG (17), XTILEDATA (18)

    // brand string: leaves 0x80000002..4
    __get_cpuid(0x80000000, &a, &b, &cx, &d);
    if (a >= 0x80000004) {
        unsigned r[12];
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2],
                        &r[4 * i + 3]);
        char brand[49];
        memcpy(brand, r, 48);
        brand[48] = 0;
        const char *s = brand;
        while (*s == ' ')
            s++;
        snprintf(c->model, sizeof c->model, "%s", s);
    }
}

// Linux keeps AMX tile data off until a process asks for it (since 5.16):
// without the grant the first tile instruction faults. Asked once, here, so
// every AMX kernel runs after it; the grant covers the whole process.
#define CLEF_ARCH_GET_XCOMP_PERM 0x1022
#define CLEF_ARCH_REQ_XCOMP_PERM 0x1023
#define CLEF_XFEATURE_XTILEDATA 18

static void detect_amx(clef_cpu *c)
{
    c->amx = 0;
    if (!c->amx_tile || !c->amx_bf16) {
        snprintf(c->amx_why, sizeof c->amx_why, "cpu lacks amx-%s",
                 c->amx_tile ? "bf16" : "tile");
        return;
    }
    if (!c->os_amx) {
        snprintf(c->amx_why, sizeof c->amx_why,
                 "the OS has not enabled tile state (XCR0 bits 17-18)");
        return;
    }
    if (!c->avx512bf16) { // the AMX level implies the AVX512-BF16 one
        snprintf(c->amx_why, sizeof c->amx_why, "cpu lacks avx512_bf16");
        return;
    }
#ifdef CLEF_AMX_LINUX
    if (syscall(SYS_arch_prctl, CLEF_ARCH_REQ_XCOMP_PERM,
                CLEF_XFEATURE_XTILEDATA) != 0) {
        snprintf(c->amx_why, sizeof c->amx_why,
                 "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) refused: %s",
                 strerror(errno));
        return;
    }
    unsigned long perm = 0;
    if (syscall(SYS_arch_prctl, CLEF_ARCH_GET_XCOMP_PERM, &perm) != 0 ||
        !(perm & (1ul << CLEF_XFEATURE_XTILEDATA))) {
        snprintf(c->amx_why, sizeof c->amx_why,
                 "arch_prctl(ARCH_GET_XCOMP_PERM) does not show XTILEDATA");
        return;
    }
    c->amx = 1;
    c->amx_why[0] = 0;
#else
    snprintf(c->amx_why, sizeof c->amx_why,
             "no way to request tile state on this OS");
#endif
}
#else
static void detect_isa(clef_cpu *c)
{
    (void)c;
}
static void detect_amx(clef_cpu *c)
{
    snprintf(c->amx_why, sizeof c->amx_why, "not an x86-64 CPU");
}
#endif

#ifdef CLEF_HAVE_HWLOC
static size_t cache_size(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, type, NULL);
    for (; o; o = hwloc_get_next_obj_by_type(topo, type, o)) {
        if (o->attr && o->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION)
            return (size_t)o->attr->cache.size;
    }
    return 0;
}

static void detect_topology(clef_cpu *c)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) != 0)
        goto cleanup;
    c->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    c->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    c->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int kinds = hwloc_cpukinds_get_nr(topo, 0);
    c->cpu_kinds = kinds > 0 ? kinds : 1;
    c->l1d = cache_size(topo, HWLOC_OBJ_L1CACHE);
    c->l2 = cache_size(topo, HWLOC_OBJ_L2CACHE);
    c->l3 = cache_size(topo, HWLOC_OBJ_L3CACHE);
cleanup:
    hwloc_topology_destroy(topo);
}
#else
// Without hwloc: topology and caches unknown (0); clef_cpu_l1d/l2 default.
static void detect_topology(clef_cpu *c)
{
    (void)c;
}
#endif

static int native_level(const clef_cpu *c)
{
    // the AVX-512 level includes the AVX2 one: its kernels hand narrow rows
    // to the AVX2 kernels
    if (c->avx512f && c->avx512bw && c->avx512dq && c->avx512vl && c->fma &&
        c->avx2 && c->f16c) {
        if (!c->avx512bf16)
            return CLEF_ISA_AVX512;
        return c->amx ? CLEF_ISA_AMX : CLEF_ISA_AVX512_BF16;
    }
    if (c->avx2 && c->fma && c->f16c)
        return CLEF_ISA_AVX2;
    return CLEF_ISA_SCALAR;
}

static void detect(void)
{
    clef_cpu *c = &g_cpu;
    memset(c, 0, sizeof *c);
    snprintf(c->model, sizeof c->model, "unknown");
    detect_isa(c);
    detect_topology(c);
    detect_amx(c);
    c->isa_native = native_level(c);
    c->isa = c->isa_native;
    const char *cap = getenv("CLEF_MAX_ISA");
    if (cap && cap[0]) {
        int lvl = clef_isa_parse(cap);
        if (lvl < 0)
            fprintf(stderr,
                    "clef: CLEF_MAX_ISA=%s: unknown ISA "
                    "(scalar|avx2|avx512|avx512_bf16|amx); ignored\n",
                    cap);
        else if (lvl < c->isa)
            c->isa = lvl;
    }
    if (clef_verbose())
        clef_cpu_print(c, stderr);
}

const clef_cpu *clef_cpu_get(void)
{
    pthread_once(&g_cpu_once, detect);
    return &g_cpu;
}

int clef_isa_level(void)
{
    return clef_cpu_get()->isa;
}

const char *clef_isa_name(int isa)
{
    switch (isa) {
    case CLEF_ISA_SCALAR:
        return "scalar";
    case CLEF_ISA_AVX2:
        return "avx2";
    case CLEF_ISA_AVX512:
        return "avx512";
    case CLEF_ISA_AVX512_BF16:
        return "avx512_bf16";
    case CLEF_ISA_AMX:
        return "amx";
    default:
        return NULL;
    }
}

int clef_isa_parse(const char *name)
{
    for (int i = CLEF_ISA_SCALAR; i <= CLEF_ISA_MAX; i++)
        if (name && strcmp(name, clef_isa_name(i)) == 0)
            return i;
    return -1;
}

void clef_cpu_print(const clef_cpu *c, void *fp)
{
    FILE *f = fp;
    fprintf(f, "clef: cpu %s (%s)\n", c->model, c->vendor);
    fprintf(f,
            "clef: isa avx2=%d fma=%d f16c=%d avx512f=%d bw=%d dq=%d vl=%d "
            "bf16=%d vnni=%d (os ymm=%d zmm=%d) -> native %s, using %s\n",
            c->avx2, c->fma, c->f16c, c->avx512f, c->avx512bw, c->avx512dq,
            c->avx512vl, c->avx512bf16, c->avx512vnni, c->os_ymm, c->os_zmm,
            clef_isa_name(c->isa_native), clef_isa_name(c->isa));
    fprintf(f, "clef: amx-tile=%d amx-bf16=%d (os tile state=%d): %s%s\n",
            c->amx_tile, c->amx_bf16, c->os_amx,
            c->amx ? "usable (XTILEDATA granted)" : "not usable: ",
            c->amx ? "" : c->amx_why);
    fprintf(f,
            "clef: %d package(s), %d core(s), %d PU(s), %d cpu kind(s); "
            "L1d %zu KiB, L2 %zu KiB, L3 %zu KiB (L3 not used)\n",
            c->packages, c->cores, c->pus, c->cpu_kinds, c->l1d >> 10,
            c->l2 >> 10, c->l3 >> 10);
}

size_t clef_cpu_l1d(void)
{
    size_t s = clef_cpu_get()->l1d;
    return s >= 8192 ? s : 32768;
}

size_t clef_cpu_l2(void)
{
    size_t s = clef_cpu_get()->l2;
    return s >= 65536 ? s : (1u << 20);
}

int clef_verbose(void)
{
    const char *v = getenv("CLEF_VERBOSE");
    return v && atoi(v) > 0;
}

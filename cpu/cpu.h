// CPU detection: ISA extensions (cpuid + XGETBV), topology and caches (hwloc).
//
// Compiled for baseline x86-64 (no ISA flags): it runs on any CPU and tells
// the dispatcher which kernels this one can execute.
//
// clef_cpu_get() is the ONE process-wide cached fact of the kernel library:
// the CPU does not change while the process runs, so it is detected once (on
// first call, thread-safe) and never freed. Everything else is passed in.
#ifndef CLEF_CPU_H
#define CLEF_CPU_H

#include <stddef.h>

// ISA levels, ordered: a level implies every level below it.
enum {
    CLEF_ISA_SCALAR = 0,
    CLEF_ISA_AVX2 = 1, // AVX2 + FMA + F16C, ymm state enabled by the OS
    CLEF_ISA_AVX512 =
        2, // AVX-512 F/BW/DQ/VL + the AVX2 level, zmm + opmask state
    CLEF_ISA_AVX512_BF16 = 3, // + AVX512-BF16 (vdpbf16ps)
    // + AMX-TILE and AMX-BF16, tile state enabled by the OS (XCR0 bits 17-18)
    // and granted to this process (arch_prctl ARCH_REQ_XCOMP_PERM)
    CLEF_ISA_AMX = 4,
    CLEF_ISA_MAX = CLEF_ISA_AMX,
};

typedef struct clef_cpu {
    char vendor[13];
    char model[64];
    // ISA flags (each already ANDed with OS support of its register state)
    int avx2, fma, f16c;
    int avx512f, avx512bw, avx512dq, avx512vl, avx512bf16, avx512vnni;
    int amx_tile, amx_bf16; // cpuid leaf 7 EDX bits 24, 22 (before the OS)
    int os_ymm, os_zmm;     // XCR0 bits 1,2 (ymm) and 5,6,7 (zmm, opmask)
    int os_amx;             // XCR0 bits 17,18 (XTILECFG, XTILEDATA)
    // AMX usable: cpuid + XCR0 + the kernel granted XTILEDATA to this
    // process (requested once, during detection); else amx_why says why
    int amx;
    char amx_why[96];
    int isa_native; // best level the CPU + OS can run
    int isa;        // after the CLEF_MAX_ISA cap
    // topology (hwloc; 0 when unknown)
    int packages, cores, pus, cpu_kinds;
    // caches in bytes, per core (L1d, L2) or per package (L3). L3 is reported
    // but never used for blocking: VMs often report a bogus one.
    size_t l1d, l2, l3;
} clef_cpu;

// Detected once per process (see above); never NULL.
const clef_cpu *clef_cpu_get(void);

// The ISA level kernels may use: native level capped by CLEF_MAX_ISA
// (scalar|avx2|avx512|avx512_bf16|amx). An unknown CLEF_MAX_ISA value is
// ignored with a warning on stderr.
int clef_isa_level(void);

// "scalar", "avx2", "avx512", "avx512_bf16", "amx"; NULL for an unknown
// level.
const char *clef_isa_name(int isa);
// Inverse of clef_isa_name; -1 for an unknown name.
int clef_isa_parse(const char *name);

// Prints model, ISA flags, cores and caches to f (a FILE *); used by
// CLEF_VERBOSE=1 and `clef --version`-style reports.
void clef_cpu_print(const clef_cpu *cpu, void *f);

// CLEF_VERBOSE > 0: print the CPU and every kernel choice on stderr.
int clef_verbose(void);

// L1d and L2 sizes used for GEMM blocking, with sane defaults (32 KiB, 1 MiB)
// when detection gave nothing.
size_t clef_cpu_l1d(void);
size_t clef_cpu_l2(void);

#endif

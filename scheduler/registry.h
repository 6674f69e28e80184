// The backend registry: every backend clef knows by name, whether this build
// carries it, and whether this CPU can run it. clef-bench, the CLI and the
// tests look backends up here; nothing else keeps a list of them.
//
// Adding a backend is one line in the table of registry.c:
//
//     {"avx512", &clef_avx512_kernels, clef_need_avx512},
//
// i.e. its name, its clef_kernels table (declared in the backend's own header,
// e.g. backends/avx512/avx512.h, or next to the table in registry.c) and a
// function that returns NULL when this CPU can run it, else the reason it
// cannot ("cpu lacks avx512f"). Until a backend is written its line reads
//
//     {"avx512", NULL, NULL},
//
// and every use of it reports "not compiled in this build". Strong references
// only (no weak symbols): the kernel objects live in a static library, and a
// weak reference would never pull them in.
//
// A test or a tool can also build a clef_backend of its own around any table
// (clef_backend b = {"broken", &my_table, NULL};): nothing here is global
// state except the constant table.
#ifndef CLEF_REGISTRY_H
#define CLEF_REGISTRY_H

#include "kernels.h"

typedef struct clef_backend {
    const char *name;          // "scalar", "avx2", ... as on the command line
    const clef_kernels *table; // NULL: not compiled in this build
    // NULL (or returns NULL): this CPU can run it; else returns the reason.
    const char *(*unavailable)(void);
} clef_backend;

// Registered backends, in a fixed order (scalar first: it is the reference).
int clef_backend_count(void);
const clef_backend *clef_backend_at(int i); // NULL when i is out of range
// By name; NULL for an unknown name.
const clef_backend *clef_backend_find(const char *name);

// NULL when b can run here, else why not: "not compiled in this build" when
// b->table is NULL, otherwise b->unavailable()'s reason.
const char *clef_backend_unavailable(const clef_backend *b);

// Availability checks the table uses (CPU detection from scheduler/cpu.h;
// they ignore CLEF_MAX_ISA, which caps only `auto`).
const char *clef_need_avx2(void);   // "cpu lacks avx2/fma/f16c" or NULL
const char *clef_need_avx512(void); // "cpu lacks avx512f" ... or NULL
// the bf16 GEMM backends: the avx512 level plus avx512_bf16; plus AMX (cpuid,
// XCR0 tile state and the XTILEDATA grant: cpu/cpu.h says which failed)
const char *clef_need_avx512_bf16(void);
const char *clef_need_amx(void);
#if defined(__aarch64__)
const char *clef_need_neon(void); // getauxval(AT_HWCAP) & HWCAP_ASIMD
#endif

#endif

// Helpers shared by tests/test_isa_*.c: the ISA backends under test, skipping
// with the reason when this CPU cannot run one, and tolerance checks scaled to
// the magnitude of the reference (units of FLT_EPSILON).
#ifndef CLEF_TEST_ISA_COMMON_H
#define CLEF_TEST_ISA_COMMON_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/registry.h"
#include "backends/scalar/scalar.h"
#include "util.h"

#if defined(__x86_64__)
#include "cpu/cpu.h"

// Skip the test unless this CPU runs the x86 bf16 packs
// (backends/x86/bf16_pack.h, amx_pack.h: AVX-512 F/BW/DQ/VL), which the AMX
// packs' layout tests and the AMX kernels on emulated tiles call directly.
static inline void avx512_packs_or_skip(void)
{
    const clef_cpu *cpu = clef_cpu_get();
    if (!cpu->avx512f || !cpu->avx512bw || !cpu->avx512vl || !cpu->avx512dq)
        cr_skip_test("cpu lacks AVX-512 F/BW/DQ/VL: the packs cannot run");
}
#endif

// The table of ISA backend `isa`, or skip the test with the reason.
static inline const clef_kernels *isa_table_or_skip(const char *isa)
{
    const clef_backend *b = clef_backend_find(isa);
    cr_assert_not_null(b, "backend %s not registered", isa);
    const char *why = clef_backend_unavailable(b);
    if (why)
        cr_skip_test("%s: %s", isa, why);
    return b->table;
}

// |got − want| ≤ units·FLT_EPSILON·(|want| + max|want|): errors relative to
// the array's scale (reductions: units grow with the reduced length).
static inline bool isa_close(const char *what, const float *got,
                             const float *want, size_t n, double units)
{
    double scale = clef_test_max_abs(want, n);
    bool ok = clef_test_close(got, want, n, units * CLEF_TEST_EPS * scale,
                              units * CLEF_TEST_EPS);
    if (!ok)
        fprintf(stderr, "  in %s (n=%zu, %.0f eps)\n", what, n, units);
    return ok;
}

// Bitwise equality (kernels that round exactly as the reference).
static inline bool isa_same(const char *what, const float *got,
                            const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fprintf(stderr, "  %s[%zu]: got %a, want %a (bitwise)\n", what, i,
                    got[i], want[i]);
            return false;
        }
    return true;
}

// Lengths every row/elementwise family runs over: every vector remainder
// of both ISAs (1..33) plus larger rows.
static const int isa_lengths[] = {
    1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,  18,
    19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 64, 100, 1000};
#define ISA_NLENGTHS ((int)(sizeof isa_lengths / sizeof isa_lengths[0]))

#endif

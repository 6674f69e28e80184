// Runtime per-op dispatch (see dispatch.h). Built without ISA flags.
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/amx/amx.h"
#include "backends/avx2/avx2.h"
#include "backends/avx512/avx512.h"
#include "backends/avx512_bf16/avx512_bf16.h"
#include "backends/scalar/scalar.h"
#include "cpu/cpu.h"
#include "scheduler/registry.h"

#define CLEF_MAX_CANDIDATES 5

// Per op, from the op list: avx512, avx2, scalar (every shape each; see
// dispatch.h); the bf16 GEMMs: amx, avx512_bf16, then avx512 and avx2 (their
// fp32 GEMMs on widened operands, for CPUs without bf16 arithmetic), scalar.
// clang-format off
#define CAND(op, unit, isa, tile, level, backend)                              \
    {CLEF_KSTR(op, unit, isa, tile), level, backend,                           \
     (void (*)(void))CLEF_KSYM(op, unit, isa, tile), NULL}
#define CAND_SCALAR(op, unit)                                                  \
    {CLEF_SSTR(op, unit), CLEF_ISA_SCALAR, "scalar",                           \
     (void (*)(void))CLEF_SSYM(op, unit), NULL}
#define CAND_ROW(op, sig, unit, work) CAND_ROW_##unit(op, unit)
#define CAND_ROW_F32(op, unit)                                                 \
    [CLEF_OP_##op] = {                                                         \
        CAND(op, unit, avx512, CLEF_AVX512_GEMM_TILE, CLEF_ISA_AVX512,         \
             "avx512"),                                                        \
        CAND(op, unit, avx2, CLEF_AVX2_GEMM_TILE, CLEF_ISA_AVX2, "avx2"),      \
        CAND_SCALAR(op, unit)},
#define CAND_ROW_gemm CAND_ROW_F32
#define CAND_ROW_flops CAND_ROW_F32
#define CAND_ROW_elems CAND_ROW_F32
#define CAND_ROW_bcvt CAND_ROW_F32
#define CAND_ROW_bgemm(op, unit)                                               \
    [CLEF_OP_##op] = {                                                         \
        CAND(op, unit, amx, CLEF_AMX_GEMM_TILE, CLEF_ISA_AMX, "amx"),          \
        CAND(op, unit, avx512bf16, CLEF_AVX512BF16_GEMM_TILE,                  \
             CLEF_ISA_AVX512_BF16, "avx512_bf16"),                             \
        CAND(op, unit, avx512, CLEF_AVX512_GEMM_TILE, CLEF_ISA_AVX512,         \
             "avx512"),                                                        \
        CAND(op, unit, avx2, CLEF_AVX2_GEMM_TILE, CLEF_ISA_AVX2, "avx2"),      \
        CAND_SCALAR(op, unit)},
// clang-format on

static const clef_candidate g_candidates[CLEF_OP_COUNT][CLEF_MAX_CANDIDATES] = {
    CLEF_OPS(CAND_ROW)};
#undef CAND_ROW
#undef CAND

const clef_candidate *clef_dispatch_candidates(clef_op op, int *count)
{
    int n = 0; // rows are zero-filled past their last candidate
    while (n < CLEF_MAX_CANDIDATES && g_candidates[op][n].name)
        n++;
    *count = n;
    return g_candidates[op];
}

static int accepts(const clef_candidate *c, const clef_shape *shape)
{
    if (!c->supported)
        return 1;
    return c->supported(shape);
}

const clef_candidate *clef_dispatch_pick(clef_op op, int max_isa,
                                         const clef_shape *shape)
{
    int n;
    const clef_candidate *c = clef_dispatch_candidates(op, &n);
    for (int i = 0; i < n; i++)
        if (c[i].isa <= max_isa && accepts(&c[i], shape))
            return &c[i];
    return NULL;
}

// Why the CPU (or the cap) cannot run level isa; NULL when it can.
static const char *isa_unavailable(int isa, int max_isa, char *buf, size_t len)
{
    const clef_cpu *c = clef_cpu_get();
    if (isa > c->isa_native) {
        snprintf(buf, len, "cpu lacks %s (native level %s)", clef_isa_name(isa),
                 clef_isa_name(c->isa_native));
        return buf;
    }
    if (isa > max_isa) {
        snprintf(buf, len, "capped at %s (CLEF_MAX_ISA or caller)",
                 clef_isa_name(max_isa));
        return buf;
    }
    return NULL;
}

int clef_dispatch_build(clef_kernels *out, int max_isa,
                        const char *backend_restriction, char *why,
                        size_t whylen)
{
    char tmp[160];
    const clef_cpu *cpu = clef_cpu_get();
    if (max_isa > cpu->isa_native)
        max_isa = cpu->isa_native;
    int only = -1; // restrict to one ISA level
    if (backend_restriction && backend_restriction[0] &&
        strcmp(backend_restriction, "auto") != 0) {
        only = clef_isa_parse(backend_restriction);
        if (only < 0) {
            snprintf(why, whylen,
                     "%s: not an ISA backend (scalar|avx2|avx512|auto)",
                     backend_restriction);
            return -1;
        }
        const char *r = isa_unavailable(only, max_isa, tmp, sizeof tmp);
        if (r) {
            snprintf(why, whylen, "%s: %s", backend_restriction, r);
            return -1;
        }
    }
    clef_kernels k;
    memset(&k, 0, sizeof k);
    k.backend = only >= 0 ? clef_isa_name(only) : "auto";
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        int n;
        const clef_candidate *c = clef_dispatch_candidates((clef_op)op, &n);
        const clef_candidate *best = NULL;
        int has_only = 0; // the restriction's level has a kernel for op
        for (int i = 0; i < n; i++)
            has_only |= c[i].isa == only;
        for (int i = 0; i < n && !best; i++) {
            if (c[i].isa > max_isa || (has_only && c[i].isa != only))
                continue;
            if (accepts(&c[i], NULL))
                best = &c[i];
        }
        if (!best) {
            snprintf(why, whylen, "%s: no kernel for op %s",
                     backend_restriction ? backend_restriction : "auto",
                     clef_op_names[op]);
            return -1;
        }
        clef_kernels_set(&k, (clef_op)op, best->fn);
        k.names[op] = best->name;
        if (op == CLEF_OP_gemm_nt) { // pre-packed operands of the same backend
            const clef_backend *bb = clef_backend_find(best->backend);
            k.prepack = bb && bb->table ? bb->table->prepack : NULL;
        }
    }
    if (clef_verbose()) {
        fprintf(stderr, "clef: dispatch (%s, max isa %s):\n", k.backend,
                clef_isa_name(max_isa));
        for (int op = 0; op < CLEF_OP_COUNT; op++)
            fprintf(stderr, "clef:   %-17s %s\n", clef_op_names[op],
                    k.names[op]);
        fprintf(stderr, "clef:   %-17s %s\n", "gemm_prepack",
                k.prepack ? k.prepack->name : "none");
    }
    *out = k;
    return 0;
}

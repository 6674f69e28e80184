// Runtime dispatch (scheduler/dispatch.h) and CPU detection (scheduler/cpu.h):
// complete composite tables, the cap, backend restrictions and their reasons.
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/registry.h"
#include "cpu/cpu.h"
#include "scheduler/dispatch.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

// What a kernel of op is called: its op name, but the bf16 GEMMs are
// clef_bf16_gemm_<nt|nn|tn>... (kernels.h, bgemm).
static const char *kernel_stem(clef_op op, char *buf, size_t n)
{
    const char *name = clef_op_names[op];
    if (!clef_op_is_bf16_gemm(op))
        return name;
    snprintf(buf, n, "bf16_gemm_%s", name + strlen("gemm_bf16_"));
    return buf;
}

// The suffix of the best bf16 GEMM at isa (amx, avx512_bf16, else the fp32
// GEMMs of avx512 or avx2 on widened operands, else scalar).
static const char *bf16_suffix(int isa)
{
    return isa >= CLEF_ISA_AMX           ? "__amx"
           : isa >= CLEF_ISA_AVX512_BF16 ? "__avx512bf16"
           : isa >= CLEF_ISA_AVX512      ? "__avx512"
           : isa >= CLEF_ISA_AVX2        ? "__avx2"
                                         : "__scalar";
}

Test(isa_dispatch, candidates_complete_and_ordered)
{
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        int n;
        const clef_candidate *c = clef_dispatch_candidates((clef_op)op, &n);
        cr_assert_geq(n, 1);
        for (int i = 0; i < n; i++) {
            cr_assert(c[i].name && c[i].fn, "op %s candidate %d incomplete",
                      clef_op_names[op], i);
            char stem[64];
            cr_assert(
                strstr(c[i].name, kernel_stem((clef_op)op, stem, sizeof stem)),
                "%s is not a kernel of %s", c[i].name, clef_op_names[op]);
            cr_assert(i == 0 || c[i].isa < c[i - 1].isa,
                      "op %s: candidates not best first", clef_op_names[op]);
        }
        cr_assert_eq(c[n - 1].isa, CLEF_ISA_SCALAR,
                     "op %s: scalar must be last", clef_op_names[op]);
    }
}

Test(isa_dispatch, build_native_is_complete_and_named)
{
    clef_kernels k;
    char why[160];
    const clef_cpu *cpu = clef_cpu_get();
    cr_assert_eq(
        clef_dispatch_build(&k, CLEF_ISA_AVX512, NULL, why, sizeof why), 0,
        "%s", why);
    cr_assert_eq(clef_kernels_first_missing(&k), CLEF_OP_COUNT);
    const char *suffix = cpu->isa_native >= CLEF_ISA_AVX512 ? "__avx512"
                         : cpu->isa_native == CLEF_ISA_AVX2 ? "__avx2"
                                                            : "__scalar";
    const int native =
        cpu->isa_native < CLEF_ISA_AVX512 ? cpu->isa_native : CLEF_ISA_AVX512;
    for (int op = 0; op < CLEF_OP_COUNT; op++) {
        const char *want =
            clef_op_is_bf16_gemm((clef_op)op) ? bf16_suffix(native) : suffix;
        cr_assert(ends_with(k.names[op], want), "op %s: %s, want *%s",
                  clef_op_names[op], k.names[op], want);
    }
    // uncapped, the bf16 GEMMs take the CPU's best bf16 kernel
    cr_assert_eq(
        clef_dispatch_build(&k, cpu->isa_native, NULL, why, sizeof why), 0,
        "%s", why);
    cr_assert(
        ends_with(k.names[CLEF_OP_gemm_bf16_nt], bf16_suffix(cpu->isa_native)),
        "%s", k.names[CLEF_OP_gemm_bf16_nt]);
    // the pointer is the named candidate's
    const clef_candidate *c =
        clef_dispatch_pick(CLEF_OP_gemm_nt, cpu->isa_native, NULL);
    cr_assert_eq((void (*)(void))k.gemm_nt, c->fn);
    cr_assert_str_eq(k.names[CLEF_OP_gemm_nt], c->name);
}

Test(isa_dispatch, cap_to_scalar_and_avx2)
{
    clef_kernels k;
    char why[160];
    cr_assert_eq(
        clef_dispatch_build(&k, CLEF_ISA_SCALAR, NULL, why, sizeof why), 0,
        "%s", why);
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        cr_assert(ends_with(k.names[op], "__scalar"), "%s", k.names[op]);
    cr_assert_eq((void (*)(void))k.layernorm_fwd,
                 (void (*)(void))clef_scalar_kernels.layernorm_fwd);
    if (clef_cpu_get()->isa_native < CLEF_ISA_AVX2)
        cr_skip_test("cpu lacks avx2: %s", clef_need_avx2());
    cr_assert_eq(clef_dispatch_build(&k, CLEF_ISA_AVX2, NULL, why, sizeof why),
                 0, "%s", why);
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        cr_assert(ends_with(k.names[op], "__avx2"), "%s", k.names[op]);
}

Test(isa_dispatch, restriction_and_reasons)
{
    clef_kernels k;
    memset(&k, 0, sizeof k);
    char why[160] = "";
    cr_assert_eq(
        clef_dispatch_build(&k, CLEF_ISA_AVX512, "sse9", why, sizeof why), -1);
    cr_assert(strstr(why, "sse9"), "reason: %s", why);
    cr_assert_null(k.names[0], "a failed build must leave the table untouched");
    // a restriction above the cap is refused, with the cap as the reason
    cr_assert_eq(
        clef_dispatch_build(&k, CLEF_ISA_SCALAR, "avx2", why, sizeof why), -1);
    cr_assert(strstr(why, "avx2") &&
                  (strstr(why, "capped") || strstr(why, "lacks")),
              "reason: %s", why);
    cr_assert_eq(
        clef_dispatch_build(&k, CLEF_ISA_AVX512, "scalar", why, sizeof why), 0,
        "%s", why);
    cr_assert_str_eq(k.backend, "scalar");
    if (clef_cpu_get()->isa_native < CLEF_ISA_AVX512) {
        cr_assert_eq(
            clef_dispatch_build(&k, CLEF_ISA_AVX512, "avx512", why, sizeof why),
            -1);
        cr_skip_test("cpu lacks avx512 (%s): restriction refused as it must be",
                     why);
    }
    cr_assert_eq(
        clef_dispatch_build(&k, CLEF_ISA_AVX512, "avx512", why, sizeof why), 0,
        "%s", why);
    // every op avx512's own, the bf16 GEMMs its fp32 ones on widened operands
    for (int op = 0; op < CLEF_OP_COUNT; op++)
        cr_assert(ends_with(k.names[op], "__avx512"), "%s", k.names[op]);
}

Test(isa_dispatch, cpu_detection_consistent)
{
    const clef_cpu *c = clef_cpu_get();
    cr_assert_eq(c, clef_cpu_get(), "detected once");
    cr_assert_leq(c->isa, c->isa_native);
    cr_assert(!c->avx512f || c->os_zmm,
              "avx512f reported without OS zmm state");
    cr_assert(!c->avx2 || c->os_ymm, "avx2 reported without OS ymm state");
    if (c->isa_native >= CLEF_ISA_AVX512)
        cr_assert(c->avx512f && c->avx512bw && c->avx512dq && c->avx512vl &&
                  c->fma);
    cr_assert_eq(clef_isa_parse("avx2"), CLEF_ISA_AVX2);
    cr_assert_eq(clef_isa_parse("nope"), -1);
    cr_assert_str_eq(clef_isa_name(clef_isa_parse("avx512")), "avx512");
    // the bf16 levels (issue 20): each implies the one below
    cr_assert_eq(clef_isa_parse("avx512_bf16"), CLEF_ISA_AVX512_BF16);
    cr_assert_eq(clef_isa_parse("amx"), CLEF_ISA_AMX);
    cr_assert_str_eq(clef_isa_name(CLEF_ISA_AMX), "amx");
    if (c->isa_native >= CLEF_ISA_AVX512_BF16)
        cr_assert(c->avx512bf16 && c->avx512f && c->avx512bw);
    if (c->isa_native >= CLEF_ISA_AMX)
        cr_assert(c->amx && c->amx_tile && c->amx_bf16 && c->os_amx &&
                  c->avx512bf16);
    cr_assert(c->amx || c->amx_why[0], "AMX unusable without a reason");
    cr_assert(!c->amx || (c->amx_tile && c->amx_bf16 && c->os_amx),
              "AMX usable without cpuid and XCR0 support");
    cr_assert_geq(clef_cpu_l1d(), 8192);
    cr_assert_geq(clef_cpu_l2(), 65536);
}

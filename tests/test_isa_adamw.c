// adamw of the ISA backends against the scalar reference: bitwise equal
// (torch's operation order, no FMA), n in 1..33, 1000 and 100003, with and
// without weight decay, at steps 1 and 1000.
#include "isa_common.h"

static void adamw_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0xada3u;
    int extra[] = {100003};
    for (int li = 0; li <= ISA_NLENGTHS; li++) {
        size_t n =
            li < ISA_NLENGTHS ? (size_t)isa_lengths[li] : (size_t)extra[0];
        for (int t = 1; t <= 1000; t += 999) {
            clef_adamw_args a = {
                1e-3f, 0.9f, 0.999f, 1e-8f, (t == 1) ? 0.01f : 0.0f, 0, 0};
            a.step_size = (float)(1e-3 / (1.0 - pow(0.9, t)));
            a.bc2_sqrt = (float)sqrt(1.0 - pow(0.999, t));
            float *th = clef_test_falloc(n), *g = clef_test_falloc(n),
                  *m = clef_test_falloc(n), *v = clef_test_falloc(n);
            float *thr = clef_test_falloc(n), *mr = clef_test_falloc(n),
                  *vr = clef_test_falloc(n);
            clef_test_fill_uniform(th, n, -1, 1, &rng);
            clef_test_fill_uniform(g, n, -1, 1, &rng);
            clef_test_fill_uniform(m, n, -0.1f, 0.1f, &rng);
            clef_test_fill_uniform(v, n, 0.0f, 0.01f, &rng);
            clef_test_fcopy(thr, th, n), clef_test_fcopy(mr, m, n),
                clef_test_fcopy(vr, v, n);
            k->adamw(n, th, g, m, v, &a);
            clef_scalar_kernels.adamw(n, thr, g, mr, vr, &a);
            cr_assert(isa_same("theta", th, thr, n) &&
                          isa_same("m", m, mr, n) && isa_same("v", v, vr, n),
                      "%s adamw n=%zu t=%d", isa, n, t);
            free(th), free(g), free(m), free(v), free(thr), free(mr), free(vr);
        }
    }
}

Test(isa_adamw, avx512)
{
    adamw_family("avx512");
}
Test(isa_adamw, avx2)
{
    adamw_family("avx2");
}

// softmax_fwd/bwd (rows) and softmax_seg_fwd/bwd (segments) of the ISA
// backends against the scalar reference, every n in 1..33 and larger, with
// −INF entries (must give exactly 0) and an all −INF row (zeros, never NaN).
// Tolerance (FLT_EPSILON units, relative to the output's scale): n + 8
// (exp a few ulp, one length-n sum).
#include "isa_common.h"

static void softmax_rows(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x50f7u;
    for (int li = 0; li < ISA_NLENGTHS; li++) {
        int n = isa_lengths[li], rows = 4;
        size_t sz = (size_t)rows * n;
        double units = n + 8.0;
        float *x = clef_test_falloc(sz), *y = clef_test_falloc(sz),
              *yr = clef_test_falloc(sz);
        float *dy = clef_test_falloc(sz), *dx = clef_test_falloc(sz),
              *dxr = clef_test_falloc(sz);
        clef_test_fill_uniform(x, sz, -8, 8, &rng);
        x[n - 1] = -INFINITY;       // row 0: one masked entry
        for (int i = 0; i < n; i++) // row 1: all masked
            x[(size_t)n + i] = -INFINITY;
        k->softmax_fwd(rows, n, x, y);
        clef_scalar_kernels.softmax_fwd(rows, n, x, yr);
        cr_assert(isa_close("y", y, yr, sz, units), "%s softmax_fwd n=%d", isa,
                  n);
        cr_assert(y[n - 1] == 0.0f, "%s softmax_fwd: -INF gives %g", isa,
                  y[n - 1]);
        for (int i = 0; i < n; i++)
            cr_assert(y[(size_t)n + i] == 0.0f,
                      "%s softmax_fwd: all -INF row gives %g", isa, y[n + i]);
        clef_test_fill_uniform(dy, sz, -1, 1, &rng);
        clef_test_fill_pattern(dx, sz), clef_test_fcopy(dxr, dx, sz);
        k->softmax_bwd(rows, n, yr, dy, dx);
        clef_scalar_kernels.softmax_bwd(rows, n, yr, dy, dxr);
        cr_assert(isa_close("dx", dx, dxr, sz, units), "%s softmax_bwd n=%d",
                  isa, n);
        free(x), free(y), free(yr), free(dy), free(dx), free(dxr);
    }
}

static void softmax_segments(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x5e6u;
    int nseg = 40, off[41];
    off[0] = 0;
    for (int s = 0; s < nseg; s++) // lengths 1..40, one empty segment
        off[s + 1] = off[s] + (s == 7 ? 0 : s + 1);
    int tot = off[nseg];
    float *x = clef_test_falloc(tot), *y = clef_test_falloc(tot),
          *yr = clef_test_falloc(tot);
    float *dy = clef_test_falloc(tot), *dx = clef_test_falloc(tot),
          *dxr = clef_test_falloc(tot);
    clef_test_fill_uniform(x, tot, -8, 8, &rng);
    k->softmax_seg_fwd(nseg, off, x, y);
    clef_scalar_kernels.softmax_seg_fwd(nseg, off, x, yr);
    cr_assert(isa_close("y", y, yr, tot, 48.0), "%s softmax_seg_fwd", isa);
    clef_test_fill_uniform(dy, tot, -1, 1, &rng);
    clef_test_fill_pattern(dx, tot), clef_test_fcopy(dxr, dx, tot);
    k->softmax_seg_bwd(nseg, off, yr, dy, dx);
    clef_scalar_kernels.softmax_seg_bwd(nseg, off, yr, dy, dxr);
    cr_assert(isa_close("dx", dx, dxr, tot, 48.0), "%s softmax_seg_bwd", isa);
    free(x), free(y), free(yr), free(dy), free(dx), free(dxr);
}

Test(isa_softmax, avx512_rows)
{
    softmax_rows("avx512");
}
Test(isa_softmax, avx2_rows)
{
    softmax_rows("avx2");
}
Test(isa_softmax, avx512_segments)
{
    softmax_segments("avx512");
}
Test(isa_softmax, avx2_segments)
{
    softmax_segments("avx2");
}

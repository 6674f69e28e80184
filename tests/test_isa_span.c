// span_mean / span_scatter and gather_rows / scatter_add_rows of the ISA
// backends against the scalar reference: bitwise equal (same order, no FMA),
// every n in 1..33 and larger, overlapping and empty spans, repeated indices.
#include "isa_common.h"

static void span_gather_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x59a4u;
    int T = 23, nspan = 6;
    int spans[12] = {0, 1, 2, 9, 5, 23, 22, 23, 4, 4, 3, 17}; // one empty span
    int nidx = 9, idx[9] = {0, 22, 5, 5, 17, 3, 22, 1, 5};
    for (int li = 0; li < ISA_NLENGTHS; li++) {
        int n = isa_lengths[li];
        size_t sx = (size_t)T * n, sy = (size_t)nspan * n,
               sg = (size_t)nidx * n;
        float *X = clef_test_falloc(sx), *Y = clef_test_falloc(sy),
              *Yr = clef_test_falloc(sy);
        float *dX = clef_test_falloc(sx), *dXr = clef_test_falloc(sx);
        float *G = clef_test_falloc(sg), *Gr = clef_test_falloc(sg);
        clef_test_fill_uniform(X, sx, -1, 1, &rng);
        k->span_mean(nspan, spans, n, X, Y);
        clef_scalar_kernels.span_mean(nspan, spans, n, X, Yr);
        cr_assert(isa_same("span_mean", Y, Yr, sy), "%s span_mean n=%d", isa,
                  n);
        clef_test_fill_pattern(dX, sx), clef_test_fcopy(dXr, dX, sx);
        k->span_scatter(nspan, spans, n, Yr, dX);
        clef_scalar_kernels.span_scatter(nspan, spans, n, Yr, dXr);
        cr_assert(isa_same("span_scatter", dX, dXr, sx), "%s span_scatter n=%d",
                  isa, n);
        k->gather_rows(nidx, idx, n, X, G);
        clef_scalar_kernels.gather_rows(nidx, idx, n, X, Gr);
        cr_assert(isa_same("gather_rows", G, Gr, sg), "%s gather_rows n=%d",
                  isa, n);
        k->scatter_add_rows(nidx, idx, n, Gr, dX);
        clef_scalar_kernels.scatter_add_rows(nidx, idx, n, Gr, dXr);
        cr_assert(isa_same("scatter_add_rows", dX, dXr, sx),
                  "%s scatter_add_rows n=%d", isa, n);
        free(X), free(Y), free(Yr), free(dX), free(dXr), free(G), free(Gr);
    }
}

Test(isa_span, avx512)
{
    span_gather_family("avx512");
}
Test(isa_span, avx2)
{
    span_gather_family("avx2");
}

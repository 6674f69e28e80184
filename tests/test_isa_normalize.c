// normalize_fwd/bwd and cosine_fwd/bwd of the ISA backends against the scalar
// reference, every n in 1..33 and larger, including a zero row (the
// |x| ≤ eps branch). Tolerance (FLT_EPSILON units, relative to each output's
// scale): 4 (n + 4) (length-n norms and dot products).
#include "isa_common.h"

static void normalize_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0x40e3u;
    for (int li = 0; li < ISA_NLENGTHS; li++) {
        int n = isa_lengths[li], rows = 3;
        size_t sz = (size_t)rows * n;
        double units = 4.0 * (n + 4);
        float *x = clef_test_falloc(sz), *b = clef_test_falloc(sz);
        float *y = clef_test_falloc(sz), *yr = clef_test_falloc(sz);
        float *nr = clef_test_falloc(rows), *nrr = clef_test_falloc(rows);
        float *dy = clef_test_falloc(sz), *dx = clef_test_falloc(sz),
              *dxr = clef_test_falloc(sz);
        clef_test_fill_uniform(x, sz, -1, 1, &rng);
        clef_test_fill_uniform(b, sz, -1, 1, &rng);
        clef_test_fill_const(x + n, n, 0.0f); // row 1 is zero
        k->normalize_fwd(rows, n, CLEF_NORMALIZE_EPS, x, y, nr);
        clef_scalar_kernels.normalize_fwd(rows, n, CLEF_NORMALIZE_EPS, x, yr,
                                          nrr);
        cr_assert(isa_close("y", y, yr, sz, units), "%s normalize_fwd n=%d",
                  isa, n);
        cr_assert(isa_close("nrm", nr, nrr, rows, units),
                  "%s normalize_fwd nrm n=%d", isa, n);
        clef_test_fill_uniform(dy, sz, -1, 1, &rng);
        clef_test_fill_pattern(dx, sz), clef_test_fcopy(dxr, dx, sz);
        k->normalize_bwd(rows, n, CLEF_NORMALIZE_EPS, yr, nrr, dy, dx);
        clef_scalar_kernels.normalize_bwd(rows, n, CLEF_NORMALIZE_EPS, yr, nrr,
                                          dy, dxr);
        cr_assert(isa_close("dx", dx, dxr, sz, units), "%s normalize_bwd n=%d",
                  isa, n);

        float *ah = clef_test_falloc(sz), *bh = clef_test_falloc(sz),
              *ahr = clef_test_falloc(sz), *bhr = clef_test_falloc(sz);
        float *na = clef_test_falloc(rows), *nb = clef_test_falloc(rows),
              *nar = clef_test_falloc(rows), *nbr = clef_test_falloc(rows),
              *c = clef_test_falloc(rows), *cr = clef_test_falloc(rows);
        k->cosine_fwd(rows, n, x, b, ah, bh, na, nb, c);
        clef_scalar_kernels.cosine_fwd(rows, n, x, b, ahr, bhr, nar, nbr, cr);
        cr_assert(isa_close("ahat", ah, ahr, sz, units) &&
                      isa_close("bhat", bh, bhr, sz, units),
                  "%s cosine_fwd hats n=%d", isa, n);
        cr_assert(isa_close("c", c, cr, rows, units), "%s cosine_fwd c n=%d",
                  isa, n);
        float *dc = clef_test_falloc(rows), *da = clef_test_falloc(sz),
              *dar = clef_test_falloc(sz), *db = clef_test_falloc(sz),
              *dbr = clef_test_falloc(sz);
        clef_test_fill_uniform(dc, rows, -1, 1, &rng);
        clef_test_fill_pattern(da, sz), clef_test_fcopy(dar, da, sz);
        clef_test_fill_pattern(db, sz), clef_test_fcopy(dbr, db, sz);
        k->cosine_bwd(rows, n, ahr, bhr, nar, nbr, dc, da, db);
        clef_scalar_kernels.cosine_bwd(rows, n, ahr, bhr, nar, nbr, dc, dar,
                                       dbr);
        cr_assert(isa_close("da", da, dar, sz, units) &&
                      isa_close("db", db, dbr, sz, units),
                  "%s cosine_bwd n=%d", isa, n);
        free(x), free(b), free(y), free(yr), free(nr), free(nrr), free(dy),
            free(dx), free(dxr);
        free(ah), free(bh), free(ahr), free(bhr), free(na), free(nb), free(nar),
            free(nbr);
        free(c), free(cr), free(dc), free(da), free(dar), free(db), free(dbr);
    }
}

Test(isa_normalize, avx512)
{
    normalize_family("avx512");
}
Test(isa_normalize, avx2)
{
    normalize_family("avx2");
}

// bias_add and colsum of the ISA backends against the scalar reference:
// bitwise equal (same per-column order, no FMA), every n in 1..33 and larger,
// 1..7 rows, and colsum across its 2048-column blocks; colsum accumulates
// into a pre-filled db.
#include "isa_common.h"

static void bias_family(const char *isa)
{
    const clef_kernels *k = isa_table_or_skip(isa);
    uint64_t rng = 0xb1a5u;
    for (int li = 0; li < ISA_NLENGTHS; li++)
        for (int rows = 1; rows <= 7; rows += 3) {
            int n = isa_lengths[li];
            size_t sz = (size_t)rows * n;
            float *b = clef_test_falloc(n), *y = clef_test_falloc(sz),
                  *yr = clef_test_falloc(sz);
            float *db = clef_test_falloc(n), *dbr = clef_test_falloc(n);
            clef_test_fill_uniform(b, n, -1, 1, &rng);
            clef_test_fill_uniform(y, sz, -1, 1, &rng);
            clef_test_fcopy(yr, y, sz);
            k->bias_add(rows, n, b, y);
            clef_scalar_kernels.bias_add(rows, n, b, yr);
            cr_assert(isa_same("bias_add y", y, yr, sz),
                      "%s bias_add rows=%d n=%d", isa, rows, n);
            clef_test_fill_pattern(db, n);
            clef_test_fcopy(dbr, db, n);
            k->colsum(rows, n, y, db);
            clef_scalar_kernels.colsum(rows, n, y, dbr);
            cr_assert(isa_same("colsum db", db, dbr, n),
                      "%s colsum rows=%d n=%d", isa, rows, n);
            free(b), free(y), free(yr), free(db), free(dbr);
        }
    // colsum's column blocks (2048 wide): one below, at and across edges
    const int wide[] = {2047, 2048, 2049, 4096 + 17};
    for (int li = 0; li < 4; li++) {
        const int rows = 5, n = wide[li];
        float *y = clef_test_falloc((size_t)rows * n);
        float *db = clef_test_falloc(n), *dbr = clef_test_falloc(n);
        clef_test_fill_uniform(y, (size_t)rows * n, -1, 1, &rng);
        clef_test_fill_pattern(db, n);
        clef_test_fcopy(dbr, db, n);
        k->colsum(rows, n, y, db);
        clef_scalar_kernels.colsum(rows, n, y, dbr);
        cr_assert(isa_same("colsum db", db, dbr, n), "%s colsum rows=%d n=%d",
                  isa, rows, n);
        free(y), free(db), free(dbr);
    }
}

Test(isa_bias, avx512)
{
    bias_family("avx512");
}
Test(isa_bias, avx2)
{
    bias_family("avx2");
}

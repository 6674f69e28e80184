// core/rows.c: row-wise and elementwise kernels split in fixed chunks across
// threads. For every backend, 1, 2 and 3 threads give the same bits (the
// chunks depend on the shape only); for the hand-written backends, whose
// kernels treat every row (element) on its own, the split result also equals
// one kernel call over all rows, bit for bit. Shapes: above the split
// threshold, with a partial last chunk; and one below it (a single call).
#include <omp.h>

#include "isa_common.h"
#include "rows.h"

enum { LN, BIAS, GELU_F, GELU_B, COPY, ZERO, NOPS };
static const char *op_name[] = {"layernorm_fwd", "bias_add", "gelu_fwd",
                                "gelu_bwd",      "copy",     "zero"};

// out: y | xhat | rstd (LN), y (the others); all of length 2·rows·n + rows
static void run_op(const clef_kernels *k, int op, int split, int rows, int n,
                   const float *x, const float *x2, const float *par,
                   float *out)
{
    const size_t e = (size_t)rows * n;
    float *y = out, *xhat = out + e, *rstd = out + 2 * e;
    switch (op) {
    case LN:
        if (split)
            clef_rows_layernorm_fwd(k, rows, n, x, par, par + n, y, xhat, rstd);
        else
            k->layernorm_fwd(rows, n, x, par, par + n, y, xhat, rstd);
        break;
    case BIAS:
        memcpy(y, x, sizeof(float) * e);
        if (split)
            clef_rows_bias_add(k, rows, n, par, y);
        else
            k->bias_add(rows, n, par, y);
        break;
    case GELU_F:
        if (split)
            clef_rows_gelu_fwd(k, e, x, y);
        else
            k->gelu_fwd(e, x, y);
        break;
    case GELU_B: // accumulates into dx
        memcpy(y, x2, sizeof(float) * e);
        if (split)
            clef_rows_gelu_bwd(k, e, x, x2, y);
        else
            k->gelu_bwd(e, x, x2, y);
        break;
    case COPY:
        if (split)
            clef_rows_copy(y, x, e);
        else
            memcpy(y, x, sizeof(float) * e);
        break;
    case ZERO:
        memcpy(y, x, sizeof(float) * e);
        if (split)
            clef_rows_zero(y, e);
        else
            memset(y, 0, sizeof(float) * e);
        break;
    }
}

static void rows_case(const char *name, int own, int rows, int n)
{
    const clef_kernels *k = isa_table_or_skip(name); // any backend
    const size_t e = (size_t)rows * n, len = 2 * e + rows;
    uint64_t rng = 0x5eedu + (uint64_t)rows * n;
    float *x = clef_test_falloc(e), *x2 = clef_test_falloc(e);
    float *par = clef_test_falloc(2 * (size_t)n);
    float *one = clef_test_falloc(len), *ref = clef_test_falloc(len);
    float *got = clef_test_falloc(len);
    clef_test_fill_uniform(x, e, -3, 3, &rng);
    clef_test_fill_uniform(x2, e, -1, 1, &rng);
    clef_test_fill_uniform(par, 2 * (size_t)n, -1, 1, &rng);
    const int saved = omp_get_max_threads();
    for (int op = 0; op < NOPS; op++) {
        memset(one, 0, sizeof(float) * len);
        run_op(k, op, 0, rows, n, x, x2, par, one);
        omp_set_num_threads(1);
        memset(ref, 0, sizeof(float) * len);
        run_op(k, op, 1, rows, n, x, x2, par, ref);
        if (own)
            cr_expect(memcmp(one, ref, sizeof(float) * len) == 0,
                      "%s %s rows=%d n=%d: split differs from one call", name,
                      op_name[op], rows, n);
        for (int t = 2; t <= 3; t++) {
            omp_set_num_threads(t);
            memset(got, 0, sizeof(float) * len);
            run_op(k, op, 1, rows, n, x, x2, par, got);
            cr_expect(memcmp(ref, got, sizeof(float) * len) == 0,
                      "%s %s rows=%d n=%d: %d threads differ from 1", name,
                      op_name[op], rows, n, t);
        }
    }
    omp_set_num_threads(saved);
    free(x), free(x2), free(par), free(one), free(ref), free(got);
}

static void rows_all(const char *name, int own)
{
    rows_case(name, own, 1003, 131); // split: 131 K elements, partial chunk
    rows_case(name, own, 8203, 8);   // split, narrow rows (8 at a time)
    rows_case(name, own, 37, 65);    // below the threshold: one call
}

Test(rows, scalar)
{
    rows_all("scalar", 1);
}
Test(rows, avx2)
{
    rows_all("avx2", 1);
}
Test(rows, avx512)
{
    rows_all("avx512", 1);
}
Test(rows, onednn)
{
    rows_all("onednn", 0);
}
Test(rows, blis)
{
    rows_all("blis", 0);
}

// Segmented softmax of the scalar backend: segments of lengths
// {1, 2, 3, 7, 13, 17, 31, 33} in a shuffled order, with an empty segment.
//   forward:  against a double softmax per segment, relative (len + 12)
//             FLT_EPSILON (as softmax), y overwritten.
//   backward: central finite differences in double of L = Σ w ⊙ y, tolerance
//             4 (len_max + 8) FLT_EPSILON · max|grad|; it must accumulate.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

static const int lens[] = {7, 1, 33, 0, 2, 17, 3, 31, 13, 1};
#define NSEG ((int)(sizeof(lens) / sizeof(lens[0])))
#define LEN_MAX 33

static int seg_offsets(int *off)
{
    off[0] = 0;
    for (int s = 0; s < NSEG; s++)
        off[s + 1] = off[s] + lens[s];
    return off[NSEG];
}

static void seg_ref(const int *off, const double *x, double *y)
{
    for (int s = 0; s < NSEG; s++)
        clef_test_ref_softmax(off[s + 1] - off[s], x + off[s], y + off[s]);
}

Test(softmax_seg, forward)
{
    uint64_t rng = 51;
    int off[NSEG + 1], total = seg_offsets(off);
    float *x = clef_test_falloc(total), *y = clef_test_falloc(total);
    double *xd = clef_test_dalloc(total), *yd = clef_test_dalloc(total);
    for (int rep = 0; rep < 3; rep++) {
        clef_test_fill_uniform(x, total, -4.0f + 50 * rep, 4.0f + 50 * rep,
                               &rng);
        if (rep == 2) // some −INF entries (never a whole segment here)
            for (int i = 1; i < total; i += 5)
                x[i] = -INFINITY;
        clef_test_to_double(x, xd, total);
        seg_ref(off, xd, yd);
        clef_test_fill_const(y, total, NAN);
        clef_scalar_kernels.softmax_seg_fwd(NSEG, off, x, y);
        for (int s = 0; s < NSEG; s++) {
            int len = off[s + 1] - off[s];
            cr_assert(clef_test_close_d(y + off[s], yd + off[s], len, 0,
                                        (len + 12) * CLEF_TEST_EPS),
                      "softmax_seg_fwd segment %d (len %d) rep %d", s, len,
                      rep);
        }
    }
    free(x), free(y), free(xd), free(yd);
}

typedef struct seg_ctx {
    const int *off;
    int total;
    double *x, *y;
    const double *w;
} seg_ctx;

static double seg_objective(void *p)
{
    seg_ctx *c = p;
    seg_ref(c->off, c->x, c->y);
    return clef_test_dot_d(c->w, c->y, c->total);
}

Test(softmax_seg, backward_fd_and_accumulates)
{
    uint64_t rng = 52;
    int off[NSEG + 1], total = seg_offsets(off);
    float *x = clef_test_falloc(total), *y = clef_test_falloc(total);
    float *w = clef_test_falloc(total), *dx = clef_test_falloc(total);
    float *pre = clef_test_falloc(total), *acc = clef_test_falloc(total);
    double *xd = clef_test_dalloc(total), *yd = clef_test_dalloc(total);
    double *wd = clef_test_dalloc(total), *fd = clef_test_dalloc(total);
    clef_test_fill_uniform(x, total, -4, 4, &rng);
    clef_test_fill_uniform(w, total, -1, 1, &rng);
    clef_test_to_double(x, xd, total);
    clef_test_to_double(w, wd, total);

    seg_ctx c = {off, total, xd, yd, wd};
    clef_test_fd_grad(xd, total, 1e-6, seg_objective, &c, fd);
    clef_scalar_kernels.softmax_seg_fwd(NSEG, off, x, y);
    clef_scalar_kernels.softmax_seg_bwd(NSEG, off, y, w, dx);
    bool ok = clef_test_grad_close("softmax_seg_bwd", dx, fd, total,
                                   4.0 * (LEN_MAX + 8));

    clef_test_fill_pattern(pre, total);
    clef_test_fcopy(acc, pre, total);
    clef_scalar_kernels.softmax_seg_bwd(NSEG, off, y, w, acc);
    bool ok2 = clef_test_accumulated(pre, dx, acc, total);
    free(x), free(y), free(w), free(dx), free(pre), free(acc);
    free(xd), free(yd), free(wd), free(fd);
    cr_assert(ok, "softmax_seg_bwd gradient");
    cr_assert(ok2, "softmax_seg_bwd must accumulate");
}

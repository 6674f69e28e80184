// Row softmax on oneDNN's softmax_v2 primitive (softmax_accurate, axis 1 of
// a (rows, n) tensor).
//
// kernels.h: a row of only −INF gives zeros; oneDNN gives NaN (−INF − −INF),
// so such rows are found before the call (x and y may alias) and zeroed. The
// backward's diff_src lands in scratch and is added to dx.
#include "onednn_int.h"

#include <math.h>
#include <string.h>

enum { MD_DATA };

static int init_fwd_desc(clef_onednn_prim *p, dnnl_softmax_v2_desc_t *d)
{
    dnnl_dims_t dims = {p->key.d[0], p->key.d[1]};
    if (dnnl_memory_desc_init_by_tag(&p->md[MD_DATA], 2, dims, dnnl_f32,
                                     dnnl_ab) != dnnl_success)
        return -1;
    return dnnl_softmax_v2_forward_desc_init(
               d, dnnl_forward_training, dnnl_softmax_accurate, &p->md[MD_DATA],
               &p->md[MD_DATA], 1) == dnnl_success
               ? 0
               : -1;
}

static int build_fwd(clef_onednn_prim *p)
{
    dnnl_softmax_v2_desc_t d;
    if (init_fwd_desc(p, &d) != 0)
        return -1;
    return clef_onednn_create(p, &d, NULL, NULL);
}

static int build_bwd(clef_onednn_prim *p)
{
    dnnl_softmax_v2_desc_t fd, bd;
    if (init_fwd_desc(p, &fd) != 0 ||
        dnnl_softmax_v2_backward_desc_init(&bd, dnnl_softmax_accurate,
                                           &p->md[MD_DATA], &p->md[MD_DATA],
                                           &p->md[MD_DATA], 1) != dnnl_success)
        return -1;
    return clef_onednn_create_bwd(p, &bd, &fd);
}

// 1 when row x (n) is entirely −INF (stops at the first other entry, so a
// normal row costs one compare).
static int row_masked(int n, const float *x)
{
    for (int i = 0; i < n; i++)
        if (x[i] != -INFINITY)
            return 0;
    return 1;
}

// y (rows,n) = softmax(x) per row
void clef_f32_softmax_fwd__onednn(int rows, int n, const float *x, float *y)
{
    if (rows <= 0 || n <= 0)
        return;
    // fully masked rows, found before y is written (x and y may alias)
    float *masked = clef_onednn_scratch((size_t)rows); // (rows) 1 or 0
    int any_masked = 0;
    for (int r = 0; masked && r < rows; r++) {
        masked[r] = (float)row_masked(n, x + (size_t)r * n);
        any_masked |= masked[r] != 0.0f;
    }
    clef_onednn_arg args[] = {{DNNL_ARG_SRC, MD_DATA, x},
                              {DNNL_ARG_DST, MD_DATA, y}};
    if (!masked ||
        clef_onednn_call(ONEDNN_SOFTMAX_FWD, rows, n, build_fwd, 2, args)) {
        clef_onednn_fallback()->softmax_fwd(rows, n, x, y);
        return;
    }
    for (int r = 0; any_masked && r < rows; r++)
        if (masked[r] != 0.0f)
            memset(y + (size_t)r * n, 0, (size_t)n * sizeof(float));
}

// dx (rows,n) += y ⊙ (dy − Σ dy ⊙ y)
void clef_f32_softmax_bwd__onednn(int rows, int n, const float *y,
                                  const float *dy, float *dx)
{
    if (rows <= 0 || n <= 0)
        return;
    size_t rn = (size_t)rows * n;
    float *t = clef_onednn_scratch(rn); // (rows,n) oneDNN's diff_src
    clef_onednn_arg args[] = {{DNNL_ARG_DST, MD_DATA, y},
                              {DNNL_ARG_DIFF_DST, MD_DATA, dy},
                              {DNNL_ARG_DIFF_SRC, MD_DATA, t}};
    if (!t ||
        clef_onednn_call(ONEDNN_SOFTMAX_BWD, rows, n, build_bwd, 3, args)) {
        clef_onednn_fallback()->softmax_bwd(rows, n, y, dy, dx);
        return;
    }
    for (size_t i = 0; i < rn; i++)
        dx[i] += t[i];
}

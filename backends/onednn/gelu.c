// Exact-erf GELU on oneDNN's eltwise primitive (dnnl_eltwise_gelu_erf), over
// n contiguous floats as a 1-D tensor. The backward's diff_src is
// overwritten by oneDNN, so it lands in scratch and is added to dx.
#include "onednn_int.h"

#include <string.h>

enum { MD_DATA };

static int init_fwd_desc(clef_onednn_prim *p, dnnl_eltwise_desc_t *d)
{
    dnnl_dims_t dims = {p->key.d[0]};
    if (dnnl_memory_desc_init_by_tag(&p->md[MD_DATA], 1, dims, dnnl_f32,
                                     dnnl_a) != dnnl_success)
        return -1;
    return dnnl_eltwise_forward_desc_init(
               d, dnnl_forward_training, dnnl_eltwise_gelu_erf, &p->md[MD_DATA],
               0.0f, 0.0f) == dnnl_success
               ? 0
               : -1;
}

static int build_fwd(clef_onednn_prim *p)
{
    dnnl_eltwise_desc_t d;
    if (init_fwd_desc(p, &d) != 0)
        return -1;
    return clef_onednn_create(p, &d, NULL, NULL);
}

static int build_bwd(clef_onednn_prim *p)
{
    dnnl_eltwise_desc_t fd, bd;
    if (init_fwd_desc(p, &fd) != 0 ||
        dnnl_eltwise_backward_desc_init(&bd, dnnl_eltwise_gelu_erf,
                                        &p->md[MD_DATA], &p->md[MD_DATA], 0.0f,
                                        0.0f) != dnnl_success)
        return -1;
    return clef_onednn_create_bwd(p, &bd, &fd);
}

// y (n) = x Φ(x)
void clef_f32_gelu_fwd__onednn(size_t n, const float *x, float *y)
{
    if (n == 0)
        return;
    clef_onednn_arg args[] = {{DNNL_ARG_SRC, MD_DATA, x},
                              {DNNL_ARG_DST, MD_DATA, y}};
    if (clef_onednn_call(ONEDNN_GELU_FWD, (int64_t)n, 0, build_fwd, 2, args))
        clef_onednn_fallback()->gelu_fwd(n, x, y);
}

// dx (n) += dy (Φ(x) + x φ(x))
void clef_f32_gelu_bwd__onednn(size_t n, const float *x, const float *dy,
                               float *dx)
{
    if (n == 0)
        return;
    float *t = clef_onednn_scratch(n); // (n) oneDNN's diff_src
    clef_onednn_arg args[] = {{DNNL_ARG_SRC, MD_DATA, x},
                              {DNNL_ARG_DIFF_DST, MD_DATA, dy},
                              {DNNL_ARG_DIFF_SRC, MD_DATA, t}};
    if (!t ||
        clef_onednn_call(ONEDNN_GELU_BWD, (int64_t)n, 0, build_bwd, 3, args)) {
        clef_onednn_fallback()->gelu_bwd(n, x, dy, dx);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dx[i] += t[i];
}

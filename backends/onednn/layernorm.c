// LayerNorm on oneDNN's layer_normalization primitive.
//
// Forward: oneDNN normalises without scale/shift (dst = xhat) and returns the
// row mean and variance; clef then writes rstd = 1/√(var + eps) and
// y = gamma ⊙ xhat + beta (the kernel contract also saves xhat and rstd).
//
// Backward: clef saves xhat and rstd, not x. Handing oneDNN src = xhat with
// mean 0, variance 1 and eps 0 makes its normalised input exactly xhat and
// its 1/√(var + eps) exactly 1, so it returns
//   t = dxh − mean(dxh) − xhat·mean(dxh ⊙ xhat),   dxh = dy ⊙ gamma,
// plus Σ dy ⊙ xhat and Σ dy; clef scales t by rstd per row and accumulates
// (oneDNN overwrites its outputs, kernels.h backward accumulates).
#include "onednn_int.h"

#include <math.h>
#include <string.h>

enum { MD_DATA, MD_STAT, MD_SCALE };

static int init_mds(clef_onednn_prim *p)
{
    dnnl_dims_t dd = {p->key.d[0], p->key.d[1]}, sd = {p->key.d[0]},
                cd = {p->key.d[1]};
    return dnnl_memory_desc_init_by_tag(&p->md[MD_DATA], 2, dd, dnnl_f32,
                                        dnnl_ab) ||
                   dnnl_memory_desc_init_by_tag(&p->md[MD_STAT], 1, sd,
                                                dnnl_f32, dnnl_a) ||
                   dnnl_memory_desc_init_by_tag(&p->md[MD_SCALE], 1, cd,
                                                dnnl_f32, dnnl_a)
               ? -1
               : 0;
}

static int build_fwd(clef_onednn_prim *p)
{
    dnnl_layer_normalization_desc_t d;
    if (init_mds(p) != 0 ||
        dnnl_layer_normalization_forward_desc_init(
            &d, dnnl_forward_training, &p->md[MD_DATA], &p->md[MD_STAT],
            CLEF_LN_EPS, 0) != dnnl_success)
        return -1;
    return clef_onednn_create(p, &d, NULL, NULL);
}

static int build_bwd(clef_onednn_prim *p)
{
    const unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_layer_normalization_desc_t fd, bd;
    if (init_mds(p) != 0 ||
        dnnl_layer_normalization_forward_desc_init(
            &fd, dnnl_forward_training, &p->md[MD_DATA], &p->md[MD_STAT], 0.0f,
            flags) != dnnl_success ||
        dnnl_layer_normalization_backward_desc_init(
            &bd, dnnl_backward, &p->md[MD_DATA], &p->md[MD_DATA],
            &p->md[MD_STAT], 0.0f, flags) != dnnl_success)
        return -1;
    return clef_onednn_create_bwd(p, &bd, &fd);
}

// oneDNN's forward: xhat (rows,n), then mean and var (rows each) in stat.
static int ln_fwd_call(int rows, int n, const float *x, float *xhat,
                       float *stat)
{
    clef_onednn_arg args[] = {
        {DNNL_ARG_SRC, MD_DATA, x},
        {DNNL_ARG_DST, MD_DATA, xhat},
        {DNNL_ARG_MEAN, MD_STAT, stat},
        {DNNL_ARG_VARIANCE, MD_STAT, stat + rows},
    };
    return clef_onednn_call(ONEDNN_LN_FWD, rows, n, build_fwd, 4, args);
}

void clef_f32_layernorm_fwd__onednn(int rows, int n, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y, float *xhat, float *rstd)
{
    if (rows <= 0 || n <= 0)
        return;
    float *stat = clef_onednn_scratch(2 * (size_t)rows); // mean, var (rows)
    if (!stat || ln_fwd_call(rows, n, x, xhat, stat) != 0) {
        clef_onednn_fallback()->layernorm_fwd(rows, n, x, gamma, beta, y, xhat,
                                              rstd);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *hr = xhat + (size_t)r * n; // (n)
        float *yr = y + (size_t)r * n;          // (n)
        rstd[r] = 1.0f / sqrtf(stat[rows + r] + CLEF_LN_EPS);
        for (int i = 0; i < n; i++)
            yr[i] = gamma[i] * hr[i] + beta[i];
    }
}

// oneDNN's backward into t: t (rows,n), then dgamma', dbeta' (n); its
// inputs mean 0 and var 1 (rows each) after them.
static int ln_bwd_call(int rows, int n, const float *dy, const float *xhat,
                       const float *gamma, float *t)
{
    size_t rn = (size_t)rows * n;
    float *dg = t + rn, *db = dg + n, *mean = db + n, *var = mean + rows;
    for (int r = 0; r < rows; r++)
        mean[r] = 0.0f, var[r] = 1.0f;
    clef_onednn_arg args[] = {
        {DNNL_ARG_SRC, MD_DATA, xhat},
        {DNNL_ARG_MEAN, MD_STAT, mean},
        {DNNL_ARG_VARIANCE, MD_STAT, var},
        {DNNL_ARG_DIFF_DST, MD_DATA, dy},
        {DNNL_ARG_SCALE, MD_SCALE, gamma},
        {DNNL_ARG_DIFF_SRC, MD_DATA, t},
        {DNNL_ARG_DIFF_SCALE, MD_SCALE, dg},
        {DNNL_ARG_DIFF_SHIFT, MD_SCALE, db},
    };
    return clef_onednn_call(ONEDNN_LN_BWD, rows, n, build_bwd, 8, args);
}

void clef_f32_layernorm_bwd__onednn(int rows, int n, const float *dy,
                                    const float *xhat, const float *rstd,
                                    const float *gamma, float *dx,
                                    float *dgamma, float *dbeta)
{
    if (rows <= 0 || n <= 0)
        return;
    // scratch: t (rows,n), dgamma', dbeta' (n), mean 0, var 1 (rows)
    size_t rn = (size_t)rows * n;
    float *t = clef_onednn_scratch(rn + 2 * (size_t)n + 2 * (size_t)rows);
    if (!t || ln_bwd_call(rows, n, dy, xhat, gamma, t) != 0) {
        clef_onednn_fallback()->layernorm_bwd(rows, n, dy, xhat, rstd, gamma,
                                              dx, dgamma, dbeta);
        return;
    }
    const float *dg = t + rn, *db = dg + n;
    for (int i = 0; i < n; i++) {
        dgamma[i] += dg[i];
        dbeta[i] += db[i];
    }
    if (!dx)
        return;
    for (int r = 0; r < rows; r++) {
        const float *tr = t + (size_t)r * n; // (n)
        float *dxr = dx + (size_t)r * n;     // (n)
        for (int i = 0; i < n; i++)
            dxr[i] += rstd[r] * tr[i];
    }
}

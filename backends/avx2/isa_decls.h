// Prototypes of the hand-written ISA kernels, shared by backends/avx2/avx2.h
// and backends/avx512/avx512.h: CLEF_ISA_KERNEL_DECLS(avx2) declares every
// clef_f32_<op>__avx2 except the GEMMs, whose names carry the register tile.
#ifndef CLEF_ISA_DECLS_H
#define CLEF_ISA_DECLS_H

#include <stddef.h>

#include "kernels.h"

#define CLEF_ISA_GEMM_DECL(name)                                               \
    void name(int M, int N, int K, const float *A, int lda, const float *B,    \
              int ldb, float *C, int ldc, int accumulate);

#define CLEF_ISA_KERNEL_DECLS(s)                                               \
    void clef_f32_bias_add__##s(int rows, int n, const float *b, float *y);    \
    void clef_f32_colsum__##s(int rows, int n, const float *dy, float *db);    \
    void clef_f32_layernorm_fwd__##s(int rows, int n, const float *x,          \
                                     const float *gamma, const float *beta,    \
                                     float *y, float *xhat, float *rstd);      \
    void clef_f32_layernorm_bwd__##s(int rows, int n, const float *dy,         \
                                     const float *xhat, const float *rstd,     \
                                     const float *gamma, float *dx,            \
                                     float *dgamma, float *dbeta);             \
    void clef_f32_gelu_fwd__##s(size_t n, const float *x, float *y);           \
    void clef_f32_gelu_bwd__##s(size_t n, const float *x, const float *dy,     \
                                float *dx);                                    \
    void clef_f32_erf__##s(size_t n, const float *x, float *y);                \
    void clef_f32_softmax_fwd__##s(int rows, int n, const float *x, float *y); \
    void clef_f32_softmax_bwd__##s(int rows, int n, const float *y,            \
                                   const float *dy, float *dx);                \
    void clef_f32_softmax_seg_fwd__##s(int nseg, const int *off,               \
                                       const float *x, float *y);              \
    void clef_f32_softmax_seg_bwd__##s(int nseg, const int *off,               \
                                       const float *y, const float *dy,        \
                                       float *dx);                             \
    void clef_f32_attention_fwd__##s(int nq, int nk, int heads, int dh,        \
                                     const float *Q, int ldq, const float *K,  \
                                     int ldk, const float *V, int ldv,         \
                                     float *A, float *O, int ldo);             \
    void clef_f32_attention_bwd__##s(                                          \
        int nq, int nk, int heads, int dh, const float *Q, int ldq,            \
        const float *K, int ldk, const float *V, int ldv, const float *A,      \
        const float *dO, int lddo, float *dQ, int lddq, float *dK, int lddk,   \
        float *dV, int lddv, float *scratch);                                  \
    void clef_f32_span_mean__##s(int nspan, const int *spans, int n,           \
                                 const float *X, float *Y);                    \
    void clef_f32_span_scatter__##s(int nspan, const int *spans, int n,        \
                                    const float *dY, float *dX);               \
    void clef_f32_gather_rows__##s(int nidx, const int *idx, int n,            \
                                   const float *X, float *Y);                  \
    void clef_f32_scatter_add_rows__##s(int nidx, const int *idx, int n,       \
                                        const float *dY, float *dX);           \
    void clef_f32_normalize_fwd__##s(int rows, int n, float eps,               \
                                     const float *x, float *y, float *nrm);    \
    void clef_f32_normalize_bwd__##s(int rows, int n, float eps,               \
                                     const float *y, const float *nrm,         \
                                     const float *dy, float *dx);              \
    void clef_f32_cosine_fwd__##s(int rows, int n, const float *a,             \
                                  const float *b, float *ahat, float *bhat,    \
                                  float *na, float *nb, float *c);             \
    void clef_f32_cosine_bwd__##s(int rows, int n, const float *ahat,          \
                                  const float *bhat, const float *na,          \
                                  const float *nb, const float *dc, float *da, \
                                  float *db);                                  \
    void clef_f32_adamw__##s(size_t n, float *theta, const float *g, float *m, \
                             float *v, const clef_adamw_args *a);              \
    void clef_f32_loss__##s(int nq, const int *off, const int *is_score,       \
                            const float *z, const float *y,                    \
                            const clef_loss_args *a, float *p, float *dz,      \
                            double *loss);

#endif

// The scalar reference backend: one declaration per kernel, named
// clef_f32_<op>__scalar. The kernels are the numerical reference every other
// backend is checked against: plain output-owned loops, float accumulation in
// the natural loop order, compiled with -ffp-contract=off and no fast-math.
// Contracts (shapes, overwrite vs accumulate) are in backends/kernels.h.
#ifndef CLEF_SCALAR_H
#define CLEF_SCALAR_H

#include "kernels.h"

// gemm.c
void clef_f32_gemm_nt__scalar(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate);
void clef_f32_gemm_nn__scalar(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate);
void clef_f32_gemm_tn__scalar(int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc,
                              int accumulate);

// bias.c
void clef_f32_bias_add__scalar(int rows, int n, const float *b, float *y);
void clef_f32_colsum__scalar(int rows, int n, const float *dy, float *db);

// layernorm.c
void clef_f32_layernorm_fwd__scalar(int rows, int n, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y, float *xhat, float *rstd);
void clef_f32_layernorm_bwd__scalar(int rows, int n, const float *dy,
                                    const float *xhat, const float *rstd,
                                    const float *gamma, float *dx,
                                    float *dgamma, float *dbeta);

// gelu.c
void clef_f32_gelu_fwd__scalar(size_t n, const float *x, float *y);
void clef_f32_gelu_bwd__scalar(size_t n, const float *x, const float *dy,
                               float *dx);

// softmax.c
void clef_f32_softmax_fwd__scalar(int rows, int n, const float *x, float *y);
void clef_f32_softmax_bwd__scalar(int rows, int n, const float *y,
                                  const float *dy, float *dx);

// softmax_seg.c
void clef_f32_softmax_seg_fwd__scalar(int nseg, const int *off,
                                      const float *x, float *y);
void clef_f32_softmax_seg_bwd__scalar(int nseg, const int *off,
                                      const float *y, const float *dy,
                                      float *dx);

// attention.c
void clef_f32_attention_fwd__scalar(int nq, int nk, int heads, int dh,
                                    const float *Q, int ldq, const float *K,
                                    int ldk, const float *V, int ldv, float *A,
                                    float *O, int ldo);
void clef_f32_attention_bwd__scalar(int nq, int nk, int heads, int dh,
                                    const float *Q, int ldq, const float *K,
                                    int ldk, const float *V, int ldv,
                                    const float *A, const float *dO, int lddo,
                                    float *dQ, int lddq, float *dK, int lddk,
                                    float *dV, int lddv, float *scratch);

// span.c
void clef_f32_span_mean__scalar(int nspan, const int *spans, int n,
                                const float *X, float *Y);
void clef_f32_span_scatter__scalar(int nspan, const int *spans, int n,
                                   const float *dY, float *dX);

// gather.c
void clef_f32_gather_rows__scalar(int nidx, const int *idx, int n,
                                  const float *X, float *Y);
void clef_f32_scatter_add_rows__scalar(int nidx, const int *idx, int n,
                                       const float *dY, float *dX);

// normalize.c
void clef_f32_normalize_fwd__scalar(int rows, int n, float eps, const float *x,
                                    float *y, float *nrm);
void clef_f32_normalize_bwd__scalar(int rows, int n, float eps, const float *y,
                                    const float *nrm, const float *dy,
                                    float *dx);
void clef_f32_cosine_fwd__scalar(int rows, int n, const float *a,
                                 const float *b, float *ahat, float *bhat,
                                 float *na, float *nb, float *c);
void clef_f32_cosine_bwd__scalar(int rows, int n, const float *ahat,
                                 const float *bhat, const float *na,
                                 const float *nb, const float *dc, float *da,
                                 float *db);

// adamw.c
void clef_f32_adamw__scalar(size_t n, float *theta, const float *g, float *m,
                            float *v, const clef_adamw_args *a);

// loss.c
void clef_f32_loss__scalar(int nq, const int *off, const int *is_score,
                           const float *z, const float *y,
                           const clef_loss_args *a, float *p, float *dz,
                           double *loss);

#endif

// The NEON (AArch64 ASIMD) backend: one kernel per op of backends/kernels.h,
// named clef_f32_<op>__neon (the GEMMs carry their register tile:
// clef_f32_gemm_nt_8x12__neon), and the complete table clef_neon_kernels.
// Kernels live in backends/neon/<family>.c, vector helpers (exp, erf, Φ,
// tails) in backends/neon/vec.h. Built only for aarch64 targets, where ASIMD
// is baseline; the registry still checks getauxval(AT_HWCAP) & HWCAP_ASIMD
// (backends/registry.c). Contracts (shapes, overwrite vs accumulate) are
// those of backends/kernels.h; the scalar backend is the reference.
#ifndef CLEF_NEON_H
#define CLEF_NEON_H

#include <stddef.h>

#include "kernels.h"

// gemm.c: 8x12 register tile (24 accumulators, 2 A + 3 B vectors)
void clef_f32_gemm_nt_8x12__neon(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate);
void clef_f32_gemm_nn_8x12__neon(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate);
void clef_f32_gemm_tn_8x12__neon(int M, int N, int K, const float *A, int lda,
                                 const float *B, int ldb, float *C, int ldc,
                                 int accumulate);

// bias.c
void clef_f32_bias_add__neon(int rows, int n, const float *b, float *y);
void clef_f32_colsum__neon(int rows, int n, const float *dy, float *db);

// layernorm.c
void clef_f32_layernorm_fwd__neon(int rows, int n, const float *x,
                                  const float *gamma, const float *beta,
                                  float *y, float *xhat, float *rstd);
void clef_f32_layernorm_bwd__neon(int rows, int n, const float *dy,
                                  const float *xhat, const float *rstd,
                                  const float *gamma, float *dx, float *dgamma,
                                  float *dbeta);

// gelu.c (clef_f32_erf__neon: erf itself, for accuracy checks)
void clef_f32_gelu_fwd__neon(size_t n, const float *x, float *y);
void clef_f32_gelu_bwd__neon(size_t n, const float *x, const float *dy,
                             float *dx);
void clef_f32_erf__neon(size_t n, const float *x, float *y);

// softmax.c
void clef_f32_softmax_fwd__neon(int rows, int n, const float *x, float *y);
void clef_f32_softmax_bwd__neon(int rows, int n, const float *y,
                                const float *dy, float *dx);

// softmax_seg.c
void clef_f32_softmax_seg_fwd__neon(int nseg, const int *off, const float *x,
                                    float *y);
void clef_f32_softmax_seg_bwd__neon(int nseg, const int *off, const float *y,
                                    const float *dy, float *dx);

// attention.c
void clef_f32_attention_fwd__neon(int nq, int nk, int heads, int dh,
                                  const float *Q, int ldq, const float *K,
                                  int ldk, const float *V, int ldv, float *A,
                                  float *O, int ldo);
void clef_f32_attention_bwd__neon(int nq, int nk, int heads, int dh,
                                  const float *Q, int ldq, const float *K,
                                  int ldk, const float *V, int ldv,
                                  const float *A, const float *dO, int lddo,
                                  float *dQ, int lddq, float *dK, int lddk,
                                  float *dV, int lddv, float *scratch);

// span.c
void clef_f32_span_mean__neon(int nspan, const int *spans, int n,
                              const float *X, float *Y);
void clef_f32_span_scatter__neon(int nspan, const int *spans, int n,
                                 const float *dY, float *dX);

// gather.c
void clef_f32_gather_rows__neon(int nidx, const int *idx, int n,
                                const float *X, float *Y);
void clef_f32_scatter_add_rows__neon(int nidx, const int *idx, int n,
                                     const float *dY, float *dX);

// normalize.c
void clef_f32_normalize_fwd__neon(int rows, int n, float eps, const float *x,
                                  float *y, float *nrm);
void clef_f32_normalize_bwd__neon(int rows, int n, float eps, const float *y,
                                  const float *nrm, const float *dy,
                                  float *dx);
void clef_f32_cosine_fwd__neon(int rows, int n, const float *a,
                               const float *b, float *ahat, float *bhat,
                               float *na, float *nb, float *c);
void clef_f32_cosine_bwd__neon(int rows, int n, const float *ahat,
                               const float *bhat, const float *na,
                               const float *nb, const float *dc, float *da,
                               float *db);

// adamw.c
void clef_f32_adamw__neon(size_t n, float *theta, const float *g, float *m,
                          float *v, const clef_adamw_args *a);

// loss.c
void clef_f32_loss__neon(int nq, const int *off, const int *is_score,
                         const float *z, const float *y,
                         const clef_loss_args *a, float *p, float *dz,
                         double *loss);

// table.c: complete, every op works for every shape.
extern const clef_kernels clef_neon_kernels;

#endif

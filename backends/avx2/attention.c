// attention kernels for avx2: clef_f32_attention_fwd__avx2 clef_f32_attention_bwd__avx2
// Written once for both ISAs: helpers in backends/x86/tmpl_attention.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#define ATTN_GEMM_NT clef_f32_gemm_nt_6x16__avx2
#define ATTN_GEMM_NN clef_f32_gemm_nn_6x16__avx2
#define ATTN_GEMM_TN clef_f32_gemm_tn_6x16__avx2

#include "backends/x86/tmpl_softmax_row.h"
#include "backends/x86/tmpl_attention.h"

void clef_f32_attention_fwd__avx2(int nq, int nk, int heads, int dh,
                                  const float *Q, int ldq, const float *K,
                                  int ldk, const float *V, int ldv, float *A,
                                  float *O, int ldo)
{
#include "backends/x86/body/attention_fwd.h"
}

void clef_f32_attention_bwd__avx2(int nq, int nk, int heads, int dh,
                                  const float *Q, int ldq, const float *K,
                                  int ldk, const float *V, int ldv,
                                  const float *A, const float *dO, int lddo,
                                  float *dQ, int lddq, float *dK, int lddk,
                                  float *dV, int lddv, float *scratch)
{
#include "backends/x86/body/attention_bwd.h"
}

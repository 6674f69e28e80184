// attention kernels for avx512: clef_f32_attention_fwd__avx512 clef_f32_attention_bwd__avx512
// Written once for both ISAs: helpers in backends/x86/tmpl_attention.h, each
// kernel's body in backends/x86/body/<op>.h, included in its definition
// below (vector layer in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#define ATTN_GEMM_NT clef_f32_gemm_nt_14x32__avx512
#define ATTN_GEMM_NN clef_f32_gemm_nn_14x32__avx512
#define ATTN_GEMM_TN clef_f32_gemm_tn_14x32__avx512

#include "backends/x86/tmpl_softmax_row.h"
#include "backends/x86/tmpl_attention.h"

// The wide bodies stay out of line, so the tiny heads' few-key
// attentions reach AVX2 without their register saves and stack
// realignment (avx512/gemm.c does the same).
static __attribute__((noinline)) void
attn_fwd_wide(int nq, int nk, int heads, int dh, const float *Q, int ldq,
              const float *K, int ldk, const float *V, int ldv, float *A,
              float *O, int ldo)
{
#include "backends/x86/body/attention_fwd.h"
}

static __attribute__((noinline)) void
attn_bwd_wide(int nq, int nk, int heads, int dh, const float *Q, int ldq,
              const float *K, int ldk, const float *V, int ldv, const float *A,
              const float *dO, int lddo, float *dQ, int lddq, float *dK,
              int lddk, float *dV, int lddv, float *scratch)
{
#include "backends/x86/body/attention_bwd.h"
}

void clef_f32_attention_fwd__avx512(int nq, int nk, int heads, int dh,
                                    const float *Q, int ldq, const float *K,
                                    int ldk, const float *V, int ldv, float *A,
                                    float *O, int ldo)
{
    // key rows of 8 or fewer: the AVX2 kernel's ymm rows waste fewer lanes
    CLEF_NARROW(nk <= 8 && dh <= ATTN_SMALL_DH,
                clef_f32_attention_fwd__avx2(nq, nk, heads, dh, Q, ldq, K, ldk,
                                             V, ldv, A, O, ldo));
    attn_fwd_wide(nq, nk, heads, dh, Q, ldq, K, ldk, V, ldv, A, O, ldo);
}

void clef_f32_attention_bwd__avx512(int nq, int nk, int heads, int dh,
                                    const float *Q, int ldq, const float *K,
                                    int ldk, const float *V, int ldv,
                                    const float *A, const float *dO, int lddo,
                                    float *dQ, int lddq, float *dK, int lddk,
                                    float *dV, int lddv, float *scratch)
{
    CLEF_NARROW(nk <= 8 && dh <= ATTN_SMALL_DH,
                clef_f32_attention_bwd__avx2(nq, nk, heads, dh, Q, ldq, K, ldk,
                                             V, ldv, A, dO, lddo, dQ, lddq, dK,
                                             lddk, dV, lddv, scratch));
    attn_bwd_wide(nq, nk, heads, dh, Q, ldq, K, ldk, V, ldv, A, dO, lddo, dQ,
                  lddq, dK, lddk, dV, lddv, scratch);
}

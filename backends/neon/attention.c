// Multi-head attention core, NEON: per head the score, output and gradient
// products run on the 8x12 NEON GEMM (gemm.c), the row softmax and its
// backward on softmax.c. Head h reads columns [h·dh, (h+1)·dh) of Q, K, V.
// scale = 1/√dh rounded to float, as in the reference.
#include <math.h>

#include "neon.h"
#include "vec.h"

static float attn_scale(int dh)
{
    return (float)(1.0 / sqrt((double)dh));
}

// x (n) *= s
static void scale_inplace(size_t n, float *x, float s)
{
    vf vs = v_set1(s);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), vs));
    for (; i < n; i++)
        x[i] *= s;
}

// Q (nq, heads*dh) ld ldq, K, V (nk, ·) ld ldk, ldv ->
// A (heads, nq, nk) = softmax_rows(Q_h K_hᵀ · scale), O (nq, heads*dh) ld ldo.
void clef_f32_attention_fwd__neon(int nq, int nk, int heads, int dh,
                                  const float *Q, int ldq, const float *K,
                                  int ldk, const float *V, int ldv, float *A,
                                  float *O, int ldo)
{
    float scale = attn_scale(dh);
    for (int h = 0; h < heads; h++) {
        float *Ah = A + (size_t)h * nq * nk; // (nq, nk)
        int c0 = h * dh;
        // S (nq, nk) = Q_h K_hᵀ, then · scale and softmax per row, in A_h
        clef_f32_gemm_nt_8x12__neon(nq, nk, dh, Q + c0, ldq, K + c0, ldk, Ah,
                                    nk, 0);
        scale_inplace((size_t)nq * nk, Ah, scale);
        clef_f32_softmax_fwd__neon(nq, nk, Ah, Ah);
        // O_h (nq, dh) = A_h V_h
        clef_f32_gemm_nn_8x12__neon(nq, dh, nk, Ah, nk, V + c0, ldv, O + c0,
                                    ldo, 0);
    }
}

// Per head, with dS (nq, nk) in scratch:
//   dA = dO_h V_hᵀ;  dV_h += A_hᵀ dO_h;  dS = A ⊙ (dA − rowsum(dA ⊙ A)) · scale;
//   dQ_h += dS K_h;  dK_h += dSᵀ Q_h.
void clef_f32_attention_bwd__neon(int nq, int nk, int heads, int dh,
                                  const float *Q, int ldq, const float *K,
                                  int ldk, const float *V, int ldv,
                                  const float *A, const float *dO, int lddo,
                                  float *dQ, int lddq, float *dK, int lddk,
                                  float *dV, int lddv, float *scratch)
{
    float scale = attn_scale(dh);
    float *dS = scratch; // (nq, nk)
    for (int h = 0; h < heads; h++) {
        const float *Ah = A + (size_t)h * nq * nk; // (nq, nk)
        int c0 = h * dh;

        // dA (nq, nk) = dO_h V_hᵀ
        clef_f32_gemm_nt_8x12__neon(nq, nk, dh, dO + c0, lddo, V + c0, ldv, dS,
                                    nk, 0);
        // dV_h (nk, dh) += A_hᵀ dO_h
        clef_f32_gemm_tn_8x12__neon(nk, dh, nq, Ah, nk, dO + c0, lddo, dV + c0,
                                    lddv, 1);
        // dS = A ⊙ (dA − rowsum(dA ⊙ A)) · scale, per row in place
        for (int i = 0; i < nq; i++) {
            const float *arow = Ah + (size_t)i * nk; // (nk)
            float *srow = dS + (size_t)i * nk;       // (nk)
            vf dot = v_set1(v_dot(nk, srow, arow));
            vf vs = v_set1(scale);
            int j = 0;
            for (; j + 4 <= nk; j += 4) {
                vf t = vmulq_f32(vld1q_f32(arow + j),
                                 vsubq_f32(vld1q_f32(srow + j), dot));
                vst1q_f32(srow + j, vmulq_f32(t, vs));
            }
            float d = vgetq_lane_f32(dot, 0);
            for (; j < nk; j++)
                srow[j] = arow[j] * (srow[j] - d) * scale;
        }
        // dQ_h (nq, dh) += dS K_h;  dK_h (nk, dh) += dSᵀ Q_h
        clef_f32_gemm_nn_8x12__neon(nq, dh, nk, dS, nk, K + c0, ldk, dQ + c0,
                                    lddq, 1);
        clef_f32_gemm_tn_8x12__neon(nk, dh, nq, dS, nk, Q + c0, ldq, dK + c0,
                                    lddk, 1);
    }
}

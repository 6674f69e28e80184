// Multi-head attention core (HEAD.md §4, Appendix A), scalar reference.
// Head h reads columns [h·dh, (h+1)·dh) of Q, K, V and writes those of O.
// Scores are S = (Q_h K_hᵀ) · scale with scale = 1/√dh rounded to float;
// each dot product accumulates in float over increasing d.
#include <math.h>

#include "scalar.h"

static float attn_scale(int dh)
{
    return (float)(1.0 / sqrt((double)dh));
}

// Q (nq, heads*dh) ld ldq, K (nk, ·) ld ldk, V (nk, ·) ld ldv ->
// A (heads, nq, nk) = softmax_rows(Q_h K_hᵀ · scale), O (nq, heads*dh) ld ldo.
void clef_f32_attention_fwd__scalar(int nq, int nk, int heads, int dh,
                                    const float *Q, int ldq, const float *K,
                                    int ldk, const float *V, int ldv, float *A,
                                    float *O, int ldo)
{
    float scale = attn_scale(dh);
    for (int h = 0; h < heads; h++) {
        float *Ah = A + (size_t)h * nq * nk; // (nq, nk)
        int c0 = h * dh;
        for (int i = 0; i < nq; i++) {
            const float *q = Q + (size_t)i * ldq + c0; // (dh)
            float *arow = Ah + (size_t)i * nk;         // (nk)
            for (int j = 0; j < nk; j++) {
                const float *k = K + (size_t)j * ldk + c0; // (dh)
                float acc = 0.0f;
                for (int d = 0; d < dh; d++)
                    acc += q[d] * k[d];
                arow[j] = acc * scale;
            }
            clef_f32_softmax_fwd__scalar(1, nk, arow, arow); // in place
            float *o = O + (size_t)i * ldo + c0;             // (dh)
            for (int d = 0; d < dh; d++) {
                float acc = 0.0f;
                for (int j = 0; j < nk; j++)
                    acc += arow[j] * V[(size_t)j * ldv + c0 + d];
                o[d] = acc;
            }
        }
    }
}

// Per head, with dA, dS (nq, nk) in scratch:
//   dA = dO_h V_hᵀ;  dV_h += A_hᵀ dO_h;  dS = A ⊙ (dA − rowsum(dA ⊙ A));
//   dQ_h += (dS K_h) · scale;  dK_h += (dSᵀ Q_h) · scale.
void clef_f32_attention_bwd__scalar(int nq, int nk, int heads, int dh,
                                    const float *Q, int ldq, const float *K,
                                    int ldk, const float *V, int ldv,
                                    const float *A, const float *dO, int lddo,
                                    float *dQ, int lddq, float *dK, int lddk,
                                    float *dV, int lddv, float *scratch)
{
    float scale = attn_scale(dh);
    float *dS = scratch; // (nq, nk): first dA, then dS in place
    for (int h = 0; h < heads; h++) {
        const float *Ah = A + (size_t)h * nq * nk; // (nq, nk)
        int c0 = h * dh;

        // dA (nq, nk) = dO_h V_hᵀ
        for (int i = 0; i < nq; i++) {
            const float *g = dO + (size_t)i * lddo + c0; // (dh)
            for (int j = 0; j < nk; j++) {
                const float *v = V + (size_t)j * ldv + c0; // (dh)
                float acc = 0.0f;
                for (int d = 0; d < dh; d++)
                    acc += g[d] * v[d];
                dS[(size_t)i * nk + j] = acc;
            }
        }

        // dV_h (nk, dh) += A_hᵀ dO_h
        for (int j = 0; j < nk; j++) {
            for (int d = 0; d < dh; d++) {
                float acc = 0.0f;
                for (int i = 0; i < nq; i++)
                    acc +=
                        Ah[(size_t)i * nk + j] * dO[(size_t)i * lddo + c0 + d];
                dV[(size_t)j * lddv + c0 + d] += acc;
            }
        }

        // dS = A ⊙ (dA − rowsum(dA ⊙ A)), the softmax backward per row
        for (int i = 0; i < nq; i++) {
            const float *arow = Ah + (size_t)i * nk;
            float *srow = dS + (size_t)i * nk;
            float dot = 0.0f;
            for (int j = 0; j < nk; j++)
                dot += srow[j] * arow[j];
            for (int j = 0; j < nk; j++)
                srow[j] = arow[j] * (srow[j] - dot);
        }

        // dQ_h (nq, dh) += (dS K_h) · scale
        for (int i = 0; i < nq; i++) {
            for (int d = 0; d < dh; d++) {
                float acc = 0.0f;
                for (int j = 0; j < nk; j++)
                    acc += dS[(size_t)i * nk + j] * K[(size_t)j * ldk + c0 + d];
                dQ[(size_t)i * lddq + c0 + d] += acc * scale;
            }
        }

        // dK_h (nk, dh) += (dSᵀ Q_h) · scale
        for (int j = 0; j < nk; j++) {
            for (int d = 0; d < dh; d++) {
                float acc = 0.0f;
                for (int i = 0; i < nq; i++)
                    acc += dS[(size_t)i * nk + j] * Q[(size_t)i * ldq + c0 + d];
                dK[(size_t)j * lddk + c0 + d] += acc * scale;
            }
        }
    }
}

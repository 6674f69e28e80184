// Attention with dropout on its weights, as nn.MultiheadAttention(dropout=p)
// applies it in training: O_h = drop(softmax(Q_h K_hᵀ · scale)) V_h. The
// fused attention kernels have no mask, so with dropout on the field layers
// compose each record's attention, head by head, from the GEMM and softmax
// kernels (the kernel contract is unchanged). The saved map A holds the
// undropped probabilities; the mask is drawn again in the backward pass.
#include "dropout.h"
#include "forward.h"

#include <math.h>
#include <string.h>

// The kernels' scale: 1/√dh rounded to float (backends/scalar/attention.c).
static float attn_scale(int dh)
{
    return (float)(1.0 / sqrt((double)dh));
}

void clef_attention_drop_fwd(const clef_kernels *k, const clef_att_drop *ad,
                             int nq, int nk, int heads, int dh, const float *Q,
                             int ldq, const float *K, int ldk, const float *V,
                             int ldv, float *A, float *O, int ldo, float *scr)
{
    const float scale = attn_scale(dh);
    const size_t nm = (size_t)nq * nk;
    for (int hh = 0; hh < heads; hh++) {
        float *Ah = A + hh * nm; // (nq, nk)
        const int c0 = hh * dh;
        k->gemm_nt(nq, nk, dh, Q + c0, ldq, K + c0, ldk, scr, nk, 0);
        for (size_t i = 0; i < nm; i++)
            scr[i] *= scale;
        k->softmax_fwd(nq, nk, scr, Ah);
        clef_dropout_map(ad->d, ad->site, ad->b, hh, nq, nk, Ah, scr);
        k->gemm_nn(nq, dh, nk, scr, nk, V + c0, ldv, O + c0, ldo, 0);
    }
}

// Per head, with Pd, dS (nq, nk) in scratch:
//   Pd = drop(A_h);  dV_h += Pdᵀ dO_h;  dP = drop(dO_h V_hᵀ);
//   dS = A ⊙ (dP − rowsum(dP ⊙ A)) · scale;
//   dQ_h += dS K_h;  dK_h += dSᵀ Q_h.
void clef_attention_drop_bwd(const clef_kernels *k, const clef_att_drop *ad,
                             int nq, int nk, int heads, int dh, const float *Q,
                             int ldq, const float *K, int ldk, const float *V,
                             int ldv, const float *A, const float *dO, int lddo,
                             float *dQ, int lddq, float *dK, int lddk,
                             float *dV, int lddv, float *scr)
{
    const float scale = attn_scale(dh);
    const size_t nm = (size_t)nq * nk;
    float *P = scr, *dS = scr + nm;
    for (int hh = 0; hh < heads; hh++) {
        const float *Ah = A + hh * nm;
        const int c0 = hh * dh;
        clef_dropout_map(ad->d, ad->site, ad->b, hh, nq, nk, Ah, P);
        k->gemm_tn(nk, dh, nq, P, nk, dO + c0, lddo, dV + c0, lddv, 1);
        k->gemm_nt(nq, nk, dh, dO + c0, lddo, V + c0, ldv, P, nk, 0);
        clef_dropout_map(ad->d, ad->site, ad->b, hh, nq, nk, P, P);
        memset(dS, 0, sizeof(float) * nm);
        k->softmax_bwd(nq, nk, Ah, P, dS);
        for (size_t i = 0; i < nm; i++)
            dS[i] *= scale;
        k->gemm_nn(nq, dh, nk, dS, nk, K + c0, ldk, dQ + c0, lddq, 1);
        k->gemm_tn(nk, dh, nq, dS, nk, Q + c0, ldq, dK + c0, lddk, 1);
    }
}

// Multi-head attention core, written once against the vf layer; the two
// products per head go through this ISA's own GEMM (ATTN_GEMM_NT/NN/TN,
// defined by the including file), which takes its small-shape path for
// narrow heads (on AVX-512 the GEMMs of heads ≤ 8 wide run in ymm; the
// softmax rows, as long as the keys, stay in zmm).
//   fwd: A_h (nq, nk) = softmax_rows(scale · Q_h K_hᵀ), O_h = A_h V_h
//   bwd: dA = dO_h V_hᵀ; dV_h += A_hᵀ dO_h; dS = scale · A ⊙ (dA − rowsum(dA⊙A));
//        dQ_h += dS K_h; dK_h += dSᵀ Q_h       (scale = 1/√dh, folded into dS)
// Needs tmpl_softmax.h included first (softmax_row, softmax_bwd_row).

static float attn_scale(int dh) { return (float)(1.0 / sqrt((double)dh)); }

void CLEF_KNAME(attention_fwd)(int nq, int nk, int heads, int dh,
                               const float *Q, int ldq, const float *K, int ldk,
                               const float *V, int ldv, float *A, float *O,
                               int ldo)
{
    float scale = attn_scale(dh);
    for (int h = 0; h < heads; h++) {
        float *Ah = A + (size_t)h * nq * nk; // (nq, nk)
        int c0 = h * dh;
        // raw scores Q_h K_hᵀ (nq, nk), then softmax(scale ·) row by row
        ATTN_GEMM_NT(nq, nk, dh, Q + c0, ldq, K + c0, ldk, Ah, nk, 0);
        for (int i = 0; i < nq; i++)
            softmax_row(nk, scale, Ah + (size_t)i * nk, Ah + (size_t)i * nk);
        // O_h (nq, dh) = A_h V_h
        ATTN_GEMM_NN(nq, dh, nk, Ah, nk, V + c0, ldv, O + c0, ldo, 0);
    }
}

void CLEF_KNAME(attention_bwd)(int nq, int nk, int heads, int dh,
                               const float *Q, int ldq, const float *K, int ldk,
                               const float *V, int ldv, const float *A,
                               const float *dO, int lddo, float *dQ, int lddq,
                               float *dK, int lddk, float *dV, int lddv,
                               float *scratch)
{
    float scale = attn_scale(dh);
    float *dS = scratch; // (nq, nk): dA, then dS in place
    for (int h = 0; h < heads; h++) {
        const float *Ah = A + (size_t)h * nq * nk; // (nq, nk)
        int c0 = h * dh;
        ATTN_GEMM_NT(nq, nk, dh, dO + c0, lddo, V + c0, ldv, dS, nk, 0);
        ATTN_GEMM_TN(nk, dh, nq, Ah, nk, dO + c0, lddo, dV + c0, lddv, 1);
        for (int i = 0; i < nq; i++) {
            size_t o = (size_t)i * nk;
            softmax_bwd_row(nk, scale, Ah + o, dS + o, dS + o, 0);
        }
        ATTN_GEMM_NN(nq, dh, nk, dS, nk, K + c0, ldk, dQ + c0, lddq, 1);
        ATTN_GEMM_TN(nk, dh, nq, dS, nk, Q + c0, ldq, dK + c0, lddk, 1);
    }
}

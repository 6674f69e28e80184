// The body of the attention_bwd kernels (their family:
// backends/x86/tmpl_attention.h), included inside each x86 ISA's definition of
// it: clef_f32_attention_bwd__avx2 in backends/avx2/attention.c and
// clef_f32_attention_bwd__avx512 in backends/avx512/attention.c. Its parameters
// are the definition's (CLEF_SIG_attention_bwd, backends/kernels.h).
int g = attn_small_group(nk, heads, dh);
if (g > 0) {
    attn_bwd_small(nq, nk, heads, dh, g, Q, ldq, K, ldk, V, ldv, A, dO, lddo,
                   dQ, lddq, dK, lddk, dV, lddv);
    return;
}
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

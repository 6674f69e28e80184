// The body of the attention_fwd kernels (their family:
// backends/x86/tmpl_attention.h), included inside each x86 ISA's definition of
// it: clef_f32_attention_fwd__avx2 in backends/avx2/attention.c and
// clef_f32_attention_fwd__avx512 in backends/avx512/attention.c. Its parameters
// are the definition's (CLEF_SIG_attention_fwd, backends/kernels.h).
int g = attn_small_group(nk, heads, dh);
if (g > 0) {
    attn_fwd_small(nq, nk, heads, dh, g, Q, ldq, K, ldk, V, ldv, A, O, ldo);
    return;
}
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

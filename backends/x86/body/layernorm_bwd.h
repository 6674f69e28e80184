// The body of the layernorm_bwd kernels (their family:
// backends/x86/tmpl_layernorm.h), included inside each x86 ISA's definition of
// it: clef_f32_layernorm_bwd__avx2 in backends/avx2/layernorm.c and
// clef_f32_layernorm_bwd__avx512 in backends/avx512/layernorm.c. Its parameters
// are the definition's (CLEF_SIG_layernorm_bwd, backends/kernels.h).
if (n <= LN_FUSED_MAX) {
    float sg[LN_FUSED_MAX] __attribute__((aligned(64)));
    float sb[LN_FUSED_MAX] __attribute__((aligned(64)));
    memset(sg, 0, sizeof(float) * n);
    memset(sb, 0, sizeof(float) * n);
    int r = 0;
    LN_BWD_ISA_ROWS(r, rows, n, dy, xhat, rstd, gamma, dx, sg, sb);
    for (; r < rows; r++) {
        size_t o = (size_t)r * n;
        ln_bwd_row(n, dy + o, xhat + o, rstd[r], gamma, dx ? dx + o : NULL, sg,
                   sb);
    }
    for (int c = 0; c < n; c++) {
        dgamma[c] += sg[c];
        dbeta[c] += sb[c];
    }
    return;
}
if (dx)
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * n;
        ln_bwd_row(n, dy + o, xhat + o, rstd[r], gamma, dx + o, NULL, NULL);
    }
for (int c = 0; c < n; c += VW)
    ln_bwd_cols(rows, n, c, n - c < VW ? n - c : VW, dy, xhat, dgamma, dbeta);

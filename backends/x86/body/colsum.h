// The body of the colsum kernels (their family: backends/x86/tmpl_bias.h),
// included inside each x86 ISA's definition of it: clef_f32_colsum__avx2 in
// backends/avx2/bias.c and clef_f32_colsum__avx512 in backends/avx512/bias.c.
// Its parameters are the definition's (CLEF_SIG_colsum, backends/kernels.h).
for (int c = 0; c < n; c += COLSUM_W)
    colsum_cols(rows, n, c, n - c < COLSUM_W ? n - c : COLSUM_W, dy, db);

// The body of the bias_add kernels (their family: backends/x86/tmpl_bias.h),
// included inside each x86 ISA's definition of it: clef_f32_bias_add__avx2 in
// backends/avx2/bias.c and clef_f32_bias_add__avx512 in backends/avx512/bias.c.
// Its parameters are the definition's (CLEF_SIG_bias_add, backends/kernels.h).
int nv = n / VW * VW, t = n - nv;
for (int r = 0; r < rows; r++) {
    float *yr = y + (size_t)r * n; // (n)
    for (int c = 0; c < nv; c += VW)
        vf_store(yr + c, vf_add(vf_load(yr + c), vf_load(b + c)));
    if (t)
        vf_storen(yr + nv, vf_add(vf_loadn(yr + nv, t), vf_loadn(b + nv, t)),
                  t);
}

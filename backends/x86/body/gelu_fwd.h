// The body of the gelu_fwd kernels (their family: backends/x86/tmpl_gelu.h),
// included inside each x86 ISA's definition of it: clef_f32_gelu_fwd__avx2 in
// backends/avx2/gelu.c and clef_f32_gelu_fwd__avx512 in backends/avx512/gelu.c.
// Its parameters are the definition's (CLEF_SIG_gelu_fwd, backends/kernels.h).
size_t i = 0;
for (; i + VW <= n; i += VW)
    vf_store(y + i, gelu_fwd_v(vf_load(x + i)));
if (i < n)
    vf_storen(y + i, gelu_fwd_v(vf_loadn(x + i, (int)(n - i))), (int)(n - i));

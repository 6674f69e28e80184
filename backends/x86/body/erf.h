// The body of the erf kernels (their family: backends/x86/tmpl_gelu.h),
// included inside each x86 ISA's definition of it: clef_f32_erf__avx2 in
// backends/avx2/gelu.c and clef_f32_erf__avx512 in backends/avx512/gelu.c. Its
// parameters are the definition's (CLEF_SIG_erf, backends/kernels.h).
size_t i = 0;
for (; i + VW <= n; i += VW)
    vf_store(y + i, vf_erf(vf_load(x + i)));
if (i < n)
    vf_storen(y + i, vf_erf(vf_loadn(x + i, (int)(n - i))), (int)(n - i));

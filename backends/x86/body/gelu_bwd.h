// The body of the gelu_bwd kernels (their family: backends/x86/tmpl_gelu.h),
// included inside each x86 ISA's definition of it: clef_f32_gelu_bwd__avx2 in
// backends/avx2/gelu.c and clef_f32_gelu_bwd__avx512 in backends/avx512/gelu.c.
// Its parameters are the definition's (CLEF_SIG_gelu_bwd, backends/kernels.h).
size_t i = 0;
for (; i + VW <= n; i += VW) {
    vf g = vf_mul(vf_load(dy + i), gelu_grad_v(vf_load(x + i)));
    vf_store(dx + i, vf_add(vf_load(dx + i), g));
}
if (i < n) {
    int t = (int)(n - i);
    vf g = vf_mul(vf_loadn(dy + i, t), gelu_grad_v(vf_loadn(x + i, t)));
    vf_storen(dx + i, vf_add(vf_loadn(dx + i, t), g), t);
}

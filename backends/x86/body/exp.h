// The body of the exp kernels (vf_exp, backends/x86/tmpl_math.h), included
// inside each x86 ISA's definition: clef_f32_exp__avx2 in
// backends/avx2/exp.c and clef_f32_exp__avx512 in backends/avx512/exp.c.
// y (n) = e^x (n), as the softmax and loss kernels compute it.
size_t i = 0;
for (; i + VW <= n; i += VW)
    vf_store(y + i, vf_exp(vf_load(x + i)));
if (i < n)
    vf_storen(y + i, vf_exp(vf_loadn(x + i, (int)(n - i))), (int)(n - i));

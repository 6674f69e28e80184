// The body of the adamw kernels (their family: backends/x86/tmpl_adamw.h),
// included inside each x86 ISA's definition of it: clef_f32_adamw__avx2 in
// backends/avx2/adamw.c and clef_f32_adamw__avx512 in backends/avx512/adamw.c.
// Its parameters are the definition's (CLEF_SIG_adamw, backends/kernels.h).
vf keep = vf_set1((float)(1.0 - (double)a->lr * (double)a->decay));
vf b1 = vf_set1(a->beta1), c1 = vf_set1(1.0f - a->beta1);
vf b2 = vf_set1(a->beta2), c2 = vf_set1(1.0f - a->beta2);
vf step = vf_set1(a->step_size), eps = vf_set1(a->eps);
const vf_divisor bc2 = vf_divisor_of(a->bc2_sqrt);
size_t i = 0;
for (size_t b0 = 0; b0 < n; b0 += ADAMW_BLOCK) {
    const size_t b1e = n - b0 < ADAMW_BLOCK ? n : b0 + ADAMW_BLOCK;
    adamw_claim(theta + b0, b1e - b0);
    for (; i + VW <= b1e; i += VW)
        adamw_v(theta + i, g + i, m + i, v + i, VW, keep, b1, c1, b2, c2, step,
                bc2, eps);
}
if (i < n)
    adamw_v(theta + i, g + i, m + i, v + i, (int)(n - i), keep, b1, c1, b2, c2,
            step, bc2, eps);

// The body of the div_by kernels (vf_div_by, backends/x86/tmpl_math.h),
// included inside each x86 ISA's definition: clef_f32_div_by__avx2 in
// backends/avx2/div_by.c and clef_f32_div_by__avx512 in
// backends/avx512/div_by.c. y (n) = a (n) / b, the way softmax rows and
// AdamW divide by one value (vf_divisor_of, vf_div_by).
const vf_divisor d = vf_divisor_of(b);
size_t i = 0;
for (; i + VW <= n; i += VW)
    vf_store(y + i, vf_div_by(vf_load(a + i), d));
if (i < n)
    vf_storen(y + i, vf_div_by(vf_loadn(a + i, (int)(n - i)), d), (int)(n - i));

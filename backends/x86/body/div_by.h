// The body of the div_by kernels (vf_div_by, backends/x86/tmpl_math.h),
// included inside each x86 ISA's definition: clef_f32_div_by__avx2 in
// backends/avx2/div_by.c and clef_f32_div_by__avx512 in
// backends/avx512/div_by.c. y (n) = a (n) / b, the way softmax rows and
// AdamW divide by one value: through vf_div_by where vf_div_by_ok(b).
    vf bv = vf_set1(b);
    const int by = vf_div_by_ok(b);
    vf rb = vf_set1(by ? 1.0f / b : 1.0f);
    size_t i = 0;
    for (; i + VW <= n; i += VW) {
        vf x = vf_load(a + i);
        vf_store(y + i, by ? vf_div_by(x, bv, rb) : vf_div(x, bv));
    }
    if (i < n) {
        vf x = vf_loadn(a + i, (int)(n - i));
        vf_storen(y + i, by ? vf_div_by(x, bv, rb) : vf_div(x, bv), (int)(n - i));
    }

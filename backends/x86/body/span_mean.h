// The body of the span_mean kernels (their family: backends/x86/tmpl_span.h),
// included inside each x86 ISA's definition of it: clef_f32_span_mean__avx2 in
// backends/avx2/span.c and clef_f32_span_mean__avx512 in
// backends/avx512/span.c. Its parameters are the definition's
// (CLEF_SIG_span_mean, backends/kernels.h).
for (int s = 0; s < nspan; s++) {
    int t0 = spans[2 * s], t1 = spans[2 * s + 1];
    float *y = Y + (size_t)s * n; // (n)
    vf len = vf_set1((float)(t1 - t0));
    for (int c = 0; c < n; c += VW) {
        int w = n - c < VW ? n - c : VW;
        vf acc = vf_zero();
        for (int t = t0; t < t1; t++) {
            const float *x = X + (size_t)t * n + c;
            acc = vf_add(acc, w == VW ? vf_load(x) : vf_loadn(x, w));
        }
        vf r = t1 > t0 ? vf_div(acc, len) : vf_zero();
        if (w == VW)
            vf_store(y + c, r);
        else
            vf_storen(y + c, r, w);
    }
}

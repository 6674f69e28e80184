// The body of the span_scatter kernels (their family:
// backends/x86/tmpl_span.h), included inside each x86 ISA's definition of it:
// clef_f32_span_scatter__avx2 in backends/avx2/span.c and
// clef_f32_span_scatter__avx512 in backends/avx512/span.c. Its parameters are
// the definition's (CLEF_SIG_span_scatter, backends/kernels.h).
for (int s = 0; s < nspan; s++) {
    int t0 = spans[2 * s], t1 = spans[2 * s + 1];
    if (t1 <= t0)
        continue;
    const float *g = dY + (size_t)s * n; // (n)
    vf len = vf_set1((float)(t1 - t0));
    for (int c = 0; c < n; c += VW) {
        int w = n - c < VW ? n - c : VW;
        vf q = vf_div(w == VW ? vf_load(g + c) : vf_loadn(g + c, w), len);
        for (int t = t0; t < t1; t++) {
            float *d = dX + (size_t)t * n + c;
            if (w == VW)
                vf_store(d, vf_add(vf_load(d), q));
            else
                vf_storen(d, vf_add(vf_loadn(d, w), q), w);
        }
    }
}

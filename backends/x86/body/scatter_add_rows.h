// The body of the scatter_add_rows kernels (their family:
// backends/x86/tmpl_gather.h), included inside each x86 ISA's definition of it:
// clef_f32_scatter_add_rows__avx2 in backends/avx2/gather.c and
// clef_f32_scatter_add_rows__avx512 in backends/avx512/gather.c. Its parameters
// are the definition's (CLEF_SIG_scatter_add_rows, backends/kernels.h).
for (int i = 0; i < nidx; i++) {
    const float *g = dY + (size_t)i * n; // (n)
    float *d = dX + (size_t)idx[i] * n;  // (n)
    int c = 0;
    for (; c + VW <= n; c += VW)
        vf_store(d + c, vf_add(vf_load(d + c), vf_load(g + c)));
    if (c < n)
        vf_storen(d + c, vf_add(vf_loadn(d + c, n - c), vf_loadn(g + c, n - c)),
                  n - c);
}

// The body of the gather_rows kernels (their family:
// backends/x86/tmpl_gather.h), included inside each x86 ISA's definition of it:
// clef_f32_gather_rows__avx2 in backends/avx2/gather.c and
// clef_f32_gather_rows__avx512 in backends/avx512/gather.c. Its parameters are
// the definition's (CLEF_SIG_gather_rows, backends/kernels.h).
for (int i = 0; i < nidx; i++) {
    const float *x = X + (size_t)idx[i] * n; // (n)
    float *y = Y + (size_t)i * n;            // (n)
    int c = 0;
    for (; c + VW <= n; c += VW)
        vf_store(y + c, vf_load(x + c));
    if (c < n)
        vf_storen(y + c, vf_loadn(x + c, n - c), n - c);
}

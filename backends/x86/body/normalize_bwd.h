// The body of the normalize_bwd kernels (their family:
// backends/x86/tmpl_normalize.h), included inside each x86 ISA's definition of
// it: clef_f32_normalize_bwd__avx2 in backends/avx2/normalize.c and
// clef_f32_normalize_bwd__avx512 in backends/avx512/normalize.c. Its parameters
// are the definition's (CLEF_SIG_normalize_bwd, backends/kernels.h).
for (int r = 0; r < rows; r++) {
    size_t o = (size_t)r * n;
    nz_back(n, eps, y + o, nrm[r], 1.0f, dy + o, dx + o);
}

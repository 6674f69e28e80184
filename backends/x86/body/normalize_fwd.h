// The body of the normalize_fwd kernels (their family:
// backends/x86/tmpl_normalize.h), included inside each x86 ISA's definition of
// it: clef_f32_normalize_fwd__avx2 in backends/avx2/normalize.c and
// clef_f32_normalize_fwd__avx512 in backends/avx512/normalize.c. Its parameters
// are the definition's (CLEF_SIG_normalize_fwd, backends/kernels.h).
for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * n;
    float nr = sqrtf(nz_dot(n, xr, xr));
    nrm[r] = nr;
    nz_scale(n, xr, nr > eps ? nr : eps, y + (size_t)r * n);
}

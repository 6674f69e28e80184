// The body of the cosine_bwd kernels (their family:
// backends/x86/tmpl_normalize.h), included inside each x86 ISA's definition of
// it: clef_f32_cosine_bwd__avx2 in backends/avx2/normalize.c and
// clef_f32_cosine_bwd__avx512 in backends/avx512/normalize.c. Its parameters
// are the definition's (CLEF_SIG_cosine_bwd, backends/kernels.h).
const float eps = CLEF_COSINE_EPS;
for (int r = 0; r < rows; r++) {
    size_t o = (size_t)r * n;
    nz_back(n, eps, ahat + o, na[r], dc[r], bhat + o, da + o);
    nz_back(n, eps, bhat + o, nb[r], dc[r], ahat + o, db + o);
}

// The body of the cosine_fwd kernels (their family:
// backends/x86/tmpl_normalize.h), included inside each x86 ISA's definition of
// it: clef_f32_cosine_fwd__avx2 in backends/avx2/normalize.c and
// clef_f32_cosine_fwd__avx512 in backends/avx512/normalize.c. Its parameters
// are the definition's (CLEF_SIG_cosine_fwd, backends/kernels.h).
const float eps = CLEF_COSINE_EPS;
for (int r = 0; r < rows; r++) {
    size_t o = (size_t)r * n;
    float ra = sqrtf(nz_dot(n, a + o, a + o));
    float rb = sqrtf(nz_dot(n, b + o, b + o));
    na[r] = ra;
    nb[r] = rb;
    nz_scale(n, a + o, ra > eps ? ra : eps, ahat + o);
    nz_scale(n, b + o, rb > eps ? rb : eps, bhat + o);
    c[r] = nz_dot(n, ahat + o, bhat + o);
}

// The body of the softmax_fwd kernels (their family:
// backends/x86/tmpl_softmax.h), included inside each x86 ISA's definition of
// it: clef_f32_softmax_fwd__avx2 in backends/avx2/softmax.c and
// clef_f32_softmax_fwd__avx512 in backends/avx512/softmax.c. Its parameters are
// the definition's (CLEF_SIG_softmax_fwd, backends/kernels.h).
for (int r = 0; r < rows; r++)
    softmax_row(n, 1.0f, x + (size_t)r * n, y + (size_t)r * n);

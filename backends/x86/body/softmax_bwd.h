// The body of the softmax_bwd kernels (their family:
// backends/x86/tmpl_softmax.h), included inside each x86 ISA's definition of
// it: clef_f32_softmax_bwd__avx2 in backends/avx2/softmax.c and
// clef_f32_softmax_bwd__avx512 in backends/avx512/softmax.c. Its parameters are
// the definition's (CLEF_SIG_softmax_bwd, backends/kernels.h).
for (int r = 0; r < rows; r++) {
    size_t o = (size_t)r * n;
    softmax_bwd_row(n, 1.0f, y + o, dy + o, dx + o, 1);
}

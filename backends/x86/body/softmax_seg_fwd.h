// The body of the softmax_seg_fwd kernels (their family:
// backends/x86/tmpl_softmax.h), included inside each x86 ISA's definition of
// it: clef_f32_softmax_seg_fwd__avx2 in backends/avx2/softmax.c and
// clef_f32_softmax_seg_fwd__avx512 in backends/avx512/softmax.c. Its parameters
// are the definition's (CLEF_SIG_softmax_seg_fwd, backends/kernels.h).
for (int s = 0; s < nseg; s++)
    softmax_row(off[s + 1] - off[s], 1.0f, x + off[s], y + off[s]);

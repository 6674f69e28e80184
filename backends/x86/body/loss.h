// The body of the loss kernels (their family: backends/x86/tmpl_loss.h),
// included inside each x86 ISA's definition of it: clef_f32_loss__avx2 in
// backends/avx2/loss.c and clef_f32_loss__avx512 in backends/avx512/loss.c. Its
// parameters are the definition's (CLEF_SIG_loss, backends/kernels.h).
double total = 0.0;
for (int q = 0; q < nq; q++) {
    int o = off[q], n = off[q + 1] - off[q];
    if (n <= 0)
        continue;
    int score = is_score ? is_score[q] != 0 : 0;
    total += loss_question_v(n, score, z + o, y + o, a, p + o, dz + o);
}
*loss += total;

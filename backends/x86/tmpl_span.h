// Span mean and its scatter, written once against the vf layer. Vectorised
// over columns with the reference's order (sum over increasing t, then divide;
// scatter adds dY/len row by row): bitwise equal to the scalar kernels.
//   span_mean:    Y (nspan, n)[s] = mean of X (T, n) rows [spans[2s], spans[2s+1])
//   span_scatter: dX[t] += dY[s] / len(s) for t in span s

void CLEF_KNAME(span_mean)(int nspan, const int *spans, int n, const float *X,
                           float *Y)
{
    CLEF_NARROW(n <= 8, clef_f32_span_mean__avx2(nspan, spans, n, X, Y));
    for (int s = 0; s < nspan; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1];
        float *y = Y + (size_t)s * n; // (n)
        vf len = vf_set1((float)(t1 - t0));
        for (int c = 0; c < n; c += VW) {
            int w = n - c < VW ? n - c : VW;
            vf acc = vf_zero();
            for (int t = t0; t < t1; t++) {
                const float *x = X + (size_t)t * n + c;
                acc = vf_add(acc, w == VW ? vf_load(x) : vf_loadn(x, w));
            }
            vf r = t1 > t0 ? vf_div(acc, len) : vf_zero();
            if (w == VW)
                vf_store(y + c, r);
            else
                vf_storen(y + c, r, w);
        }
    }
}

void CLEF_KNAME(span_scatter)(int nspan, const int *spans, int n,
                              const float *dY, float *dX)
{
    CLEF_NARROW(n <= 8, clef_f32_span_scatter__avx2(nspan, spans, n, dY, dX));
    for (int s = 0; s < nspan; s++) {
        int t0 = spans[2 * s], t1 = spans[2 * s + 1];
        if (t1 <= t0)
            continue;
        const float *g = dY + (size_t)s * n; // (n)
        vf len = vf_set1((float)(t1 - t0));
        for (int c = 0; c < n; c += VW) {
            int w = n - c < VW ? n - c : VW;
            vf q = vf_div(w == VW ? vf_load(g + c) : vf_loadn(g + c, w), len);
            for (int t = t0; t < t1; t++) {
                float *d = dX + (size_t)t * n + c;
                if (w == VW)
                    vf_store(d, vf_add(vf_load(d), q));
                else
                    vf_storen(d, vf_add(vf_loadn(d, w), q), w);
            }
        }
    }
}

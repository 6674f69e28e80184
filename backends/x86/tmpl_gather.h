// Row gather and its backward, written once against the vf layer.
//   gather_rows:      Y (nidx, n)[i] = X[idx[i]]
//   scatter_add_rows: dX[idx[i]] += dY[i], increasing i (bitwise the reference)

void CLEF_KNAME(gather_rows)(int nidx, const int *idx, int n, const float *X,
                             float *Y)
{
    CLEF_NARROW(n <= 8, clef_f32_gather_rows__avx2(nidx, idx, n, X, Y));
    for (int i = 0; i < nidx; i++) {
        const float *x = X + (size_t)idx[i] * n; // (n)
        float *y = Y + (size_t)i * n;            // (n)
        int c = 0;
        for (; c + VW <= n; c += VW)
            vf_store(y + c, vf_load(x + c));
        if (c < n)
            vf_storen(y + c, vf_loadn(x + c, n - c), n - c);
    }
}

void CLEF_KNAME(scatter_add_rows)(int nidx, const int *idx, int n,
                                  const float *dY, float *dX)
{
    CLEF_NARROW(n <= 8, clef_f32_scatter_add_rows__avx2(nidx, idx, n, dY, dX));
    for (int i = 0; i < nidx; i++) {
        const float *g = dY + (size_t)i * n; // (n)
        float *d = dX + (size_t)idx[i] * n;  // (n)
        int c = 0;
        for (; c + VW <= n; c += VW)
            vf_store(d + c, vf_add(vf_load(d + c), vf_load(g + c)));
        if (c < n)
            vf_storen(d + c, vf_add(vf_loadn(d + c, n - c), vf_loadn(g + c, n - c)), n - c);
    }
}

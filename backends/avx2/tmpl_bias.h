// Bias add and column sum, written once against the vf layer.
//   bias_add:  y (rows, n) += b (n) on every row
//   colsum:    db (n) += Σ_rows dy (rows, n); each column sums from zero over
//              increasing rows, then adds once: the scalar reference's order,
//              so the result is bitwise that of clef_f32_colsum__scalar.

void CLEF_KNAME(bias_add)(int rows, int n, const float *b, float *y)
{
    CLEF_NARROW(n <= 8, clef_f32_bias_add__avx2(rows, n, b, y));
    int nv = n / VW * VW, t = n - nv;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * n; // (n)
        for (int c = 0; c < nv; c += VW)
            vf_store(yr + c, vf_add(vf_load(yr + c), vf_load(b + c)));
        if (t)
            vf_storen(yr + nv, vf_add(vf_loadn(yr + nv, t), vf_loadn(b + nv, t)), t);
    }
}

// Sums columns [c, c + 4·VW) (the last vector has `tail` lanes) over rows.
static void colsum_block(int rows, int n, int c, int nvec, int tail,
                         const float *dy, float *db)
{
    vf s[4] = {vf_zero(), vf_zero(), vf_zero(), vf_zero()};
    for (int r = 0; r < rows; r++) {
        const float *g = dy + (size_t)r * n + c;
        for (int u = 0; u < nvec; u++) {
            int w = u == nvec - 1 ? tail : VW;
            s[u] = vf_add(s[u], w == VW ? vf_load(g + u * VW) : vf_loadn(g + u * VW, w));
        }
    }
    for (int u = 0; u < nvec; u++) {
        int w = u == nvec - 1 ? tail : VW;
        float *d = db + c + u * VW;
        if (w == VW)
            vf_store(d, vf_add(vf_load(d), s[u]));
        else
            vf_storen(d, vf_add(vf_loadn(d, w), s[u]), w);
    }
}

void CLEF_KNAME(colsum)(int rows, int n, const float *dy, float *db)
{
    CLEF_NARROW(n <= 8, clef_f32_colsum__avx2(rows, n, dy, db));
    for (int c = 0; c < n; c += 4 * VW) {
        int left = n - c;
        int nvec = left >= 4 * VW ? 4 : (left + VW - 1) / VW;
        int tail = left - (nvec - 1) * VW;
        if (tail > VW)
            tail = VW;
        colsum_block(rows, n, c, nvec, tail, dy, db);
    }
}

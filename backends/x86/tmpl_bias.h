// Bias add and column sum, written once against the vf layer.
//   bias_add:  y (rows, n) += b (n) on every row
//   colsum:    db (n) += Σ_rows dy (rows, n); each column sums from zero over
//              increasing rows, then adds once: the scalar reference's order,
//              so the result is bitwise that of clef_f32_colsum__scalar.

// Columns [c, c + w) of db += Σ_rows dy: each column's sum starts from zero
// in acc (L1) and takes the rows in order, row-major. Walking 4-vector column
// blocks down the rows instead (sums in registers) crossed B·T × w of
// memory-norm gradient once per block, a row apart, with the other thread
// waiting (docs/PERF-NOTES.md, "Threads").
#define COLSUM_W 2048 // columns per block: 8 KiB of sums
static void colsum_cols(int rows, int n, int c, int w, const float *dy,
                        float *db)
{
    if (w <= VW) { // one vector: the same adds, the sums in a register
        vf a = vf_zero();
        for (int r = 0; r < rows; r++) {
            const float *g = dy + (size_t)r * n + c;
            a = vf_add(a, w == VW ? vf_load(g) : vf_loadn(g, w));
        }
        float *d = db + c;
        if (w == VW)
            vf_store(d, vf_add(vf_load(d), a));
        else
            vf_storen(d, vf_add(vf_loadn(d, w), a), w);
        return;
    }
    _Alignas(64) float acc[COLSUM_W];
    const int nv = w / VW * VW, t = w - nv;
    for (int i = 0; i < nv; i += VW)
        vf_store(acc + i, vf_zero());
    if (t)
        vf_storen(acc + nv, vf_zero(), t);
    for (int r = 0; r < rows; r++) {
        const float *g = dy + (size_t)r * n + c;
        for (int i = 0; i < nv; i += VW)
            vf_store(acc + i, vf_add(vf_load(acc + i), vf_load(g + i)));
        if (t)
            vf_storen(acc + nv,
                      vf_add(vf_loadn(acc + nv, t), vf_loadn(g + nv, t)), t);
    }
    float *d = db + c;
    for (int i = 0; i < nv; i += VW)
        vf_store(d + i, vf_add(vf_load(d + i), vf_load(acc + i)));
    if (t)
        vf_storen(d + nv, vf_add(vf_loadn(d + nv, t), vf_loadn(acc + nv, t)),
                  t);
}

// The body of the layernorm_fwd kernels (their family:
// backends/x86/tmpl_layernorm.h), included inside each x86 ISA's definition of
// it: clef_f32_layernorm_fwd__avx2 in backends/avx2/layernorm.c and
// clef_f32_layernorm_fwd__avx512 in backends/avx512/layernorm.c. Its parameters
// are the definition's (CLEF_SIG_layernorm_fwd, backends/kernels.h).
LN_FWD_ISA_ROWS(rows, n, x, gamma, beta, y, xhat, rstd);
for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * n; // (n)
    float *yr = y + (size_t)r * n;       // (n)
    float *hr = xhat + (size_t)r * n;    // (n)
    float mean = ln_row_sum(n, xr) / (float)n;
    float var = ln_row_ss(n, xr, mean) / (float)n;
    float rs = 1.0f / sqrtf(var + CLEF_LN_EPS);
    vf m = vf_set1(mean), s = vf_set1(rs);
    // the row after next streams in while this one is written
    const char *next = (const char *)(xr + (r + 2 < rows ? 2 * (size_t)n : 0));
    int i = 0;
    for (; i + VW <= n; i += VW) {
        v_prefetch(next + i * sizeof(float));
        vf h = vf_mul(vf_sub(vf_load(xr + i), m), s);
        vf_store(hr + i, h);
        vf_store(yr + i, vf_fma(vf_load(gamma + i), h, vf_load(beta + i)));
    }
    if (i < n) {
        int t = n - i;
        vf h = vf_mul(vf_sub(vf_loadn(xr + i, t), m), s);
        vf_storen(hr + i, h, t);
        vf_storen(yr + i,
                  vf_fma(vf_loadn(gamma + i, t), h, vf_loadn(beta + i, t)), t);
    }
    rstd[r] = rs;
}

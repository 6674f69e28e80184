// The small nt path on a transposed Bᵀ, through the row kernels
// (backends/x86/tmpl_gemm.h, which includes this file; not a header of its
// own).

// nt with a short reduction (K ≤ 32) and few columns: Bᵀ (K,N) goes to a
// small stack buffer (a plain transpose, not panel packing) and the row
// kernels run on it; dot products with horizontal sums would cost more.
#define GEMM_NT_T_MAX 4096
// Rows [0, kn) (kn ≤ 8) of Bᵀ for 8 rows of B (ld ldb, the first kn floats
// read): an 8x8 register transpose, stored to bt (ld N).
static inline void nt_t8(const float *B, int ldb, int kn, float *bt, int N)
{
    v8f r[8];
    for (int i = 0; i < 8; i++) {
        const float *row = B + (size_t)i * ldb;
        r[i] = kn == 8 ? v8_load(row)
                       : v8_hilo(v8_lo4(row + 4, kn - 4), v8_lo4(row, kn));
    }
    transpose8(r);
    for (int k = 0; k < kn; k++)
        v8_store(bt + (size_t)k * N, r[k]);
}

#if VW == 8
// nt with 8 columns and K ≤ 8 on 8-lane vectors (the tiny heads' w × w
// weights): Bᵀ stays in the registers of its transpose, and each row of C
// is rows_1v's FMA chain over them (k ascending from zero, then the add
// into C), without the stack copy, its reload and the row kernels' calls.
static void gemm_nt_n8_regs(int M, int K, const float *A, int lda,
                            const float *B, int ldb, float *C, int ldc,
                            int accum)
{
    v8f r[8];
    for (int i = 0; i < 8; i++) {
        const float *row = B + (size_t)i * ldb;
        r[i] = K == 8 ? v8_load(row)
                      : v8_hilo(v8_lo4(row + 4, K - 4), v8_lo4(row, K));
    }
    transpose8(r); // r[k] = row k of Bᵀ
    for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * lda;
        vf s = vf_zero();
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) if (k < K) s =
            vf_fma(vf_set1(a[k]), r[k], s);
        rs_st(C + (size_t)i * ldc, s, 8, accum);
    }
}
#endif

// bt (K, N) = Bᵀ for B (N, K), any K: register transposes of 4, 8 or VW
// rows of B at a time, element copies for the last columns. (The small nt
// calls it for K ≤ 32, its stack buffer's bound; pack_bt for any K.)
static void gemm_transpose_b(int N, int K, const float *B, int ldb, float *bt)
{
    int j = 0;
    if (K <= 4) // 4 rows of B at a time through a 4x4 register transpose
        for (; j + 4 <= N; j += 4) {
            const float *b0 = B + (size_t)j * ldb;
            v4f r0 = v8_lo4(b0, K), r1 = v8_lo4(b0 + ldb, K);
            v4f r2 = v8_lo4(b0 + 2 * (size_t)ldb, K),
                r3 = v8_lo4(b0 + 3 * (size_t)ldb, K);
            V4_TRANSPOSE(r0, r1, r2, r3);
            float *d = bt + j;
            switch (K) { // rows k ≥ K of the transpose are zero: not stored
            case 4:
                v4_store(d + 3 * (size_t)N, r3);
                /* fall through */
            case 3:
                v4_store(d + 2 * (size_t)N, r2);
                /* fall through */
            case 2:
                v4_store(d + (size_t)N, r1);
                /* fall through */
            default:
                v4_store(d, r0);
            }
        }
    else {
        // K a multiple of 8: VW rows of B per register tile, so that each
        // row of Bᵀ is written as whole vectors, the ones the row kernels
        // load next (two 8-float stores under one 16-float load cannot be
        // forwarded: on AVX-512 the load waited for both to reach L1)
        if (K % 8 == 0)
            for (; j + VW <= N; j += VW)
                for (int k0 = 0; k0 < K; k0 += 8)
                    vf_tile_in(B + (size_t)j * ldb + k0, (size_t)ldb,
                               bt + (size_t)k0 * N + j, (size_t)N);
        // 8 rows of B at a time through an 8x8 register transpose, per
        // block of 8 columns of B (the last one partial)
        for (; j + 8 <= N; j += 8)
            for (int k0 = 0; k0 < K; k0 += 8)
                nt_t8(B + (size_t)j * ldb + k0, ldb, K - k0 < 8 ? K - k0 : 8,
                      bt + (size_t)k0 * N + j, N);
    }
    for (; j < N; j++)
        for (int k = 0; k < K; k++)
            bt[(size_t)k * N + j] = B[(size_t)j * ldb + k];
}

// The small nt's condition on its stack transpose: K ≤ 32, Bᵀ within it.
static int gemm_nt_t_fits(int N, int K)
{
    return K <= 32 && (size_t)N * K <= GEMM_NT_T_MAX;
}

static int gemm_nt_small_t(int M, int N, int K, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc,
                           int accum)
{
    if (!gemm_nt_t_fits(N, K))
        return -1;
#if VW == 8
    if (N == 8 && K <= 8) {
        gemm_nt_n8_regs(M, K, A, lda, B, ldb, C, ldc, accum);
        return 0;
    }
#endif
    _Alignas(64) float bt[GEMM_NT_T_MAX]; // Bᵀ (K, N)
    gemm_transpose_b(N, K, B, ldb, bt);
    gemm_rows_small(M, N, K, A, (size_t)lda, 1, bt, N, C, ldc, accum);
    return 0;
}

// gemm_nt_small_t's product on a Bᵀ transposed beforehand (ld ldbt): the
// same row kernels on the same values (gemm_nt_n8_regs' chains are theirs
// too), so the same bits. -1 where gemm_nt_small_t would not run.
static int gemm_nt_bt_small(int M, int N, int K, const float *A, int lda,
                            const float *Bt, int ldbt, float *C, int ldc,
                            int accum)
{
    if (!gemm_nt_t_fits(N, K))
        return -1;
    gemm_rows_small(M, N, K, A, (size_t)lda, 1, Bt, ldbt, C, ldc, accum);
    return 0;
}

// Panel packing of the packed path (backends/x86/tmpl_gemm.h, which
// includes this file; not a header of its own): op(A) into MR-wide and
// op(B) into NR-wide panels, zero-padded to the full width.

// pack_rows reads 8 rows side by side, 32 bytes of each per step, the rows
// ld apart (a page or more at the head's weights): it prefetches each row
// PACK_ROWS_PF floats (4 lines) ahead, once per line. Measured on Zen 5
// (isa-bench, 1 thread), nt at 128 × 1024 × 5120, whose B pack transposes
// the weight: 88-92 % of oneDNN without, 99 % with; 512 × 1024 × 5120:
// 95-97 % → 98-100 %. 256 bytes ahead was level with 512, 1 KiB worse.
#define PACK_ROWS_PF 64

// Panel of width W from a source whose panel index runs along ROWS:
//   dst (kc, W)[k][i] = src[i·ld + k] for i < w, 0 for w ≤ i < W.
static void pack_rows(int W, int w, int kc, const float *src, int ld,
                      float *dst)
{
    int i0 = 0;
    for (; i0 < w; i0 += 8) {
        int ni = w - i0 < 8 ? w - i0 : 8; // valid source rows
        int ns = W - i0 < 8 ? W - i0 : 8; // lanes stored
        v8i ms = v8_first_i(ns);          // for the partial stores (vec.h)
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            v8f r[8];
            if (k % 16 == 0 && k + PACK_ROWS_PF < kc)
                for (int i = 0; i < ni; i++)
                    v_prefetch(src + (size_t)(i0 + i) * ld + k + PACK_ROWS_PF);
            for (int i = 0; i < 8; i++)
                r[i] = i < ni ? v8_load(src + (size_t)(i0 + i) * ld + k)
                              : v8_zero();
            transpose8(r);
            for (int j = 0; j < 8; j++) {
                float *d = dst + (size_t)(k + j) * W + i0;
                if (ns == 8)
                    v8_store(d, r[j]);
                else
                    v8_storen_mask(d, ms, ns, r[j]);
            }
        }
        for (; k < kc; k++)
            for (int i = 0; i < ns; i++)
                dst[(size_t)k * W + i0 + i] =
                    i < ni ? src[(size_t)(i0 + i) * ld + k] : 0.0f;
    }
    for (; i0 < W; i0++) // whole zero lanes beyond w (w a multiple of 8)
        for (int k = 0; k < kc; k++)
            dst[(size_t)k * W + i0] = 0.0f;
}

// Panel of width W from a source whose panel index runs along COLUMNS:
//   dst (kc, W)[k][i] = src[k·ld + i] for i < w, 0 beyond.
static void pack_cols(int W, int w, int kc, const float *src, int ld,
                      float *dst)
{
    for (int k = 0; k < kc; k++) {
        const float *s = src + (size_t)k * ld;
        float *d = dst + (size_t)k * W;
        int i = 0;
        for (; i + VW <= w; i += VW)
            vf_store(d + i, vf_load(s + i));
        for (; i < W; i += VW) {
            int n = w - i;
            vf v = n > 0 ? (n < VW ? vf_loadn(s + i, n) : vf_load(s + i))
                         : vf_zero();
            int st = W - i < VW ? W - i : VW;
            if (st == VW)
                vf_store(d + i, v);
            else
                vf_storen(d + i, v, st);
        }
    }
}

// The layout of one GEMM call: how to reach op(A) rows and op(B) columns.
typedef struct gemm_layout {
    int a_trans; // 0: A (M,K) rows are C rows (nt, nn); 1: A (K,M) (tn)
    int b_trans; // 0: B (K,N) (nn, tn);                 1: B (N,K) (nt)
} gemm_layout;

// Packs NR-panel jp (columns j0 + jp·NR ..) of op(B)[p0:p0+kc, j0:j0+n].
static void pack_b_panel(gemm_layout L, int n, int kc, const float *B, int ldb,
                         int j0, int p0, int jp, float *Bp)
{
    int jr = jp * GEMM_NR;
    int nr = n - jr < GEMM_NR ? n - jr : GEMM_NR;
    float *d = Bp + (size_t)jr * kc;
    if (L.b_trans)
        pack_rows(GEMM_NR, nr, kc, B + (size_t)(j0 + jr) * ldb + p0, ldb, d);
    else
        pack_cols(GEMM_NR, nr, kc, B + (size_t)p0 * ldb + j0 + jr, ldb, d);
}

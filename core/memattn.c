// Memory attention in absorbed form: see memattn.h for the algebra.
//
// Two row orders of the (h·nq, w) per-head tensors:
//   head-major   head hh, batch row r           at row hh·nq + r
//                (the per-head products with W_k,h / W_v,h: one GEMM per
//                head over the whole batch, so their weight gradients are
//                single GEMMs with a fixed order)
//   record-major record b, head hh, its row i   at row h·q_off[b] + hh·nq_b + i
//                (the products with a record's memory: one GEMM per record
//                over all its heads, so the memory is read once per product)
#include "memattn.h"
#include "mm.h"

#include <math.h>
#include <string.h>

#include "par.h"
#include "rows.h"

int clef_memattn_mode(const char *name)
{
    static const char *const names[] = {"auto", "project", "absorb"};
    static const int modes[] = {CLEF_MEMATTN_AUTO, CLEF_MEMATTN_PROJECT,
                                CLEF_MEMATTN_ABSORB};
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, names[i]))
            return modes[i];
    return -1;
}

int clef_memattn_absorbs(int mode, int w, int h, double nqT, double T)
{
    if (mode == CLEF_MEMATTN_PROJECT)
        return 0;
    if (mode == CLEF_MEMATTN_ABSORB)
        return 1;
    // 6·h·Σ nq_b T_b·w against 6·T·w² + 6·Σ nq_b T_b·w multiply-adds
    return (double)(h - 1) * nqT < T * (double)w;
}

// The per-head products (nq, w, dh) are small GEMMs that would each run on
// one thread: the heads themselves split across threads once the products
// together are worth it. Each head writes its own rows or columns.
static int heads_parallel(int nq, int w)
{
    return (double)nq * w * w >= 1e6;
}

// The score scale of every attention kernel: 1/√dh rounded to float.
static float attn_scale(int dh)
{
    return (float)(1.0 / sqrt((double)dh));
}

// Copies between the two row orders, scaled by s (s = 1 copies exactly):
// head-major → record-major when to_records, else the reverse.
static void reorder(const clef_memattn *ma, const float *src, float *dst,
                    float s, int to_records)
{
    const int w = ma->w, h = ma->h, nq = ma->q_off[ma->nb];
    // one (record, head) block of rows per iteration: disjoint outputs
    CLEF_PAR_FOR((size_t)nq * h * w >= ((size_t)1 << 16), int, bh, ma->nb * h,
        const int b = bh / h, hh = bh % h;
        const int q0 = ma->q_off[b], n = ma->q_off[b + 1] - q0;
        for (int i = 0; i < n; i++) {
            const size_t hm = ((size_t)hh * nq + q0 + i) * w;
            const size_t rm = ((size_t)h * q0 + (size_t)hh * n + i) * w;
            const float *x = src + (to_records ? hm : rm);
            float *y = dst + (to_records ? rm : hm);
            _Pragma("omp simd")
            for (int j = 0; j < w; j++)
                y[j] = x[j] * s;
        }
    );
}

// 1 when the two row orders are the same rows (one record: head hh, row i
// at hh·nq + i in both), so an unscaled reorder would only copy.
static int one_order(const clef_memattn *ma)
{
    return ma->nb == 1;
}

static void to_records(const clef_memattn *ma, const float *src, float *dst,
                       float s)
{
    reorder(ma, src, dst, s, 1);
}

static void to_heads(const clef_memattn *ma, const float *src, float *dst,
                     float s)
{
    reorder(ma, src, dst, s, 0);
}

size_t clef_mempack_nt_floats(const clef_gemm_prepack *ops, int T, int w)
{
    return (ops->b_size(T, w) + 15) & ~(size_t)15;
}

size_t clef_mempack_nn_floats(const clef_gemm_prepack *ops, int T, int w)
{
    return (ops->b_size(w, T) + 15) & ~(size_t)15;
}

size_t clef_mempack_bound(int nb, int T, int w)
{
    const size_t a = ((size_t)T + (size_t)nb * CLEF_PACK_PAD) * w;
    const size_t b = ((size_t)w + CLEF_PACK_PAD) * T;
    return (a > b ? a : b) + (size_t)16 * nb;
}

void clef_memattn_pack(const clef_memattn *ma)
{
    const clef_mempack *pk = ma->pk;
    CLEF_PAR_FOR(ma->nb > 1, int, b, ma->nb,
        const int t0 = ma->t_off[b], T = ma->t_off[b + 1] - t0;
        const float *mem = ma->mem + (size_t)t0 * ma->ldm;
        if (pk->transposed) {
            pk->ops->pack_bt(T, ma->w, mem, ma->ldm, pk->t + (size_t)t0 * ma->w);
        } else {
            pk->ops->pack_b(1, T, ma->w, mem, ma->ldm, pk->nt + pk->nt_off[b]);
            pk->ops->pack_b(0, ma->w, T, mem, ma->ldm, pk->nn + pk->nn_off[b]);
        }
    );
}

void clef_memattn_prepare(const clef_kernels *k, const clef_memattn *ma)
{
    const int T = ma->t_off[ma->nb];
    if (ma->mem16)
        clef_mm_round(k, T, ma->w, ma->mem, ma->ldm, ma->mem16);
    else if (ma->pk)
        clef_memattn_pack(ma);
}

// C (n, T_b) [+]= X (n, w) · mem_bᵀ: record b's qt memᵀ or dmt memᵀ.
static void mem_nt(const clef_kernels *k, const clef_memattn *ma, int b, int n,
                   const float *X, float *C, int acc)
{
    const int t0 = ma->t_off[b], T = ma->t_off[b + 1] - t0;
    const clef_mempack *pk = ma->pk;
    if (ma->mem16) {
        clef_mm_nt_b16(k, n, T, ma->w, X, ma->w, ma->mem16 + (size_t)t0 * ma->w,
                       ma->w, C, T, acc);
        return;
    }
    if (pk && pk->transposed &&
        pk->ops->gemm_nt_bt(n, T, ma->w, X, ma->w, pk->t + (size_t)t0 * ma->w,
                            T, C, T, acc) == 0)
        return;
    if (pk && !pk->transposed &&
        pk->ops->gemm_pb(0, n, T, ma->w, X, ma->w, pk->nt + pk->nt_off[b], C, T,
                         acc) == 0)
        return;
    clef_mm_nt(k, n, T, ma->w, X, ma->w, ma->mem + (size_t)t0 * ma->ldm,
               ma->ldm, C, T, acc);
}

// C (n, w) [+]= P (n, T_b) · mem_b: record b's A mem or dS mem.
static void mem_nn(const clef_kernels *k, const clef_memattn *ma, int b, int n,
                   const float *P, float *C, int acc)
{
    const int t0 = ma->t_off[b], T = ma->t_off[b + 1] - t0;
    const clef_mempack *pk = ma->pk;
    if (ma->mem16) {
        clef_mm_nn_b16(k, n, ma->w, T, P, T, ma->mem16 + (size_t)t0 * ma->w,
                       ma->w, C, ma->w, acc);
        return;
    }
    if (pk && !pk->transposed &&
        pk->ops->gemm_pb(0, n, ma->w, T, P, T, pk->nn + pk->nn_off[b], C, ma->w,
                         acc) == 0)
        return;
    clef_mm_nn(k, n, ma->w, T, P, T, ma->mem + (size_t)t0 * ma->ldm, ma->ldm, C,
               ma->w, acc);
}

void clef_memattn_fwd(const clef_kernels *k, const clef_mem_absorb *ab,
                      clef_inproj p, float *o)
{
    const clef_memattn *ma = &ab->ma;
    const int w = ma->w, h = ma->h, dh = w / h, nq = ma->q_off[ma->nb];
    const int par = heads_parallel(nq, w);
    const float *q = ab->q, *W_k = p.w + (size_t)w * w; // (nq, w), (w, w)
    const float *W_v = p.w + (size_t)2 * w * w, *b_v = p.b + 2 * w;
    float *qt = ab->qt, *att = ab->att, *mt = ab->mt, *scr = ab->scr;
    // scr (head-major) = q_h W_k,h; qt = s · scr, record-major
    CLEF_PAR_FOR(par, int, hh, h,
        clef_mm_nn(k, nq, w, dh, q + hh * dh, w, W_k + (size_t)hh * dh * w, w,
                   scr + (size_t)hh * nq * w, w, 0);
    );
    to_records(ma, scr, qt, attn_scale(dh));
    // per record: A (h·nq_b, T_b) = softmax(qt_b memᵀ); am = A mem, straight
    // into mt when the row orders coincide
    float *am = one_order(ma) ? mt : scr;
    CLEF_PAR_FOR(ma->nb > 1, int, b, ma->nb,
        const int q0 = ma->q_off[b], n = h * (ma->q_off[b + 1] - q0);
        const int T = ma->t_off[b + 1] - ma->t_off[b];
        float *A = att + (size_t)h * ma->m_off[b];
        mem_nt(k, ma, b, n, qt + (size_t)h * q0 * w, A, 0);
        k->softmax_fwd(n, T, A, A);
        mem_nn(k, ma, b, n, A, am + (size_t)h * q0 * w, 0);
    );
    if (am != mt)
        to_heads(ma, scr, mt, 1.0f);
    // o_h = mt_h W_v,hᵀ + b_v,h
    CLEF_PAR_FOR(par, int, hh, h,
        clef_mm_nt(k, nq, dh, w, mt + (size_t)hh * nq * w, w,
                   W_v + (size_t)hh * dh * w, w, o + hh * dh, w, 0);
    );
    clef_rows_bias_add(k, nq, w, b_v, o);
}

void clef_memattn_bwd(const clef_kernels *k, const clef_mem_absorb *ab,
                      clef_inproj p, clef_inproj g, const float *dO, float *dq,
                      float *dmem, int wacc)
{
    const clef_memattn *ma = &ab->ma;
    const int w = ma->w, h = ma->h, dh = w / h, nq = ma->q_off[ma->nb];
    const int par = heads_parallel(nq, w), lddm = w;
    const float *q = ab->q, *qt = ab->qt, *att = ab->att, *mt = ab->mt;
    const float *W_k = p.w + (size_t)w * w, *W_v = p.w + (size_t)2 * w * w;
    float *gW_k = g.w + (size_t)w * w, *gW_v = g.w + (size_t)2 * w * w;
    float *gb_v = g.b + 2 * w, *scr1 = ab->scr, *scr2 = ab->scr2;
    float *ascr = ab->ascr;
    // o_h = mt_h W_v,hᵀ + b_v,h: dmt_h = dO_h W_v,h (head-major, straight
    // into scr2 when the row orders coincide); dW_v,h += dO_hᵀ mt_h
    float *dmt_h = one_order(ma) ? scr2 : scr1;
    CLEF_PAR_FOR(par, int, hh, h,
        clef_mm_nn(k, nq, w, dh, dO + hh * dh, w, W_v + (size_t)hh * dh * w, w,
                   dmt_h + (size_t)hh * nq * w, w, 0);
        clef_mm_tn(k, dh, w, nq, dO + hh * dh, w, mt + (size_t)hh * nq * w, w,
                   gW_v + (size_t)hh * dh * w, w, wacc);
    );
    k->colsum(nq, w, dO, gb_v);
    if (dmt_h != scr2)
        to_records(ma, scr1, scr2, 1.0f);
    // per record, with dA and dS (h·nq_b, T_b) in its slice of ascr:
    //   dA = dmt memᵀ; dmem += Aᵀ dmt; dS = softmax-back(A, dA);
    //   dqt = dS mem (into scr2); dmem += dSᵀ qt
    CLEF_PAR_FOR(ma->nb > 1, int, b, ma->nb,
        const int q0 = ma->q_off[b], n = h * (ma->q_off[b + 1] - q0);
        const int t0 = ma->t_off[b], T = ma->t_off[b + 1] - t0;
        const float *A = att + (size_t)h * ma->m_off[b];
        float *dA = ascr + (size_t)2 * h * ma->m_off[b];
        float *dS = dA + (size_t)n * T;
        float *dmt = scr2 + (size_t)h * q0 * w;
        float *dm = dmem + (size_t)t0 * lddm;
        mem_nt(k, ma, b, n, dmt, dA, 0);
        clef_mm_tn(k, T, w, n, A, T, dmt, w, dm, lddm, 1);
        memset(dS, 0, sizeof(float) * (size_t)n * T);
        k->softmax_bwd(n, T, A, dA, dS);
        mem_nn(k, ma, b, n, dS, dmt, 0); // now dqt
        clef_mm_tn(k, T, w, n, dS, T, qt + (size_t)h * q0 * w, w, dm, lddm, 1);
    );
    // qt = s · q_h W_k,h: with g_h = s · dqt_h (head-major, scr1),
    // dq_h = g_h W_k,hᵀ and dW_k,h += q_hᵀ g_h (b_k: zero by construction)
    to_heads(ma, scr2, scr1, attn_scale(dh));
    CLEF_PAR_FOR(par, int, hh, h,
        clef_mm_nt(k, nq, dh, w, scr1 + (size_t)hh * nq * w, w,
                   W_k + (size_t)hh * dh * w, w, dq + hh * dh, w, 0);
        clef_mm_tn(k, dh, w, nq, q + hh * dh, w, scr1 + (size_t)hh * nq * w, w,
                   gW_k + (size_t)hh * dh * w, w, wacc);
    );
}

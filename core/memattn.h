// Memory attention in absorbed form (private to core/; docs/ARCHITECTURE.md).
//
// A memory attention's queries are few (a record's options or questions)
// and its keys are the record's T memory rows. K = mem W_kᵀ + b_k and
// V = mem W_vᵀ + b_v are never formed; per head h, with s = 1/√dh:
//   qt_h = s · q_h W_k,h          (nq, w)   W_k,h = rows [h·dh, (h+1)·dh)
//   A_h  = softmax(qt_h memᵀ)     (nq, T)   b_k adds q_h·b_k,h to a whole
//                                           row: the softmax ignores it
//   mt_h = A_h mem                (nq, w)
//   o_h  = mt_h W_v,hᵀ + b_v,h    (nq, dh)  the rows of A sum to 1
// The same numbers as HEAD.md's attention up to float rounding, at
// 6·h·nq·T·w multiply-adds per record (forward and backward) instead of
// 6·T·w² + 6·nq·T·w: fewer whenever (h − 1)·nq < w.
#ifndef CLEF_MEMATTN_H
#define CLEF_MEMATTN_H

#include <stddef.h>

#include "kernels.h"

// A memory pre-packed for the products that read it (kernels.h,
// clef_gemm_prepack): every memory attention reads its record's memory in
// qt memᵀ and A mem forward and again in the backward pass, and the L field
// layers all read the same M, so it is packed once per batch instead of
// once per product. Record b's op(B) of qt memᵀ (N = T_b, K = w) starts at
// nt + nt_off[b], that of A mem (N = w, K = T_b) at nn + nn_off[b].
// A head too narrow to pack (clef_ws_prepacks false) keeps its memory
// transposed instead when ops has gemm_nt_bt (transposed 1): record b's
// memᵀ (w, T_b) at t + w·t_off[b], read by qt memᵀ and dmt memᵀ, which
// would otherwise transpose the memory on every call; A mem and the
// backward's products read the memory itself.
// In bf16 (a table with k->mm) there are no float panels: the memory is
// rounded to bf16 once per batch instead, (T, w) dense at m16 (in the space
// of nt, or of t for a narrow head), and read by every product that would
// round it again.
typedef struct clef_mempack {
    const clef_gemm_prepack *ops;
    float *nt, *nn;
    const size_t *nt_off, *nn_off; // (nb + 1) each
    float *t;                      // (T, w) floats, used when transposed
    int transposed;
    uint16_t *m16; // (T, w) bf16: the memory rounded, in bf16 training
} clef_mempack;

// The batch as one memory attention sees it. Queries of record b are rows
// [q_off[b], q_off[b+1]) of every (nq, ·) tensor, its memory rows
// [t_off[b], t_off[b+1]) of mem; its maps start at h·m_off[b] in att.
typedef struct clef_memattn {
    int nb, w, h;
    const int *q_off, *t_off;
    const size_t *m_off;
    const float *mem; // (T, ldm): memory_norm(M) or M
    int ldm;
    const clef_mempack *pk; // mem pre-packed, or NULL: packed per product
    uint16_t *mem16;        // bf16 tables: mem rounded (T, w), or NULL
} clef_memattn;

// Floats of record b's two packs (ops->b_size of each, 16-float aligned);
// the workspace bounds their sums (clef_mempack_bound).
size_t clef_mempack_nt_floats(const clef_gemm_prepack *ops, int T, int w);
size_t clef_mempack_nn_floats(const clef_gemm_prepack *ops, int T, int w);
// A bound on Σ_b of either, for nb records of T rows in all.
size_t clef_mempack_bound(int nb, int T, int w);
// Packs (or transposes) ma->mem into ma->pk (records in parallel).
void clef_memattn_pack(const clef_memattn *ma);
// What the batch's products read of ma->mem, made once: rounded into
// ma->mem16 (bf16 tables), else packed as clef_memattn_pack (ma->pk), else
// nothing.
void clef_memattn_prepare(const clef_kernels *k, const clef_memattn *ma);

// The absorbed form of one attention: the batch view, its projected queries
// q (nq, w: in_proj rows [0, w) applied), the buffers the forward pass saves
// (qt and mt: h·nq·w floats each, att: the maps) or scribbles on (scr).
// qt holds record b's heads at rows h·q_off[b] .., mt head h at rows h·nq ..
typedef struct clef_mem_absorb {
    clef_memattn ma;
    const float *q;
    float *qt, *att, *mt;
    float *scr;         // scratch (h·nq, w)
    float *scr2, *ascr; // backward scratch: (h·nq, w); 2·h·Σ nq_b·T_b
} clef_mem_absorb;

// An attention's packed in_proj as the reference stores it, params or grads:
// w (3w, w) = [W_q; W_k; W_v], b (3w). The absorbed form reads W_k, W_v and
// b_v (b_k: see clef_memattn_bwd).
typedef struct clef_inproj {
    float *w, *b;
} clef_inproj;

// Which form runs: CLEF_MEMATTN_AUTO picks the one with fewer multiply-adds.
enum {
    CLEF_MEMATTN_AUTO = 0,
    CLEF_MEMATTN_PROJECT = 1,
    CLEF_MEMATTN_ABSORB = 2
};

// The CLEF_MEMATTN_* of "auto", "project" or "absorb"; -1 for anything else.
int clef_memattn_mode(const char *name);

// 1 when mode (CLEF_MEMATTN_*) runs the absorbed form for a batch of queries
// whose Σ_b nq_b·T_b is nqT, against T memory rows in all.
int clef_memattn_absorbs(int mode, int w, int h, double nqT, double T);

// Forward from ab->q with in_proj p: saves ab->qt, ab->att, ab->mt;
// o (nq, w) is overwritten.
void clef_memattn_fwd(const clef_kernels *k, const clef_mem_absorb *ab,
                      clef_inproj p, float *o);

// Backward given dO (nq, w), with in_proj p and its gradient g: dq (nq, w)
// overwritten; g.b's b_v and dmem (T, w) accumulated, g.w's W_k and W_v
// rows too when wacc (else overwritten: the update's first backward,
// clef_grads_prepare). The key bias gets no gradient: zero by construction.
// Records run in parallel, each on its own slice of ab->ascr.
void clef_memattn_bwd(const clef_kernels *k, const clef_mem_absorb *ab,
                      clef_inproj p, clef_inproj g, const float *dO, float *dq,
                      float *dmem, int wacc);

#endif

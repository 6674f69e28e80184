// clef kernel interface: every op the joint schema head needs (HEAD.md §4-§8).
//
// Conventions (every backend obeys them; tests/ and bench/ check them):
//   - row-major float32; a tensor comment "X (T, d)" means T rows of d floats.
//   - GEMM and attention take leading dimensions (ld*) in floats; every other
//     op works on contiguous rows.
//   - forward outputs are overwritten; backward outputs ACCUMULATE (+=) into
//     gradients the caller zeroed (llm.c style). Exceptions are noted.
//   - no kernel allocates per call; scratch, where needed, is passed in (the
//     packed GEMM keeps one packing buffer per calling thread, grown once).
//   - results never depend on the thread count: a kernel that splits work
//     splits it over independent outputs, never over a reduction.
#ifndef CLEF_KERNELS_H
#define CLEF_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define CLEF_LN_EPS 1e-5f         // LayerNorm variance epsilon (HEAD.md §4)
#define CLEF_NORMALIZE_EPS 1e-12f // normalize(x) = x / max(|x|, 1e-12)
#define CLEF_COSINE_EPS 1e-8f     // cosine(a,b) eps per operand

// Each op's signature is written once, as CLEF_SIG_<sig> (the parameter
// list) and CLEF_ARGS_<sig> (the same names, as a call's arguments); the op
// list below turns them into the types clef_<sig>_t (a function type, for
// declaring kernels) and clef_<sig>_fn (a pointer to one).

// C (M,N) = [C +] op(A) · op(B). `accumulate` 0 overwrites C, 1 adds to it.
//   gemm_nt: A (M,K), B (N,K)   C = A·Bᵀ   forward linear y = x Wᵀ
//   gemm_nn: A (M,K), B (K,N)   C = A·B    backward dx = dy W
//   gemm_tn: A (K,M), B (K,N)   C = Aᵀ·B   backward dW = dyᵀ x
#define CLEF_SIG_gemm                                                          \
    (int M, int N, int K, const float *A, int lda, const float *B, int ldb,    \
     float *C, int ldc, int accumulate)
#define CLEF_ARGS_gemm (M, N, K, A, lda, B, ldb, C, ldc, accumulate)

// The empty sum (K = 0) of a GEMM of either precision: C = 0, or C
// unchanged when accumulating.
static inline void clef_gemm_empty_sum(int M, int N, float *C, int ldc,
                                       int accumulate)
{
    if (accumulate)
        return;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            C[(size_t)i * ldc + j] = 0.0f;
}

// The same products with bf16 operands (mixed precision, issue 20): A and B
// are bf16 bit patterns (uint16_t: the top half of a float32), lda and ldb
// in bf16 elements; C stays float32 (ldc in floats), products are summed in
// at least float32 and `accumulate` means what it means above. Same layouts:
//   gemm_bf16_nt: A (M,K), B (N,K)   C = A·Bᵀ   y = x Wᵀ (x̂ and W in bf16)
//   gemm_bf16_nn: A (M,K), B (K,N)   C = A·B    dx = dy W
//   gemm_bf16_tn: A (K,M), B (K,N)   C = Aᵀ·B   dW = dyᵀ x
// The scalar reference sums the exact products in double and rounds once;
// the hardware kernels (vdpbf16ps, _tile_dpbf16ps; oneDNN's) sum in float in
// their own order and treat denormal operands and results as zero, so they
// match it within (K + 2) FLT_EPSILON Σ|a·b| (bench/case_gemm_bf16.c).
// No bf16 GEMM pre-packs: the amx and avx512_bf16 kernels pack both
// operands per call (backends/x86/bf16_pack.h); in an update each weight is
// read once per form, so a pack made once per update would not be read
// twice (docs/PERF-NOTES.md, "bf16 on Zen 5, second pass"). CPUs without
// bf16 arithmetic run them on the fp32 kernels (backends/gemm_bf16_widen.h).
#define CLEF_SIG_gemm_bf16                                                     \
    (int M, int N, int K, const uint16_t *A, int lda, const uint16_t *B,       \
     int ldb, float *C, int ldc, int accumulate)
#define CLEF_ARGS_gemm_bf16 (M, N, K, A, lda, B, ldb, C, ldc, accumulate)
// y (n) = bf16(x (n)): round to nearest, ties to even, on the bits
// (denormals kept, never flushed); a NaN stays a NaN and becomes quiet; ±Inf
// stay ±Inf, and a finite value that rounds past the largest bf16 gives ±Inf.
#define CLEF_SIG_cvt_bf16 (size_t n, const float *x, uint16_t *y)
#define CLEF_ARGS_cvt_bf16 (n, x, y)

// y (rows, n) += b (n) on every row.
#define CLEF_SIG_bias_add (int rows, int n, const float *b, float *y)
#define CLEF_ARGS_bias_add (rows, n, b, y)
// db (n) += Σ_rows dy (rows, n): the bias gradient.
#define CLEF_SIG_colsum (int rows, int n, const float *dy, float *db)
#define CLEF_ARGS_colsum (rows, n, dy, db)

// LayerNorm over the last axis, eps CLEF_LN_EPS.
//   x (rows,n) -> y (rows,n) = gamma ⊙ xhat + beta; saves xhat (rows,n), rstd
//   (rows).
#define CLEF_SIG_layernorm_fwd                                                 \
    (int rows, int n, const float *x, const float *gamma, const float *beta,   \
     float *y, float *xhat, float *rstd)
#define CLEF_ARGS_layernorm_fwd (rows, n, x, gamma, beta, y, xhat, rstd)
// dx += rstd (dxh − mean(dxh) − xhat·mean(dxh⊙xhat)), dxh = dy⊙gamma;
// dgamma += Σ dy⊙xhat; dbeta += Σ dy. dx may be NULL (gradients of gamma/beta
// only).
#define CLEF_SIG_layernorm_bwd                                                 \
    (int rows, int n, const float *dy, const float *xhat, const float *rstd,   \
     const float *gamma, float *dx, float *dgamma, float *dbeta)
#define CLEF_ARGS_layernorm_bwd                                                \
    (rows, n, dy, xhat, rstd, gamma, dx, dgamma, dbeta)

// Exact-erf GELU: y = x Φ(x). Backward: dx += dy (Φ(x) + x φ(x)).
#define CLEF_SIG_gelu_fwd (size_t n, const float *x, float *y)
#define CLEF_ARGS_gelu_fwd (n, x, y)
#define CLEF_SIG_gelu_bwd (size_t n, const float *x, const float *dy, float *dx)
#define CLEF_ARGS_gelu_bwd (n, x, dy, dx)

// Row softmax: y (rows,n) = softmax(x) per row (max-subtracted; -INF entries
// give 0). Backward: dx += y ⊙ (dy − Σ dy⊙y).
#define CLEF_SIG_softmax_fwd (int rows, int n, const float *x, float *y)
#define CLEF_ARGS_softmax_fwd (rows, n, x, y)
#define CLEF_SIG_softmax_bwd                                                   \
    (int rows, int n, const float *y, const float *dy, float *dx)
#define CLEF_ARGS_softmax_bwd (rows, n, y, dy, dx)

// Segmented softmax: segment s covers x[off[s] .. off[s+1]) (off has nseg+1
// entries, off[0] = 0); each segment is normalised on its own.
#define CLEF_SIG_softmax_seg_fwd                                               \
    (int nseg, const int *off, const float *x, float *y)
#define CLEF_ARGS_softmax_seg_fwd (nseg, off, x, y)
#define CLEF_SIG_softmax_seg_bwd                                               \
    (int nseg, const int *off, const float *y, const float *dy, float *dx)
#define CLEF_ARGS_softmax_seg_bwd (nseg, off, y, dy, dx)

// Multi-head attention core (the in/out projections are GEMMs around it).
//   Q (nq, heads*dh) ld ldq, K (nk, ·) ld ldk, V (nk, ·) ld ldv
//   A (heads, nq, nk) = softmax_rows(Q_h K_hᵀ / √dh)   saved for backward
//   O (nq, heads*dh) ld ldo = concat_h A_h V_h         overwritten
#define CLEF_SIG_attention_fwd                                                 \
    (int nq, int nk, int heads, int dh, const float *Q, int ldq,               \
     const float *K, int ldk, const float *V, int ldv, float *A, float *O,     \
     int ldo)
#define CLEF_ARGS_attention_fwd                                                \
    (nq, nk, heads, dh, Q, ldq, K, ldk, V, ldv, A, O, ldo)
// dQ/dK/dV += the gradients given dO (nq, heads*dh). scratch: nq*nk floats.
#define CLEF_SIG_attention_bwd                                                 \
    (int nq, int nk, int heads, int dh, const float *Q, int ldq,               \
     const float *K, int ldk, const float *V, int ldv, const float *A,         \
     const float *dO, int lddo, float *dQ, int lddq, float *dK, int lddk,      \
     float *dV, int lddv, float *scratch)
#define CLEF_ARGS_attention_bwd                                                \
    (nq, nk, heads, dh, Q, ldq, K, ldk, V, ldv, A, dO, lddo, dQ, lddq, dK,     \
     lddk, dV, lddv, scratch)

// Span mean: Y (nspan, n)[s] = mean of X (T, n) rows [spans[2s], spans[2s+1]).
#define CLEF_SIG_span_mean                                                     \
    (int nspan, const int *spans, int n, const float *X, float *Y)
#define CLEF_ARGS_span_mean (nspan, spans, n, X, Y)
// Its scatter (backward): dX[t] += dY[s] / len(s) for t in span s.
#define CLEF_SIG_span_scatter                                                  \
    (int nspan, const int *spans, int n, const float *dY, float *dX)
#define CLEF_ARGS_span_scatter (nspan, spans, n, dY, dX)

// Row gather Y (nidx, n)[i] = X[idx[i]]; its backward dX[idx[i]] += dY[i].
#define CLEF_SIG_gather_rows                                                   \
    (int nidx, const int *idx, int n, const float *X, float *Y)
#define CLEF_ARGS_gather_rows (nidx, idx, n, X, Y)
#define CLEF_SIG_scatter_add_rows                                              \
    (int nidx, const int *idx, int n, const float *dY, float *dX)
#define CLEF_ARGS_scatter_add_rows (nidx, idx, n, dY, dX)

// normalize rows: y = x / max(|x|, eps); saves nrm (rows) = |x|.
// Backward: dx += |x| > eps ? (dy − y (y·dy)) / |x| : dy / eps.
#define CLEF_SIG_normalize_fwd                                                 \
    (int rows, int n, float eps, const float *x, float *y, float *nrm)
#define CLEF_ARGS_normalize_fwd (rows, n, eps, x, y, nrm)
#define CLEF_SIG_normalize_bwd                                                 \
    (int rows, int n, float eps, const float *y, const float *nrm,             \
     const float *dy, float *dx)
#define CLEF_ARGS_normalize_bwd (rows, n, eps, y, nrm, dy, dx)

// cosine per row: c (rows) = â·b̂ with â = a / max(|a|, CLEF_COSINE_EPS);
// saves ahat, bhat (rows,n) and na, nb (rows). Backward: da, db += .
#define CLEF_SIG_cosine_fwd                                                    \
    (int rows, int n, const float *a, const float *b, float *ahat,             \
     float *bhat, float *na, float *nb, float *c)
#define CLEF_ARGS_cosine_fwd (rows, n, a, b, ahat, bhat, na, nb, c)
#define CLEF_SIG_cosine_bwd                                                    \
    (int rows, int n, const float *ahat, const float *bhat, const float *na,   \
     const float *nb, const float *dc, float *da, float *db)
#define CLEF_ARGS_cosine_bwd (rows, n, ahat, bhat, na, nb, dc, da, db)

// AdamW, exactly torch.optim.AdamW (HEAD.md §8), on n contiguous parameters.
// step_size = lr / (1 − β1ᵗ) and bc2_sqrt = √(1 − β2ᵗ) are computed by the
// caller in double and rounded to float, as PyTorch's Python scalars are.
typedef struct clef_adamw_args {
    float lr, beta1, beta2, eps;
    float decay;     // weight decay for this tensor (0 when exempt)
    float step_size; // lr / (1 − β1ᵗ)
    float bc2_sqrt;  // √(1 − β2ᵗ)
} clef_adamw_args;
#define CLEF_SIG_adamw                                                         \
    (size_t n, float *theta, const float *g, float *m, float *v,               \
     const clef_adamw_args *a)
#define CLEF_ARGS_adamw (n, theta, g, m, v, a)

// Grouped loss (HEAD.md §6) over nq questions; question q owns logits
// z[off[q] .. off[q+1]). y holds the targets (one-hot or soft) in the same
// layout. is_score[q] != 0 marks score questions (ordinal term).
// inv_n = 1/N (questions in the update), inv_nscore = 1/N_score (0 if none).
// Writes p (softmax per question) and dz = ∂L/∂z (overwritten), and adds this
// group's share of L to *loss.
typedef struct clef_loss_args {
    float smoothing, brier, ordinal; // ε, β, λ
    float inv_n, inv_nscore;
} clef_loss_args;
#define CLEF_SIG_loss                                                          \
    (int nq, const int *off, const int *is_score, const float *z,              \
     const float *y, const clef_loss_args *a, float *p, float *dz,             \
     double *loss)
#define CLEF_ARGS_loss (nq, off, is_score, z, y, a, p, dz, loss)

// The op list, in one place: X(op, sig, unit, work).
//   sig   its signature, CLEF_SIG_<sig> above (the three GEMMs share one)
//   unit  how its work is counted, and how its kernels are named:
//         gemm   flops; hand-written kernels carry their register tile,
//                clef_f32_gemm_nt_6x16__avx2 (the scalar one has none)
//         flops  flops;    kernels clef_f32_<op>__<backend>
//         elems  elements; kernels clef_f32_<op>__<backend>
//         bgemm  flops; bf16 GEMMs clef_bf16_gemm_nt_32x32__amx (their own
//                backends: amx, avx512_bf16; scalar, oneDNN), which the f32
//                hand-written tables (avx2, avx512, neon) leave NULL for the
//                registry to fill (scheduler/registry.c)
//         bcvt   elements; the float -> bf16 conversion, clef_cvt_f32_bf16__
//                <backend> (scalar, avx2, avx512; neon takes the scalar one)
//   work  the work of one call, from its arguments: `auto` picks a backend
//         per shape class of it (scheduler/tune.h), clef-bench reports it.
// From this list come the op enum, the op names, the table fields, the
// kernel types and declarations, every hand-written backend's table, the
// dispatcher's candidates, auto's per-class trampolines and the tuning
// file's op keys. docs/ARCHITECTURE.md lists what else a new op needs.
// clang-format off
#define CLEF_OPS(X)                                                            \
    X(gemm_nt, gemm, gemm, 2.0 * M * N * K)                                    \
    X(gemm_nn, gemm, gemm, 2.0 * M * N * K)                                    \
    X(gemm_tn, gemm, gemm, 2.0 * M * N * K)                                    \
    X(bias_add, bias_add, elems, (double)rows * n)                             \
    X(colsum, colsum, elems, (double)rows * n)                                 \
    X(layernorm_fwd, layernorm_fwd, elems, (double)rows * n)                   \
    X(layernorm_bwd, layernorm_bwd, elems, (double)rows * n)                   \
    X(gelu_fwd, gelu_fwd, elems, (double)n)                                    \
    X(gelu_bwd, gelu_bwd, elems, (double)n)                                    \
    X(softmax_fwd, softmax_fwd, elems, (double)rows * n)                       \
    X(softmax_bwd, softmax_bwd, elems, (double)rows * n)                       \
    X(softmax_seg_fwd, softmax_seg_fwd, elems, nseg > 0 ? off[nseg] : 0)       \
    X(softmax_seg_bwd, softmax_seg_bwd, elems, nseg > 0 ? off[nseg] : 0)       \
    X(attention_fwd, attention_fwd, flops, 2.0 * heads * nq * nk * dh)         \
    X(attention_bwd, attention_bwd, flops, 2.0 * heads * nq * nk * dh)         \
    X(span_mean, span_mean, elems, (double)nspan * n)                          \
    X(span_scatter, span_scatter, elems, (double)nspan * n)                    \
    X(gather_rows, gather_rows, elems, (double)nidx * n)                       \
    X(scatter_add_rows, scatter_add_rows, elems, (double)nidx * n)             \
    X(normalize_fwd, normalize_fwd, elems, (double)rows * n)                   \
    X(normalize_bwd, normalize_bwd, elems, (double)rows * n)                   \
    X(cosine_fwd, cosine_fwd, elems, (double)rows * n)                         \
    X(cosine_bwd, cosine_bwd, elems, (double)rows * n)                         \
    X(adamw, adamw, elems, (double)n)                                          \
    X(loss, loss, elems, nq > 0 ? off[nq] : 0)                                 \
    X(gemm_bf16_nt, gemm_bf16, bgemm, 2.0 * M * N * K)                         \
    X(gemm_bf16_nn, gemm_bf16, bgemm, 2.0 * M * N * K)                         \
    X(gemm_bf16_tn, gemm_bf16, bgemm, 2.0 * M * N * K)                         \
    X(cvt_f32_bf16, cvt_bf16, bcvt, (double)n)
// clang-format on

// The kernel types: clef_gemm_t (a function type: `clef_gemm_t name;`
// declares a kernel) and clef_gemm_fn (a pointer to one), one per signature.
#define CLEF_OP_TYPES(op, sig, unit, work)                                     \
    typedef void clef_##sig##_t CLEF_SIG_##sig;                                \
    typedef clef_##sig##_t *clef_##sig##_fn;
CLEF_OPS(CLEF_OP_TYPES)
#undef CLEF_OP_TYPES

typedef enum clef_op {
#define CLEF_OP_ENUM(op, sig, unit, work) CLEF_OP_##op,
    CLEF_OPS(CLEF_OP_ENUM)
#undef CLEF_OP_ENUM
        CLEF_OP_COUNT
} clef_op;

// The number of ops is part of the interface: changing it must be deliberate.
#define CLEF_OP_COUNT_EXPECTED 29
_Static_assert(CLEF_OP_COUNT == CLEF_OP_COUNT_EXPECTED,
               "op list changed: update CLEF_OP_COUNT_EXPECTED and add the "
               "op's kernels, test and bench case (docs/ARCHITECTURE.md)");

// The name of a hand-written backend's kernel for op: CLEF_KSYM(op, unit,
// avx2, 6x16) is clef_f32_op__avx2, or clef_f32_op_6x16__avx2 for a GEMM;
// clef_bf16_gemm_nt_32x32__amx for gemm_bf16_nt (bgemm), clef_cvt_f32_bf16__
// avx512 for cvt_f32_bf16 (bcvt). CLEF_KSTR gives it as a string;
// CLEF_SSYM(op, unit) / CLEF_SSTR the scalar reference's (no tile).
#define CLEF_KSYM(op, unit, isa, tile) CLEF_KSYM_##unit(op, isa, tile)
#define CLEF_KSYM_gemm(op, isa, tile) clef_f32_##op##_##tile##__##isa
#define CLEF_KSYM_flops(op, isa, tile) clef_f32_##op##__##isa
#define CLEF_KSYM_elems(op, isa, tile) clef_f32_##op##__##isa
#define CLEF_KSYM_bgemm(op, isa, tile)                                         \
    CLEF_KSYM_bgemm_(CLEF_BF16_BASE_##op, isa, tile)
#define CLEF_KSYM_bgemm_(base, isa, tile) CLEF_KSYM_bgemm__(base, isa, tile)
#define CLEF_KSYM_bgemm__(base, isa, tile) clef_bf16_##base##_##tile##__##isa
#define CLEF_KSYM_bcvt(op, isa, tile) clef_##op##__##isa
#define CLEF_BF16_BASE_gemm_bf16_nt gemm_nt
#define CLEF_BF16_BASE_gemm_bf16_nn gemm_nn
#define CLEF_BF16_BASE_gemm_bf16_tn gemm_tn
#define CLEF_SSYM(op, unit) CLEF_SSYM_##unit(op)
#define CLEF_SSYM_gemm(op) clef_f32_##op##__scalar
#define CLEF_SSYM_flops(op) clef_f32_##op##__scalar
#define CLEF_SSYM_elems(op) clef_f32_##op##__scalar
#define CLEF_SSYM_bgemm(op) CLEF_SSYM_bgemm_(CLEF_BF16_BASE_##op)
#define CLEF_SSYM_bgemm_(base) CLEF_SSYM_bgemm__(base)
#define CLEF_SSYM_bgemm__(base) clef_bf16_##base##__scalar
#define CLEF_SSYM_bcvt(op) clef_##op##__scalar
#define CLEF_KSTR(op, unit, isa, tile)                                         \
    CLEF_KSTR_(CLEF_KSYM(op, unit, isa, tile))
#define CLEF_SSTR(op, unit) CLEF_KSTR_(CLEF_SSYM(op, unit))
#define CLEF_KSTR_(name) CLEF_KSTR__(name)
#define CLEF_KSTR__(name) #name

// A hand-written f32 backend from the op list: with
//   #define AVX2_DECL(op, sig, unit, work) CLEF_KERNEL_DECL(op, sig, unit,
//   avx2, 6x16)
// CLEF_OPS(AVX2_DECL) declares every kernel; CLEF_KERNEL_ENTRY and
// CLEF_KERNEL_NAME fill a clef_kernels initializer's pointers and names.
// Their bf16 GEMMs (bgemm) widen the operands and run the backend's own fp32
// GEMM (backends/gemm_bf16_widen.h: for CPUs without bf16 arithmetic), named
// by that fp32 tile: clef_bf16_gemm_nt_14x32__avx512.
// CLEF_BF16_DECL / CLEF_BF16_ENTRY / CLEF_BF16_NAME do the same for the bf16
// GEMMs alone (the amx and avx512_bf16 backends) and nothing for other ops.
#define CLEF_KERNEL_DECL(op, sig, unit, isa, tile)                             \
    CLEF_KDECL_##unit(clef_##sig##_t CLEF_KSYM(op, unit, isa, tile);)
#define CLEF_KERNEL_ENTRY(op, sig, unit, isa, tile)                            \
    CLEF_KDECL_##unit(.op = CLEF_KSYM(op, unit, isa, tile), )
#define CLEF_KERNEL_NAME(op, sig, unit, isa, tile)                             \
    CLEF_KDECL_##unit([CLEF_OP_##op] = CLEF_KSTR(op, unit, isa, tile), )
#define CLEF_KDECL_gemm(...) __VA_ARGS__
#define CLEF_KDECL_flops(...) __VA_ARGS__
#define CLEF_KDECL_elems(...) __VA_ARGS__
#define CLEF_KDECL_bcvt(...) __VA_ARGS__
#define CLEF_KDECL_bgemm(...) __VA_ARGS__
#define CLEF_BF16_DECL(op, sig, unit, isa, tile)                               \
    CLEF_BDECL_##unit(clef_##sig##_t CLEF_KSYM(op, unit, isa, tile);)
#define CLEF_BF16_ENTRY(op, sig, unit, isa, tile)                              \
    CLEF_BDECL_##unit(.op = CLEF_KSYM(op, unit, isa, tile), )
#define CLEF_BF16_NAME(op, sig, unit, isa, tile)                               \
    CLEF_BDECL_##unit([CLEF_OP_##op] = CLEF_KSTR(op, unit, isa, tile), )
#define CLEF_BDECL_gemm(...)
#define CLEF_BDECL_flops(...)
#define CLEF_BDECL_elems(...)
#define CLEF_BDECL_bcvt(...)
#define CLEF_BDECL_bgemm(...) __VA_ARGS__

// Pre-packed GEMM operands (BLIS style), optional per backend. An operand
// that several products read (a record's memory rows, read by every memory
// attention; dM, read by each column block of the memory backward) is packed
// once into the backend's panel layout, then read in place by each product:
//   b_size(N, K)     floats of op(B) (K, N) packed: ≤ (N + CLEF_PACK_PAD)·K
//   pack_b(b_trans, N, K, B, ldb, Bp)
//                    b_trans 1: B (N, K) as in gemm_nt; 0: B (K, N) as in
//                    gemm_nn / gemm_tn. Bp 64-byte aligned.
//   gemm_pb(a_trans, M, N, K, A, lda, Bp, C, ldc, accumulate)
//                    C (M,N) [+]= op(A) · op(B); a_trans 1: A (K, M) as in
//                    gemm_tn, 0: A (M, K)
// and the same for A: a_size(M, K) ≤ (M + CLEF_PACK_PAD)·K, pack_a(a_trans,
// M, K, A, lda, Ap), gemm_pa(b_trans, M, N, K, Ap, B, ldb, C, ldc, acc).
// A product returns -1 with C untouched when it cannot allocate its packing
// scratch (the caller then runs the plain GEMM on the unpacked operand).
// Its bits are those of the same backend's plain GEMM whenever that takes
// its packed path, and never depend on the thread count.
// For operands too small to pack (a tiny head's memory), optionally, B
// transposed once instead:
//   pack_bt(N, K, B, ldb, Bt)   Bt (K, N) ld N = Bᵀ for B (N, K)
//   gemm_nt_bt(M, N, K, A, lda, Bt, ldbt, C, ldc, accumulate)
//                    C (M,N) [+]= A · B ᵀ from Bt = Bᵀ (K, N, ld ldbt), with
//                    the bits of this backend's gemm_nt on B; -1 with C
//                    untouched when that call would not take the path this
//                    one mirrors (the caller then runs gemm_nt).
//   gemm_nt          that plain gemm_nt: the core reads transposed operands
//                    only through a table whose gemm_nt is this one (not,
//                    say, an auto table tuned to another backend's).
#define CLEF_PACK_PAD 64
typedef struct clef_gemm_prepack {
    const char *name;
    size_t (*a_size)(int M, int K);
    void (*pack_a)(int a_trans, int M, int K, const float *A, int lda,
                   float *Ap);
    int (*gemm_pa)(int b_trans, int M, int N, int K, const float *Ap,
                   const float *B, int ldb, float *C, int ldc, int accumulate);
    size_t (*b_size)(int N, int K);
    void (*pack_b)(int b_trans, int N, int K, const float *B, int ldb,
                   float *Bp);
    int (*gemm_pb)(int a_trans, int M, int N, int K, const float *A, int lda,
                   const float *Bp, float *C, int ldc, int accumulate);
    void (*pack_bt)(int N, int K, const float *B, int ldb, float *Bt);
    int (*gemm_nt_bt)(int M, int N, int K, const float *A, int lda,
                      const float *Bt, int ldbt, float *C, int ldc,
                      int accumulate);
    clef_gemm_fn gemm_nt;
} clef_gemm_prepack;

// A backend: one function pointer per op plus the name of the kernel behind
// it (XNNPACK style, e.g. "clef_f32_gemm_nt__scalar"), and its pre-packed
// GEMM entry points (NULL for a backend without them: the core then runs
// the plain GEMMs).
typedef struct clef_kernels {
    const char *backend;
#define CLEF_OP_FIELD(op, sig, unit, work) clef_##sig##_fn op;
    CLEF_OPS(CLEF_OP_FIELD)
#undef CLEF_OP_FIELD
    const char *names[CLEF_OP_COUNT];
    const clef_gemm_prepack *prepack;
    // The head's products in bf16 (core/mm.h) when set: core's context, its
    // own copy of a backend's table. NULL in every backend's table: fp32.
    struct clef_mm *mm;
} clef_kernels;

_Static_assert(sizeof(((clef_kernels *)0)->names) / sizeof(char *) ==
                   CLEF_OP_COUNT,
               "one kernel name per op");

// Op names, indexed by clef_op ("gemm_nt", ...).
extern const char *const clef_op_names[CLEF_OP_COUNT];

// 1 when op's work (the list's `work`) counts flops, 0 when elements.
int clef_op_work_is_flops(clef_op op);
// 1 for the bf16 GEMMs (unit bgemm): kernels of the amx, avx512_bf16,
// scalar and oneDNN backends only, named clef_bf16_gemm_<nt|nn|tn>...
int clef_op_is_bf16_gemm(clef_op op);

// Generic access to a table's function pointer for op (for tests and bench).
void (*clef_kernels_get(const clef_kernels *k, clef_op op))(void);
// Stores fn, a pointer of op's own type, into k's slot for op (one store).
void clef_kernels_set(clef_kernels *k, clef_op op, void (*fn)(void));

// Returns the first op whose pointer or name is missing, or CLEF_OP_COUNT
// when the table is complete.
clef_op clef_kernels_first_missing(const clef_kernels *k);

// The scalar reference backend: readable loops, -ffp-contract=off, no
// fast-math.
extern const clef_kernels clef_scalar_kernels;

#endif

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

#define CLEF_LN_EPS 1e-5f         // LayerNorm variance epsilon (HEAD.md §4)
#define CLEF_NORMALIZE_EPS 1e-12f // normalize(x) = x / max(|x|, 1e-12)
#define CLEF_COSINE_EPS 1e-8f     // cosine(a,b) eps per operand

// C (M,N) = [C +] op(A) · op(B). `accumulate` 0 overwrites C, 1 adds to it.
//   gemm_nt: A (M,K), B (N,K)   C = A·Bᵀ   forward linear y = x Wᵀ
//   gemm_nn: A (M,K), B (K,N)   C = A·B    backward dx = dy W
//   gemm_tn: A (K,M), B (K,N)   C = Aᵀ·B   backward dW = dyᵀ x
typedef void (*clef_gemm_fn)(int M, int N, int K, const float *A, int lda,
                             const float *B, int ldb, float *C, int ldc,
                             int accumulate);

// y (rows, n) += b (n) on every row.
typedef void (*clef_bias_add_fn)(int rows, int n, const float *b, float *y);
// db (n) += Σ_rows dy (rows, n): the bias gradient.
typedef void (*clef_colsum_fn)(int rows, int n, const float *dy, float *db);

// LayerNorm over the last axis, eps CLEF_LN_EPS.
//   x (rows,n) -> y (rows,n) = gamma ⊙ xhat + beta; saves xhat (rows,n), rstd (rows).
typedef void (*clef_layernorm_fwd_fn)(int rows, int n, const float *x,
                                      const float *gamma, const float *beta,
                                      float *y, float *xhat, float *rstd);
// dx += rstd (dxh − mean(dxh) − xhat·mean(dxh⊙xhat)), dxh = dy⊙gamma;
// dgamma += Σ dy⊙xhat; dbeta += Σ dy. dx may be NULL (gradients of gamma/beta only).
typedef void (*clef_layernorm_bwd_fn)(int rows, int n, const float *dy,
                                      const float *xhat, const float *rstd,
                                      const float *gamma, float *dx,
                                      float *dgamma, float *dbeta);

// Exact-erf GELU: y = x Φ(x). Backward: dx += dy (Φ(x) + x φ(x)).
typedef void (*clef_gelu_fwd_fn)(size_t n, const float *x, float *y);
typedef void (*clef_gelu_bwd_fn)(size_t n, const float *x, const float *dy,
                                 float *dx);

// Row softmax: y (rows,n) = softmax(x) per row (max-subtracted; -INF entries
// give 0). Backward: dx += y ⊙ (dy − Σ dy⊙y).
typedef void (*clef_softmax_fwd_fn)(int rows, int n, const float *x, float *y);
typedef void (*clef_softmax_bwd_fn)(int rows, int n, const float *y,
                                    const float *dy, float *dx);

// Segmented softmax: segment s covers x[off[s] .. off[s+1]) (off has nseg+1
// entries, off[0] = 0); each segment is normalised on its own.
typedef void (*clef_softmax_seg_fwd_fn)(int nseg, const int *off,
                                        const float *x, float *y);
typedef void (*clef_softmax_seg_bwd_fn)(int nseg, const int *off,
                                        const float *y, const float *dy,
                                        float *dx);

// Multi-head attention core (the in/out projections are GEMMs around it).
//   Q (nq, heads*dh) ld ldq, K (nk, ·) ld ldk, V (nk, ·) ld ldv
//   A (heads, nq, nk) = softmax_rows(Q_h K_hᵀ / √dh)   saved for backward
//   O (nq, heads*dh) ld ldo = concat_h A_h V_h         overwritten
typedef void (*clef_attention_fwd_fn)(int nq, int nk, int heads, int dh,
                                      const float *Q, int ldq, const float *K,
                                      int ldk, const float *V, int ldv,
                                      float *A, float *O, int ldo);
// dQ/dK/dV += the gradients given dO (nq, heads*dh). scratch: nq*nk floats.
typedef void (*clef_attention_bwd_fn)(int nq, int nk, int heads, int dh,
                                      const float *Q, int ldq, const float *K,
                                      int ldk, const float *V, int ldv,
                                      const float *A, const float *dO, int lddo,
                                      float *dQ, int lddq, float *dK, int lddk,
                                      float *dV, int lddv, float *scratch);

// Span mean: Y (nspan, n)[s] = mean of X (T, n) rows [spans[2s], spans[2s+1]).
typedef void (*clef_span_mean_fn)(int nspan, const int *spans, int n,
                                  const float *X, float *Y);
// Its scatter (backward): dX[t] += dY[s] / len(s) for t in span s.
typedef void (*clef_span_scatter_fn)(int nspan, const int *spans, int n,
                                     const float *dY, float *dX);

// Row gather Y (nidx, n)[i] = X[idx[i]]; its backward dX[idx[i]] += dY[i].
typedef void (*clef_gather_rows_fn)(int nidx, const int *idx, int n,
                                    const float *X, float *Y);
typedef void (*clef_scatter_add_rows_fn)(int nidx, const int *idx, int n,
                                         const float *dY, float *dX);

// normalize rows: y = x / max(|x|, eps); saves nrm (rows) = |x|.
// Backward: dx += |x| > eps ? (dy − y (y·dy)) / |x| : dy / eps.
typedef void (*clef_normalize_fwd_fn)(int rows, int n, float eps,
                                      const float *x, float *y, float *nrm);
typedef void (*clef_normalize_bwd_fn)(int rows, int n, float eps,
                                      const float *y, const float *nrm,
                                      const float *dy, float *dx);

// cosine per row: c (rows) = â·b̂ with â = a / max(|a|, CLEF_COSINE_EPS);
// saves ahat, bhat (rows,n) and na, nb (rows). Backward: da, db += .
typedef void (*clef_cosine_fwd_fn)(int rows, int n, const float *a,
                                   const float *b, float *ahat, float *bhat,
                                   float *na, float *nb, float *c);
typedef void (*clef_cosine_bwd_fn)(int rows, int n, const float *ahat,
                                   const float *bhat, const float *na,
                                   const float *nb, const float *dc, float *da,
                                   float *db);

// AdamW, exactly torch.optim.AdamW (HEAD.md §8), on n contiguous parameters.
// step_size = lr / (1 − β1ᵗ) and bc2_sqrt = √(1 − β2ᵗ) are computed by the
// caller in double and rounded to float, as PyTorch's Python scalars are.
typedef struct clef_adamw_args {
    float lr, beta1, beta2, eps;
    float decay;     // weight decay for this tensor (0 when exempt)
    float step_size; // lr / (1 − β1ᵗ)
    float bc2_sqrt;  // √(1 − β2ᵗ)
} clef_adamw_args;
typedef void (*clef_adamw_fn)(size_t n, float *theta, const float *g, float *m,
                              float *v, const clef_adamw_args *a);

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
typedef void (*clef_loss_fn)(int nq, const int *off, const int *is_score,
                             const float *z, const float *y,
                             const clef_loss_args *a, float *p, float *dz,
                             double *loss);

// The op list, in one place: X(op, type). Adding an op here adds it to every
// backend table, to the op enum, to the parity tests and to clef-bench.
#define CLEF_OPS(X)                                                            \
    X(gemm_nt, clef_gemm_fn)                                                   \
    X(gemm_nn, clef_gemm_fn)                                                   \
    X(gemm_tn, clef_gemm_fn)                                                   \
    X(bias_add, clef_bias_add_fn)                                              \
    X(colsum, clef_colsum_fn)                                                  \
    X(layernorm_fwd, clef_layernorm_fwd_fn)                                    \
    X(layernorm_bwd, clef_layernorm_bwd_fn)                                    \
    X(gelu_fwd, clef_gelu_fwd_fn)                                              \
    X(gelu_bwd, clef_gelu_bwd_fn)                                              \
    X(softmax_fwd, clef_softmax_fwd_fn)                                        \
    X(softmax_bwd, clef_softmax_bwd_fn)                                        \
    X(softmax_seg_fwd, clef_softmax_seg_fwd_fn)                                \
    X(softmax_seg_bwd, clef_softmax_seg_bwd_fn)                                \
    X(attention_fwd, clef_attention_fwd_fn)                                    \
    X(attention_bwd, clef_attention_bwd_fn)                                    \
    X(span_mean, clef_span_mean_fn)                                            \
    X(span_scatter, clef_span_scatter_fn)                                      \
    X(gather_rows, clef_gather_rows_fn)                                        \
    X(scatter_add_rows, clef_scatter_add_rows_fn)                              \
    X(normalize_fwd, clef_normalize_fwd_fn)                                    \
    X(normalize_bwd, clef_normalize_bwd_fn)                                    \
    X(cosine_fwd, clef_cosine_fwd_fn)                                          \
    X(cosine_bwd, clef_cosine_bwd_fn)                                          \
    X(adamw, clef_adamw_fn)                                                    \
    X(loss, clef_loss_fn)

typedef enum clef_op {
#define CLEF_OP_ENUM(op, type) CLEF_OP_##op,
    CLEF_OPS(CLEF_OP_ENUM)
#undef CLEF_OP_ENUM
        CLEF_OP_COUNT
} clef_op;

// The number of ops is part of the interface: changing it must be deliberate.
#define CLEF_OP_COUNT_EXPECTED 25
_Static_assert(CLEF_OP_COUNT == CLEF_OP_COUNT_EXPECTED,
               "op list changed: update CLEF_OP_COUNT_EXPECTED, every backend "
               "table, tests/ and bench/");

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
} clef_gemm_prepack;

// A backend: one function pointer per op plus the name of the kernel behind
// it (XNNPACK style, e.g. "clef_f32_gemm_nt__scalar"), and its pre-packed
// GEMM entry points (NULL for a backend without them: the core then runs
// the plain GEMMs).
typedef struct clef_kernels {
    const char *backend;
#define CLEF_OP_FIELD(op, type) type op;
    CLEF_OPS(CLEF_OP_FIELD)
#undef CLEF_OP_FIELD
    const char *names[CLEF_OP_COUNT];
    const clef_gemm_prepack *prepack;
} clef_kernels;

_Static_assert(sizeof(((clef_kernels *)0)->names) / sizeof(char *) ==
                   CLEF_OP_COUNT,
               "one kernel name per op");

// Op names, indexed by clef_op ("gemm_nt", ...).
extern const char *const clef_op_names[CLEF_OP_COUNT];

// Generic access to a table's function pointer for op (for tests and bench).
void (*clef_kernels_get(const clef_kernels *k, clef_op op))(void);

// Returns the first op whose pointer or name is missing, or CLEF_OP_COUNT
// when the table is complete.
clef_op clef_kernels_first_missing(const clef_kernels *k);

// The scalar reference backend: readable loops, -ffp-contract=off, no fast-math.
extern const clef_kernels clef_scalar_kernels;

#endif

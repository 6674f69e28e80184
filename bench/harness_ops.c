// clef-bench harness, per op: the concrete sizes each op sees in the head at
// a given shape, its fills (each in the op's valid domain), the tolerance
// table, and the call.
#include "harness_int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

// ---- the tolerance table: tol = base + per_len * L, in FLT_EPSILON ----
// L is the longest reduction of the case (set per op below). Errors are
// measured as |got − expected| / max(|expected|, 1): relative for large
// values, absolute below 1 (every fill is O(1)). A vectorised kernel sums in
// another order and may fuse multiply-adds; it may not be less accurate than
// that. Loosen an entry only with a reason written next to it.
static const struct {
    const char *name;
    double base, per_len;
} g_tol[TOL_CLASS_COUNT] = {
    // GEMM with integer fills: every partial sum is an integer below 2^24,
    // exact in any order and with or without FMA. Gathers copy.
    [TOL_EXACT] = {"exact", 0, 0},
    // One or two roundings per element (bias add).
    [TOL_ELEMENTWISE] = {"elementwise", 2, 0},
    // erf/exp evaluated by vector approximations: a few ulp of Φ and φ,
    // amplified by the products x·Φ(x), x·φ(x) of GELU and its derivative.
    [TOL_GELU] = {"gelu", 16, 0},
    // Sums of L terms in another order: error grows with L (colsum, span
    // mean/scatter, scatter-add of rows).
    [TOL_REDUCTION] = {"reduction", 2, 1},
    // exp (a few ulp) per element, the row sum of L terms, one division; the
    // backward adds a dot product of length L.
    [TOL_SOFTMAX] = {"softmax", 8, 2},
    // Mean and variance over L, then a reciprocal square root that scales
    // every element of the row.
    [TOL_LAYERNORM_FWD] = {"layernorm_fwd", 8, 2},
    // Two row means over n and the dgamma/dbeta column sums over rows:
    // L = max(rows, n); their errors add.
    [TOL_LAYERNORM_BWD] = {"layernorm_bwd", 16, 2},
    // A norm over L (sum of squares, sqrt), a division, a dot product in the
    // backward (normalize, cosine).
    [TOL_NORMALIZE] = {"normalize", 8, 2},
    // Q·K over dh, a softmax over nk, A·V over nk: L = nk + dh.
    [TOL_ATTENTION_FWD] = {"attention_fwd", 16, 2},
    // dA = dO·Vᵀ over dh, a rowsum over nk, dQ over nk, dK and dV over nq:
    // L = nq + nk + dh; four chained reductions.
    [TOL_ATTENTION_BWD] = {"attention_bwd", 32, 4},
    // Per element: decay, two moment updates, sqrt, division (about ten
    // roundings, FMA allowed).
    [TOL_ADAMW] = {"adamw", 8, 0},
    // Per question: a softmax over L options, logs, the Brier and ordinal
    // sums over L; the loss is accumulated in double.
    [TOL_LOSS] = {"loss", 16, 4},
};

double bench_tol_eps(bench_tol_class cls, int len)
{
    return g_tol[cls].base + g_tol[cls].per_len * (double)len;
}

const char *bench_tol_name(bench_tol_class cls) { return g_tol[cls].name; }

// ---- fills ----
#define LIVE(b, r, k) ((b)->init[(size_t)(r) * (b)->ld + (k)])

static void fill_uniform(bench_buf *b, bench_rng *rng, float lo, float hi)
{
    for (int r = 0; r < b->rows; r++)
        for (int k = 0; k < b->cols; k++)
            LIVE(b, r, k) = bench_uniform(rng, lo, hi);
}

// Integers in [-m, m] (without 0 when nonzero is set).
static void fill_int(bench_buf *b, bench_rng *rng, int m, int nonzero)
{
    for (int r = 0; r < b->rows; r++)
        for (int k = 0; k < b->cols; k++) {
            int v = bench_int_in(rng, nonzero ? 1 : 0, m);
            if (bench_rng_next(rng) & 1)
                v = -v;
            LIVE(b, r, k) = (float)v;
        }
}

// y = softmax(x) over n contiguous floats, in double, rounded once.
static void softmax_ref(int n, const float *x, float *y)
{
    double mx = x[0], s = 0.0;
    for (int i = 1; i < n; i++)
        mx = fmax(mx, x[i]);
    for (int i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    for (int i = 0; i < n; i++)
        y[i] = (float)(exp((double)x[i] - mx) / s);
}

static int max_int(int a, int b) { return a > b ? a : b; }

// Every live element of every buffer, in bytes: inputs read once, outputs
// written once, accumulated outputs read and written.
static double buffer_bytes(const clef_bench_case *c)
{
    double bytes = 0.0;
    for (int i = 0; i < c->nbuf; i++) {
        const bench_buf *b = &c->buf[i];
        double live = (double)b->rows * b->cols * sizeof(float);
        bytes += b->kind == BENCH_ACC ? 2 * live : b->kind == BENCH_SCRATCH ? 0 : live;
    }
    return bytes;
}

#define ADD(name, kind, rows, cols, ld)                                        \
    bench_buf *name = bench_buf_add(c, #name, kind, rows, cols, ld);           \
    if (!name)                                                                 \
        return -1;

// ---- GEMM: the memory projection, the head's largest linear layer ----
//   gemm_nt  M = X W_mᵀ      M=T, N=w, K=d   (forward)
//   gemm_nn  dX = dM W_m     M=T, N=d, K=w   (backward, input gradient)
//   gemm_tn  dW_m = dMᵀ X    M=w, N=d, K=T   (backward, weight gradient)
// Each case calls the kernel twice: C = op(A)op(B) (accumulate 0, C
// prefilled with NaN: a kernel that reads C fails) and Cacc += op(A)op(B).
static int setup_gemm(clef_bench_case *c, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    int M, N, K, pad = s->pad;
    if (c->op == CLEF_OP_gemm_nt) {
        M = s->T, N = s->w, K = s->d;
    } else if (c->op == CLEF_OP_gemm_nn) {
        M = s->T, N = s->d, K = s->w;
    } else {
        M = s->w, N = s->d, K = s->T;
    }
    c->p[0] = M, c->p[1] = N, c->p[2] = K;
    int arows = c->op == CLEF_OP_gemm_tn ? K : M;
    int acols = c->op == CLEF_OP_gemm_tn ? M : K;
    int brows = c->op == CLEF_OP_gemm_nt ? N : K;
    int bcols = c->op == CLEF_OP_gemm_nt ? K : N;
    ADD(A, BENCH_IN, arows, acols, acols + pad);
    ADD(B, BENCH_IN, brows, bcols, bcols + pad);
    ADD(C, BENCH_OUT, M, N, N + pad);
    ADD(Cacc, BENCH_ACC, M, N, N + pad);
    fill_int(A, rng, 2, 1);
    fill_int(B, rng, 2, 1);
    fill_int(Cacc, rng, 4, 0); // |Cacc| <= 4 + 4K < 2^24 for K <= 4e6
    snprintf(c->dims, sizeof c->dims, "M=%d N=%d K=%d lda=%d ldb=%d ldc=%d", M,
             N, K, A->ld, B->ld, C->ld);
    c->tol_class = TOL_EXACT;
    c->flops = 2.0 * 2.0 * M * N * K;
    c->compute_bound = 1;
    return 0;
}

// bias_add: a key/value projection's bias over the memory, y (T, w) += b (w).
// colsum: its gradient, db (w) += Σ_T dy (T, w).
static int setup_bias(clef_bench_case *c, bench_rng *rng)
{
    int rows = c->shape->T, n = c->shape->w;
    c->p[0] = rows, c->p[1] = n;
    if (c->op == CLEF_OP_bias_add) {
        ADD(b, BENCH_IN, 1, n, n);
        ADD(y, BENCH_ACC, rows, n, n);
        fill_uniform(b, rng, -1, 1);
        fill_uniform(y, rng, -1, 1);
        c->tol_class = TOL_ELEMENTWISE;
    } else {
        ADD(dy, BENCH_IN, rows, n, n);
        ADD(db, BENCH_ACC, 1, n, n);
        fill_uniform(dy, rng, -1, 1);
        fill_uniform(db, rng, -1, 1);
        c->tol_class = TOL_REDUCTION;
        c->tol_len = rows;
    }
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", rows, n);
    return 0;
}

// hidden_norm over the backbone states: rows = T, n = d (n >= 2: with n = 1,
// x̂ is identically 0 and the case proves nothing).
static int setup_layernorm(clef_bench_case *c, bench_rng *rng)
{
    int rows = c->shape->T, n = max_int(c->shape->d, 2);
    c->p[0] = rows, c->p[1] = n;
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", rows, n);
    if (c->op == CLEF_OP_layernorm_fwd) {
        ADD(x, BENCH_IN, rows, n, n);
        ADD(gamma, BENCH_IN, 1, n, n);
        ADD(beta, BENCH_IN, 1, n, n);
        ADD(y, BENCH_OUT, rows, n, n);
        ADD(xhat, BENCH_OUT, rows, n, n);
        ADD(rstd, BENCH_OUT, 1, rows, rows);
        // Rows with a mean off 0 (the subtraction must happen) but within a
        // few σ: the mean's rounding is amplified by |μ|/σ, a property of
        // the input that no kernel can avoid.
        for (int r = 0; r < rows; r++) {
            float offset = bench_uniform(rng, -1, 1);
            float scale = bench_uniform(rng, 0.5f, 2);
            for (int k = 0; k < n; k++)
                LIVE(x, r, k) = offset + scale * bench_uniform(rng, -1, 1);
        }
        fill_uniform(gamma, rng, 0.5f, 1.5f);
        fill_uniform(beta, rng, -1, 1);
        c->tol_class = TOL_LAYERNORM_FWD;
        c->tol_len = n;
        return 0;
    }
    ADD(dy, BENCH_IN, rows, n, n);
    ADD(xhat, BENCH_IN, rows, n, n);
    ADD(rstd, BENCH_IN, 1, rows, rows);
    ADD(gamma, BENCH_IN, 1, n, n);
    ADD(dx, BENCH_ACC, rows, n, n);
    ADD(dgamma, BENCH_ACC, 1, n, n);
    ADD(dbeta, BENCH_ACC, 1, n, n);
    fill_uniform(dy, rng, -1, 1);
    for (int r = 0; r < rows; r++) { // x̂: zero mean, unit variance per row
        double mean = 0.0, var = 0.0;
        for (int k = 0; k < n; k++) {
            LIVE(xhat, r, k) = bench_uniform(rng, -1, 1);
            mean += LIVE(xhat, r, k);
        }
        mean /= n;
        for (int k = 0; k < n; k++)
            var += (LIVE(xhat, r, k) - mean) * (LIVE(xhat, r, k) - mean);
        double inv = 1.0 / sqrt(var / n + 1e-12);
        for (int k = 0; k < n; k++)
            LIVE(xhat, r, k) = (float)((LIVE(xhat, r, k) - mean) * inv);
    }
    fill_uniform(rstd, rng, 0.5f, 2);
    fill_uniform(gamma, rng, 0.5f, 1.5f);
    fill_uniform(dx, rng, -1, 1);
    fill_uniform(dgamma, rng, -1, 1);
    fill_uniform(dbeta, rng, -1, 1);
    c->tol_class = TOL_LAYERNORM_BWD;
    c->tol_len = max_int(rows, n);
    return 0;
}

// GELU of the routing feed-forward: n = O·f activations (x in [-5, 5]
// reaches both tails).
static int setup_gelu(clef_bench_case *c, bench_rng *rng)
{
    int n = c->shape->O * c->shape->f;
    c->p[0] = n;
    snprintf(c->dims, sizeof c->dims, "n=%d", n);
    ADD(x, BENCH_IN, 1, n, n);
    fill_uniform(x, rng, -5, 5);
    if (c->op == CLEF_OP_gelu_fwd) {
        ADD(y, BENCH_OUT, 1, n, n);
    } else {
        ADD(dy, BENCH_IN, 1, n, n);
        ADD(dx, BENCH_ACC, 1, n, n);
        fill_uniform(dy, rng, -1, 1);
        fill_uniform(dx, rng, -1, 1);
    }
    c->tol_class = TOL_GELU;
    return 0;
}

// Attention-row softmax of the routing layers: rows = h·O, n = T (n >= 2:
// the backward of a 1-wide softmax is identically 0). The forward input has
// -INF entries (padded keys) that must give exactly 0.
static int setup_softmax(clef_bench_case *c, bench_rng *rng)
{
    int rows = c->shape->h * c->shape->O, n = max_int(c->shape->T, 2);
    c->p[0] = rows, c->p[1] = n;
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", rows, n);
    c->tol_class = TOL_SOFTMAX;
    c->tol_len = n;
    if (c->op == CLEF_OP_softmax_fwd) {
        ADD(x, BENCH_IN, rows, n, n);
        ADD(y, BENCH_OUT, rows, n, n);
        fill_uniform(x, rng, -8, 8);
        for (int r = 0; r < rows; r++)
            for (int k = 1; k < n && n >= 4; k++)
                if (bench_int_in(rng, 0, 15) == 0)
                    LIVE(x, r, k) = -INFINITY;
        return 0;
    }
    ADD(y, BENCH_IN, rows, n, n);
    ADD(dy, BENCH_IN, rows, n, n);
    ADD(dx, BENCH_ACC, rows, n, n);
    for (int r = 0; r < rows; r++) {
        float *row = &LIVE(y, r, 0);
        for (int k = 0; k < n; k++)
            row[k] = bench_uniform(rng, -4, 4);
        softmax_ref(n, row, row);
    }
    fill_uniform(dy, rng, -1, 1);
    fill_uniform(dx, rng, -1, 1);
    return 0;
}

// The option-summary softmax: one segment per question (nseg = Q) over
// max(O, 2Q) options, segment lengths >= 1 drawn at random.
static int setup_softmax_seg(clef_bench_case *c, bench_rng *rng)
{
    int nseg = c->shape->Q, total = max_int(c->shape->O, 2 * nseg);
    int *off = bench_int_add(c, 0, (size_t)nseg + 1);
    if (!off)
        return -1;
    int len[nseg];
    for (int s = 0; s < nseg; s++)
        len[s] = 1;
    for (int i = nseg; i < total; i++)
        len[bench_int_in(rng, 0, nseg - 1)]++;
    int longest = 0;
    off[0] = 0;
    for (int s = 0; s < nseg; s++) {
        off[s + 1] = off[s] + len[s];
        longest = max_int(longest, len[s]);
    }
    c->p[0] = nseg, c->p[1] = total;
    snprintf(c->dims, sizeof c->dims, "nseg=%d n=%d longest=%d", nseg, total,
             longest);
    c->tol_class = TOL_SOFTMAX;
    c->tol_len = longest;
    if (c->op == CLEF_OP_softmax_seg_fwd) {
        ADD(x, BENCH_IN, 1, total, total);
        ADD(y, BENCH_OUT, 1, total, total);
        fill_uniform(x, rng, -8, 8);
        return 0;
    }
    ADD(y, BENCH_IN, 1, total, total);
    ADD(dy, BENCH_IN, 1, total, total);
    ADD(dx, BENCH_ACC, 1, total, total);
    for (int s = 0; s < nseg; s++) {
        float *seg = &LIVE(y, 0, off[s]);
        for (int k = 0; k < len[s]; k++)
            seg[k] = bench_uniform(rng, -4, 4);
        softmax_ref(len[s], seg, seg);
    }
    fill_uniform(dy, rng, -1, 1);
    fill_uniform(dx, rng, -1, 1);
    return 0;
}

// Routing cross-attention: the O option queries attend to the T memory rows
// (nk >= 2: with one key the backward's dQ and dK are identically 0), h
// heads of dh = w/h. K and V are the two halves of one packed (nk, 2w)
// buffer (ld 2w, as the packed in-projection writes them); so are dK, dV.
static int setup_attention(clef_bench_case *c, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    int nq = s->O, nk = max_int(s->T, 2), heads = s->h, dh = s->w / s->h;
    int w = heads * dh, pad = s->pad;
    c->p[0] = nq, c->p[1] = nk, c->p[2] = heads, c->p[3] = dh;
    snprintf(c->dims, sizeof c->dims, "nq=%d nk=%d heads=%d dh=%d", nq, nk,
             heads, dh);
    c->compute_bound = 1;
    ADD(Q, BENCH_IN, nq, w, w + pad);
    ADD(KV, BENCH_IN, nk, 2 * w, 2 * w + pad);
    fill_uniform(Q, rng, -2, 2);
    fill_uniform(KV, rng, -2, 2);
    if (c->op == CLEF_OP_attention_fwd) {
        ADD(A, BENCH_OUT, heads * nq, nk, nk);
        ADD(O, BENCH_OUT, nq, w, w + pad);
        c->tol_class = TOL_ATTENTION_FWD;
        c->tol_len = nk + dh;
        c->flops = (double)heads * nq * nk * (4.0 * dh + 5.0);
        return 0;
    }
    ADD(A, BENCH_IN, heads * nq, nk, nk);
    ADD(dO, BENCH_IN, nq, w, w + pad);
    ADD(dQ, BENCH_ACC, nq, w, w + pad);
    ADD(dKV, BENCH_ACC, nk, 2 * w, 2 * w + pad);
    ADD(scratch, BENCH_SCRATCH, 1, nq * nk, nq * nk);
    double scale = 1.0 / sqrt((double)dh);
    for (int h = 0; h < heads; h++) // A = softmax(Q_h K_hᵀ / √dh), in double
        for (int i = 0; i < nq; i++) {
            float *arow = &LIVE(A, h * nq + i, 0);
            for (int j = 0; j < nk; j++) {
                double acc = 0.0;
                for (int d = 0; d < dh; d++)
                    acc += (double)LIVE(Q, i, h * dh + d) * LIVE(KV, j, h * dh + d);
                arow[j] = (float)(acc * scale);
            }
            softmax_ref(nk, arow, arow);
        }
    fill_uniform(dO, rng, -1, 1);
    fill_uniform(dQ, rng, -1, 1);
    fill_uniform(dKV, rng, -1, 1);
    c->tol_class = TOL_ATTENTION_BWD;
    c->tol_len = nq + nk + dh;
    c->flops = (double)heads * nq * nk * (8.0 * dh + 5.0);
    return 0;
}

// Option-context span means: O spans over T rows of d floats, each span at
// least T/O rows long so the spans cover the sequence.
static int setup_span(clef_bench_case *c, bench_rng *rng)
{
    int T = c->shape->T, nspan = c->shape->O, n = c->shape->d;
    int *spans = bench_int_add(c, 0, 2 * (size_t)nspan);
    if (!spans)
        return -1;
    int lo = max_int(1, T / nspan), hi = max_int(1, 2 * T / nspan);
    int longest = 0, cover[T];
    memset(cover, 0, sizeof cover);
    for (int s = 0; s < nspan; s++) {
        int start = (int)((long)s * T / nspan);
        int end = start + bench_int_in(rng, lo, hi);
        end = end > T ? T : end;
        spans[2 * s] = start, spans[2 * s + 1] = end;
        longest = max_int(longest, end - start);
        for (int t = start; t < end; t++)
            cover[t]++;
    }
    int deepest = 0;
    for (int t = 0; t < T; t++)
        deepest = max_int(deepest, cover[t]);
    c->p[0] = nspan, c->p[1] = n;
    snprintf(c->dims, sizeof c->dims, "nspan=%d n=%d T=%d longest=%d", nspan, n,
             T, longest);
    c->tol_class = TOL_REDUCTION;
    if (c->op == CLEF_OP_span_mean) {
        ADD(X, BENCH_IN, T, n, n);
        ADD(Y, BENCH_OUT, nspan, n, n);
        fill_uniform(X, rng, -1, 1);
        c->tol_len = longest;
        return 0;
    }
    ADD(dY, BENCH_IN, nspan, n, n);
    ADD(dX, BENCH_ACC, T, n, n);
    fill_uniform(dY, rng, -1, 1);
    fill_uniform(dX, rng, -1, 1);
    c->tol_len = deepest;
    return 0;
}

// The owner broadcast: each of O options gathers its question's row of w
// floats (Q rows); the scatter-add sums option gradients back per question.
// Indices cover every question, then repeat at random.
static int setup_gather(clef_bench_case *c, bench_rng *rng)
{
    int nidx = c->shape->O, nsrc = c->shape->Q, n = c->shape->w;
    int *idx = bench_int_add(c, 0, (size_t)nidx);
    if (!idx)
        return -1;
    int count[nsrc];
    memset(count, 0, sizeof count);
    for (int i = 0; i < nidx; i++)
        idx[i] = i < nsrc ? i : bench_int_in(rng, 0, nsrc - 1);
    for (int i = nidx - 1; i > 0; i--) { // shuffle
        int j = bench_int_in(rng, 0, i), t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    int deepest = 0;
    for (int i = 0; i < nidx; i++)
        deepest = max_int(deepest, ++count[idx[i]]);
    c->p[0] = nidx, c->p[1] = n, c->p[2] = nsrc;
    snprintf(c->dims, sizeof c->dims, "nidx=%d n=%d rows=%d", nidx, n, nsrc);
    if (c->op == CLEF_OP_gather_rows) {
        ADD(X, BENCH_IN, nsrc, n, n);
        ADD(Y, BENCH_OUT, nidx, n, n);
        fill_uniform(X, rng, -1, 1);
        c->tol_class = TOL_EXACT;
        return 0;
    }
    ADD(dY, BENCH_IN, nidx, n, n);
    ADD(dX, BENCH_ACC, nsrc, n, n);
    fill_uniform(dY, rng, -1, 1);
    fill_uniform(dX, rng, -1, 1);
    c->tol_class = TOL_REDUCTION;
    c->tol_len = deepest;
    return 0;
}

// The prior's normalize(lex_o): O rows of d floats (n >= 2: a 1-wide
// normalize has a zero backward). Row 1 is scaled below eps to take the
// max(|x|, eps) branch.
static int setup_normalize(clef_bench_case *c, bench_rng *rng)
{
    int rows = c->shape->O, n = max_int(c->shape->d, 2);
    float eps = CLEF_NORMALIZE_EPS;
    c->p[0] = rows, c->p[1] = n;
    c->eps = eps;
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", rows, n);
    c->tol_class = TOL_NORMALIZE;
    c->tol_len = n;
    int fwd = c->op == CLEF_OP_normalize_fwd;
    // x (rows, n): the forward's input, or the source of the backward's y, nrm
    ADD(x, fwd ? BENCH_IN : BENCH_SCRATCH, rows, n, n);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < n; k++)
            LIVE(x, r, k) =
                bench_uniform(rng, -1, 1) * (r == 1 && rows >= 4 ? 1e-14f : 1.0f);
    if (fwd) {
        ADD(y, BENCH_OUT, rows, n, n);
        ADD(nrm, BENCH_OUT, 1, rows, rows);
        return 0;
    }
    ADD(y, BENCH_IN, rows, n, n);
    ADD(nrm, BENCH_IN, 1, rows, rows);
    ADD(dy, BENCH_IN, rows, n, n);
    ADD(dx, BENCH_ACC, rows, n, n);
    for (int r = 0; r < rows; r++) {
        double s = 0.0;
        for (int k = 0; k < n; k++)
            s += (double)LIVE(x, r, k) * LIVE(x, r, k);
        double norm = sqrt(s), div = fmax(norm, eps);
        LIVE(nrm, 0, r) = (float)norm;
        for (int k = 0; k < n; k++)
            LIVE(y, r, k) = (float)(LIVE(x, r, k) / div);
    }
    fill_uniform(dy, rng, -1, 1);
    fill_uniform(dx, rng, -1, 1);
    return 0;
}

// cosine(f_o, n_o) of the scorer: O rows of w floats (n >= 2).
static int setup_cosine(clef_bench_case *c, bench_rng *rng)
{
    int rows = c->shape->O, n = max_int(c->shape->w, 2);
    c->p[0] = rows, c->p[1] = n;
    snprintf(c->dims, sizeof c->dims, "rows=%d n=%d", rows, n);
    c->tol_class = TOL_NORMALIZE;
    c->tol_len = n;
    if (c->op == CLEF_OP_cosine_fwd) {
        ADD(a, BENCH_IN, rows, n, n);
        ADD(b, BENCH_IN, rows, n, n);
        ADD(ahat, BENCH_OUT, rows, n, n);
        ADD(bhat, BENCH_OUT, rows, n, n);
        ADD(na, BENCH_OUT, 1, rows, rows);
        ADD(nb, BENCH_OUT, 1, rows, rows);
        ADD(cos, BENCH_OUT, 1, rows, rows);
        fill_uniform(a, rng, -1, 1);
        fill_uniform(b, rng, -1, 1);
        return 0;
    }
    ADD(ahat, BENCH_IN, rows, n, n);
    ADD(bhat, BENCH_IN, rows, n, n);
    ADD(na, BENCH_IN, 1, rows, rows);
    ADD(nb, BENCH_IN, 1, rows, rows);
    ADD(dc, BENCH_IN, 1, rows, rows);
    ADD(da, BENCH_ACC, rows, n, n);
    ADD(db, BENCH_ACC, rows, n, n);
    bench_buf *hat[2] = {ahat, bhat}, *nrm[2] = {na, nb};
    for (int t = 0; t < 2; t++)
        for (int r = 0; r < rows; r++) {
            double s = 0.0;
            for (int k = 0; k < n; k++) {
                LIVE(hat[t], r, k) = bench_uniform(rng, -1, 1);
                s += (double)LIVE(hat[t], r, k) * LIVE(hat[t], r, k);
            }
            double norm = sqrt(s), div = fmax(norm, CLEF_COSINE_EPS);
            LIVE(nrm[t], 0, r) = (float)norm;
            for (int k = 0; k < n; k++)
                LIVE(hat[t], r, k) = (float)(LIVE(hat[t], r, k) / div);
        }
    fill_uniform(dc, rng, -1, 1);
    fill_uniform(da, rng, -1, 1);
    fill_uniform(db, rng, -1, 1);
    return 0;
}

// AdamW on the head's largest tensor: max(w·d, 4w², f·w) parameters.
static int setup_adamw(clef_bench_case *c, bench_rng *rng)
{
    const clef_bench_shape *s = c->shape;
    long n = (long)s->w * s->d;
    if ((long)4 * s->w * s->w > n)
        n = (long)4 * s->w * s->w;
    if ((long)s->f * s->w > n)
        n = (long)s->f * s->w;
    c->p[0] = (int)n;
    snprintf(c->dims, sizeof c->dims, "n=%ld", n);
    ADD(theta, BENCH_ACC, 1, (int)n, (int)n);
    ADD(g, BENCH_IN, 1, (int)n, (int)n);
    ADD(m, BENCH_ACC, 1, (int)n, (int)n);
    ADD(v, BENCH_ACC, 1, (int)n, (int)n);
    fill_uniform(theta, rng, -1, 1);
    fill_uniform(g, rng, -1, 1);
    fill_uniform(m, rng, -0.1f, 0.1f);
    fill_uniform(v, rng, 0, 0.01f); // v >= 0
    double lr = 1e-3, b1 = 0.9, b2 = 0.999;
    int t = 3;
    c->adamw = (clef_adamw_args){
        .lr = (float)lr, .beta1 = (float)b1, .beta2 = (float)b2, .eps = 1e-8f,
        .decay = 0.01f,
        .step_size = (float)(lr / (1.0 - pow(b1, t))),
        .bc2_sqrt = (float)sqrt(1.0 - pow(b2, t)),
    };
    c->tol_class = TOL_ADAMW;
    return 0;
}

// The grouped loss of one record: Q questions with >= 2 options each (a
// single option has zero loss and gradient), every third a score question,
// one-hot targets on even questions, soft targets on odd ones; smoothing,
// Brier and ordinal terms all on.
static int setup_loss(clef_bench_case *c, bench_rng *rng)
{
    int nq = c->shape->Q, total = max_int(c->shape->O, 2 * nq);
    int *off = bench_int_add(c, 0, (size_t)nq + 1);
    int *is_score = bench_int_add(c, 1, (size_t)nq);
    if (!off || !is_score)
        return -1;
    int len[nq], nscore = 0, longest = 0;
    for (int q = 0; q < nq; q++)
        len[q] = 2;
    for (int i = 2 * nq; i < total; i++)
        len[bench_int_in(rng, 0, nq - 1)]++;
    off[0] = 0;
    for (int q = 0; q < nq; q++) {
        off[q + 1] = off[q] + len[q];
        is_score[q] = q % 3 == 1;
        nscore += is_score[q];
        longest = max_int(longest, len[q]);
    }
    c->p[0] = nq, c->p[1] = total;
    snprintf(c->dims, sizeof c->dims, "nq=%d options=%d longest=%d", nq, total,
             longest);
    ADD(z, BENCH_IN, 1, total, total);
    ADD(y, BENCH_IN, 1, total, total);
    ADD(p, BENCH_OUT, 1, total, total);
    ADD(dz, BENCH_OUT, 1, total, total);
    fill_uniform(z, rng, -3, 3);
    for (int q = 0; q < nq; q++) {
        float *t = &LIVE(y, 0, off[q]);
        if (q % 2 == 0) {
            for (int k = 0; k < len[q]; k++)
                t[k] = 0.0f;
            t[bench_int_in(rng, 0, len[q] - 1)] = 1.0f;
        } else {
            double s = 0.0;
            for (int k = 0; k < len[q]; k++)
                s += t[k] = bench_uniform(rng, 0.05f, 1);
            for (int k = 0; k < len[q]; k++)
                t[k] = (float)(t[k] / s);
        }
    }
    c->loss = (clef_loss_args){
        .smoothing = 0.1f, .brier = 0.25f, .ordinal = 0.5f,
        .inv_n = 1.0f / (float)nq,
        .inv_nscore = nscore ? 1.0f / (float)nscore : 0.0f,
    };
    c->has_dacc = 1;
    c->dacc_init = 0.25; // the loss of earlier groups
    c->tol_class = TOL_LOSS;
    c->tol_len = longest;
    return 0;
}

int bench_op_setup(clef_bench_case *c, bench_rng *rng)
{
    int rc;
    switch (c->op) {
    case CLEF_OP_gemm_nt:
    case CLEF_OP_gemm_nn:
    case CLEF_OP_gemm_tn:
        rc = setup_gemm(c, rng);
        break;
    case CLEF_OP_bias_add:
    case CLEF_OP_colsum:
        rc = setup_bias(c, rng);
        break;
    case CLEF_OP_layernorm_fwd:
    case CLEF_OP_layernorm_bwd:
        rc = setup_layernorm(c, rng);
        break;
    case CLEF_OP_gelu_fwd:
    case CLEF_OP_gelu_bwd:
        rc = setup_gelu(c, rng);
        break;
    case CLEF_OP_softmax_fwd:
    case CLEF_OP_softmax_bwd:
        rc = setup_softmax(c, rng);
        break;
    case CLEF_OP_softmax_seg_fwd:
    case CLEF_OP_softmax_seg_bwd:
        rc = setup_softmax_seg(c, rng);
        break;
    case CLEF_OP_attention_fwd:
    case CLEF_OP_attention_bwd:
        rc = setup_attention(c, rng);
        break;
    case CLEF_OP_span_mean:
    case CLEF_OP_span_scatter:
        rc = setup_span(c, rng);
        break;
    case CLEF_OP_gather_rows:
    case CLEF_OP_scatter_add_rows:
        rc = setup_gather(c, rng);
        break;
    case CLEF_OP_normalize_fwd:
    case CLEF_OP_normalize_bwd:
        rc = setup_normalize(c, rng);
        break;
    case CLEF_OP_cosine_fwd:
    case CLEF_OP_cosine_bwd:
        rc = setup_cosine(c, rng);
        break;
    case CLEF_OP_adamw:
        rc = setup_adamw(c, rng);
        break;
    case CLEF_OP_loss:
        rc = setup_loss(c, rng);
        break;
    default:
        rc = -1;
    }
    if (rc != 0)
        return rc;
    c->bytes = buffer_bytes(c);
    return 0;
}

// ---- the call ----
void bench_op_call(const clef_kernels *k, clef_bench_case *c)
{
    float *b[BENCH_MAX_BUF];
    int ld[BENCH_MAX_BUF];
    for (int i = 0; i < c->nbuf; i++)
        b[i] = c->buf[i].run, ld[i] = c->buf[i].ld;
    const int *p = c->p;
    switch (c->op) {
    case CLEF_OP_gemm_nt:
    case CLEF_OP_gemm_nn:
    case CLEF_OP_gemm_tn: {
        clef_gemm_fn fn = c->op == CLEF_OP_gemm_nt   ? k->gemm_nt
                          : c->op == CLEF_OP_gemm_nn ? k->gemm_nn
                                                     : k->gemm_tn;
        fn(p[0], p[1], p[2], b[0], ld[0], b[1], ld[1], b[2], ld[2], 0);
        fn(p[0], p[1], p[2], b[0], ld[0], b[1], ld[1], b[3], ld[3], 1);
        break;
    }
    case CLEF_OP_bias_add:
        k->bias_add(p[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_colsum:
        k->colsum(p[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_layernorm_fwd:
        k->layernorm_fwd(p[0], p[1], b[0], b[1], b[2], b[3], b[4], b[5]);
        break;
    case CLEF_OP_layernorm_bwd:
        k->layernorm_bwd(p[0], p[1], b[0], b[1], b[2], b[3], b[4], b[5], b[6]);
        break;
    case CLEF_OP_gelu_fwd:
        k->gelu_fwd((size_t)p[0], b[0], b[1]);
        break;
    case CLEF_OP_gelu_bwd:
        k->gelu_bwd((size_t)p[0], b[0], b[1], b[2]);
        break;
    case CLEF_OP_softmax_fwd:
        k->softmax_fwd(p[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_softmax_bwd:
        k->softmax_bwd(p[0], p[1], b[0], b[1], b[2]);
        break;
    case CLEF_OP_softmax_seg_fwd:
        k->softmax_seg_fwd(p[0], c->iarr[0], b[0], b[1]);
        break;
    case CLEF_OP_softmax_seg_bwd:
        k->softmax_seg_bwd(p[0], c->iarr[0], b[0], b[1], b[2]);
        break;
    case CLEF_OP_attention_fwd: {
        int w = p[2] * p[3];
        k->attention_fwd(p[0], p[1], p[2], p[3], b[0], ld[0], b[1], ld[1],
                         b[1] + w, ld[1], b[2], b[3], ld[3]);
        break;
    }
    case CLEF_OP_attention_bwd: {
        int w = p[2] * p[3];
        k->attention_bwd(p[0], p[1], p[2], p[3], b[0], ld[0], b[1], ld[1],
                         b[1] + w, ld[1], b[2], b[3], ld[3], b[4], ld[4], b[5],
                         ld[5], b[5] + w, ld[5], b[6]);
        break;
    }
    case CLEF_OP_span_mean:
        k->span_mean(p[0], c->iarr[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_span_scatter:
        k->span_scatter(p[0], c->iarr[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_gather_rows:
        k->gather_rows(p[0], c->iarr[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_scatter_add_rows:
        k->scatter_add_rows(p[0], c->iarr[0], p[1], b[0], b[1]);
        break;
    case CLEF_OP_normalize_fwd:
        k->normalize_fwd(p[0], p[1], c->eps, b[0], b[1], b[2]);
        break;
    case CLEF_OP_normalize_bwd:
        k->normalize_bwd(p[0], p[1], c->eps, b[1], b[2], b[3], b[4]); // b[0]: x
        break;
    case CLEF_OP_cosine_fwd:
        k->cosine_fwd(p[0], p[1], b[0], b[1], b[2], b[3], b[4], b[5], b[6]);
        break;
    case CLEF_OP_cosine_bwd:
        k->cosine_bwd(p[0], p[1], b[0], b[1], b[2], b[3], b[4], b[5], b[6]);
        break;
    case CLEF_OP_adamw:
        k->adamw((size_t)p[0], b[0], b[1], b[2], b[3], &c->adamw);
        break;
    case CLEF_OP_loss:
        k->loss(p[0], c->iarr[0], c->iarr[1], b[0], b[1], &c->loss, b[2], b[3],
                &c->dacc_run);
        break;
    default:
        break;
    }
}

// Multi-head attention core of the scalar backend (HEAD.md §4, Appendix A),
// with leading dimensions wider than heads·dh.
//   forward:  A and O against double. Per query row, with δS the float dot's
//             error bound (dh + 2) FLT_EPSILON Σ|q k| / √dh and R the spread
//             of the scores: A relative 2 max δS + (nk + 4 + R) FLT_EPSILON;
//             O per element Σ_j A_j |V_j| (relA + (nk + 2) FLT_EPSILON).
//             O's padding columns stay untouched.
//   backward: dQ, dK, dV by central finite differences in double of
//             L = Σ w ⊙ O, tolerance 4 (nq + nk + dh + 8) FLT_EPSILON · max|grad|;
//             they accumulate, padding untouched, scratch contents irrelevant.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/scalar/scalar.h"
#include "util.h"

#define SENTINEL 777.0f

// One problem: float buffers with padding, packed double copies (nq|nk, hd).
typedef struct attn_case {
    int nq, nk, heads, dh, hd; // hd = heads·dh
    int ldq, ldk, ldv, ldo;
    float *Q, *K, *V, *A, *O, *w;        // w (nq, hd): the objective's weights
    double *Qd, *Kd, *Vd, *Ad, *Od, *wd; // packed, ld hd
    double *Smag;                        // (heads, nq, nk) Σ|q k| / √dh
} attn_case;

static attn_case attn_alloc(int nq, int nk, int heads, int dh, uint64_t *rng)
{
    attn_case c = {
        .nq = nq, .nk = nk, .heads = heads, .dh = dh, .hd = heads * dh};
    c.ldq = c.hd + 1, c.ldk = c.hd + 3, c.ldv = c.hd + 2, c.ldo = c.hd + 5;
    c.Q = clef_test_falloc((size_t)nq * c.ldq);
    c.K = clef_test_falloc((size_t)nk * c.ldk);
    c.V = clef_test_falloc((size_t)nk * c.ldv);
    c.O = clef_test_falloc((size_t)nq * c.ldo);
    c.A = clef_test_falloc((size_t)heads * nq * nk);
    c.w = clef_test_falloc((size_t)nq * c.hd);
    c.Qd = clef_test_dalloc((size_t)nq * c.hd);
    c.Kd = clef_test_dalloc((size_t)nk * c.hd);
    c.Vd = clef_test_dalloc((size_t)nk * c.hd);
    c.Od = clef_test_dalloc((size_t)nq * c.hd);
    c.wd = clef_test_dalloc((size_t)nq * c.hd);
    c.Ad = clef_test_dalloc((size_t)heads * nq * nk);
    c.Smag = clef_test_dalloc((size_t)heads * nq * nk);
    clef_test_fill_uniform(c.Q, (size_t)nq * c.ldq, -1.5f, 1.5f, rng);
    clef_test_fill_uniform(c.K, (size_t)nk * c.ldk, -1.5f, 1.5f, rng);
    clef_test_fill_uniform(c.V, (size_t)nk * c.ldv, -1, 1, rng);
    clef_test_fill_uniform(c.w, (size_t)nq * c.hd, -1, 1, rng);
    clef_test_fill_const(c.O, (size_t)nq * c.ldo, SENTINEL);
    for (int i = 0; i < nq; i++)
        for (int e = 0; e < c.hd; e++)
            c.Qd[(size_t)i * c.hd + e] = c.Q[(size_t)i * c.ldq + e];
    for (int j = 0; j < nk; j++)
        for (int e = 0; e < c.hd; e++) {
            c.Kd[(size_t)j * c.hd + e] = c.K[(size_t)j * c.ldk + e];
            c.Vd[(size_t)j * c.hd + e] = c.V[(size_t)j * c.ldv + e];
        }
    clef_test_to_double(c.w, c.wd, (size_t)nq * c.hd);
    return c;
}

static void attn_free(attn_case *c)
{
    free(c->Q), free(c->K), free(c->V), free(c->A), free(c->O), free(c->w);
    free(c->Qd), free(c->Kd), free(c->Vd), free(c->Ad), free(c->Od);
    free(c->wd), free(c->Smag);
}

// Double forward on the packed copies: Ad, Od (and Smag).
static void attn_ref(attn_case *c)
{
    int nq = c->nq, nk = c->nk, dh = c->dh, hd = c->hd;
    double scale = 1.0 / sqrt((double)dh);
    for (int h = 0; h < c->heads; h++) {
        for (int i = 0; i < nq; i++) {
            double *arow = c->Ad + ((size_t)h * nq + i) * nk;
            double *mrow = c->Smag + ((size_t)h * nq + i) * nk;
            for (int j = 0; j < nk; j++) {
                double s = 0.0, m = 0.0;
                for (int d = 0; d < dh; d++) {
                    double t = c->Qd[(size_t)i * hd + h * dh + d] *
                               c->Kd[(size_t)j * hd + h * dh + d];
                    s += t;
                    m += fabs(t);
                }
                arow[j] = s * scale;
                mrow[j] = m * scale;
            }
            clef_test_ref_softmax(nk, arow, arow);
            for (int d = 0; d < dh; d++) {
                double o = 0.0;
                for (int j = 0; j < nk; j++)
                    o += arow[j] * c->Vd[(size_t)j * hd + h * dh + d];
                c->Od[(size_t)i * hd + h * dh + d] = o;
            }
        }
    }
}

static bool attn_forward_ok(attn_case *c)
{
    int nq = c->nq, nk = c->nk, dh = c->dh, hd = c->hd;
    clef_scalar_kernels.attention_fwd(nq, nk, c->heads, dh, c->Q, c->ldq, c->K,
                                      c->ldk, c->V, c->ldv, c->A, c->O, c->ldo);
    // scores for the spread R: recompute S from the double softmax inputs
    attn_ref(c);
    double scale = 1.0 / sqrt((double)dh);
    double *bA = clef_test_dalloc(nk);
    float *orow = clef_test_falloc(dh);
    double *bO = clef_test_dalloc(dh), *wO = clef_test_dalloc(dh);
    bool ok = true;
    for (int h = 0; h < c->heads && ok; h++) {
        for (int i = 0; i < nq && ok; i++) {
            size_t ro = ((size_t)h * nq + i) * nk;
            double dS = 0.0, smax = -INFINITY, smin = INFINITY;
            for (int j = 0; j < nk; j++) {
                double s = 0.0;
                for (int d = 0; d < dh; d++)
                    s += c->Qd[(size_t)i * hd + h * dh + d] *
                         c->Kd[(size_t)j * hd + h * dh + d];
                s *= scale;
                smax = s > smax ? s : smax;
                smin = s < smin ? s : smin;
                double e = (dh + 2) * CLEF_TEST_EPS * c->Smag[ro + j];
                dS = e > dS ? e : dS;
            }
            double relA = 2 * dS + (nk + 4 + (smax - smin)) * CLEF_TEST_EPS;
            for (int j = 0; j < nk; j++)
                bA[j] = relA * c->Ad[ro + j];
            ok = clef_test_within(c->A + ro, c->Ad + ro, bA, nk);
            for (int d = 0; d < dh && ok; d++) {
                double m = 0.0;
                for (int j = 0; j < nk; j++)
                    m += c->Ad[ro + j] *
                         fabs(c->Vd[(size_t)j * hd + h * dh + d]);
                bO[d] = m * (relA + (nk + 2) * CLEF_TEST_EPS);
                wO[d] = c->Od[(size_t)i * hd + h * dh + d];
                orow[d] = c->O[(size_t)i * c->ldo + h * dh + d];
            }
            ok = ok && clef_test_within(orow, wO, bO, dh);
            if (!ok)
                fprintf(stderr, "attention_fwd: head %d row %d\n", h, i);
        }
    }
    for (int i = 0; i < nq && ok; i++)
        for (int e = hd; e < c->ldo; e++)
            if (c->O[(size_t)i * c->ldo + e] != SENTINEL) {
                fprintf(stderr, "attention_fwd wrote O padding (%d, %d)\n", i,
                        e);
                ok = false;
            }
    free(bA), free(orow), free(bO), free(wO);
    return ok;
}

Test(attention, forward)
{
    static const int ns[] = {1, 2, 3, 7, 13, 17, 31, 33};
    static const int hs[] = {1, 2, 3};
    static const int dhs[] = {1, 3, 8, 16};
    uint64_t rng = 61;
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            for (int h = 0; h < 3; h++)
                for (int d = 0; d < 4; d++) {
                    attn_case c = attn_alloc(ns[a], ns[b], hs[h], dhs[d], &rng);
                    bool ok = attn_forward_ok(&c);
                    attn_free(&c);
                    cr_assert(ok, "attention_fwd nq=%d nk=%d heads=%d dh=%d",
                              ns[a], ns[b], hs[h], dhs[d]);
                }
}

static double attn_objective(void *p)
{
    attn_case *c = p;
    attn_ref(c);
    return clef_test_dot_d(c->wd, c->Od, (size_t)c->nq * c->hd);
}

// g (rows, ld) active columns -> packed (rows, hd)
static void unpad(const float *g, int rows, int ld, int hd, float *out)
{
    for (int r = 0; r < rows; r++)
        for (int e = 0; e < hd; e++)
            out[(size_t)r * hd + e] = g[(size_t)r * ld + e];
}

static bool attn_backward_ok(attn_case *c)
{
    int nq = c->nq, nk = c->nk, heads = c->heads, dh = c->dh, hd = c->hd;
    // dO (nq, hd) = w with its own padded ld; gradients padded like inputs
    int lddo = hd + 4, lddq = hd + 2, lddk = hd + 1, lddv = hd + 3;
    size_t sq = (size_t)nq * lddq, sk = (size_t)nk * lddk,
           sv = (size_t)nk * lddv;
    float *dO = clef_test_falloc((size_t)nq * lddo);
    for (int i = 0; i < nq; i++)
        for (int e = 0; e < lddo; e++)
            dO[(size_t)i * lddo + e] = e < hd ? c->w[(size_t)i * hd + e] : NAN;
    float *dQ = clef_test_falloc(sq), *dK = clef_test_falloc(sk);
    float *dV = clef_test_falloc(sv);
    float *scratch = clef_test_falloc((size_t)nq * nk);
    clef_test_fill_const(scratch, (size_t)nq * nk, NAN);

    clef_scalar_kernels.attention_fwd(nq, nk, heads, dh, c->Q, c->ldq, c->K,
                                      c->ldk, c->V, c->ldv, c->A, c->O, c->ldo);
    clef_scalar_kernels.attention_bwd(nq, nk, heads, dh, c->Q, c->ldq, c->K,
                                      c->ldk, c->V, c->ldv, c->A, dO, lddo, dQ,
                                      lddq, dK, lddk, dV, lddv, scratch);

    double *fq = clef_test_dalloc((size_t)nq * hd);
    double *fk = clef_test_dalloc((size_t)nk * hd);
    double *fv = clef_test_dalloc((size_t)nk * hd);
    clef_test_fd_grad(c->Qd, (size_t)nq * hd, 1e-6, attn_objective, c, fq);
    clef_test_fd_grad(c->Kd, (size_t)nk * hd, 1e-6, attn_objective, c, fk);
    clef_test_fd_grad(c->Vd, (size_t)nk * hd, 1e-6, attn_objective, c, fv);

    float *gq = clef_test_falloc((size_t)nq * hd);
    float *gk = clef_test_falloc((size_t)nk * hd);
    float *gv = clef_test_falloc((size_t)nk * hd);
    unpad(dQ, nq, lddq, hd, gq);
    unpad(dK, nk, lddk, hd, gk);
    unpad(dV, nk, lddv, hd, gv);
    double units = 4.0 * (nq + nk + dh + 8);
    char what[3][80];
    const char *nm[3] = {"dQ", "dK", "dV"};
    for (int t = 0; t < 3; t++)
        snprintf(what[t], 80, "attention_bwd %s nq=%d nk=%d heads=%d dh=%d",
                 nm[t], nq, nk, heads, dh);
    bool ok = clef_test_grad_close(what[0], gq, fq, (size_t)nq * hd, units);
    ok = clef_test_grad_close(what[1], gk, fk, (size_t)nk * hd, units) && ok;
    ok = clef_test_grad_close(what[2], gv, fv, (size_t)nk * hd, units) && ok;

    // accumulate on known values; the padding keeps its value
    float *pq = clef_test_falloc(sq), *pk = clef_test_falloc(sk);
    float *pv = clef_test_falloc(sv);
    float *aq = clef_test_falloc(sq), *ak = clef_test_falloc(sk);
    float *av = clef_test_falloc(sv);
    clef_test_fill_pattern(pq, sq);
    clef_test_fill_pattern(pk, sk);
    clef_test_fill_pattern(pv, sv);
    clef_test_fcopy(aq, pq, sq);
    clef_test_fcopy(ak, pk, sk);
    clef_test_fcopy(av, pv, sv);
    clef_scalar_kernels.attention_bwd(nq, nk, heads, dh, c->Q, c->ldq, c->K,
                                      c->ldk, c->V, c->ldv, c->A, dO, lddo, aq,
                                      lddq, ak, lddk, av, lddv, scratch);
    bool acc = clef_test_accumulated(pq, dQ, aq, sq) &&
               clef_test_accumulated(pk, dK, ak, sk) &&
               clef_test_accumulated(pv, dV, av, sv);
    if (!acc)
        fprintf(stderr,
                "attention_bwd: does not accumulate (or wrote padding)\n");

    free(dO), free(dQ), free(dK), free(dV), free(scratch);
    free(fq), free(fk), free(fv), free(gq), free(gk), free(gv);
    free(pq), free(pk), free(pv), free(aq), free(ak), free(av);
    return ok && acc;
}

Test(attention, backward_fd_and_accumulates)
{
    static const int shapes[][4] = {
        {1, 1, 1, 1},  {1, 7, 2, 3},    {3, 1, 1, 4},   {2, 3, 3, 2},
        {7, 13, 2, 3}, {13, 7, 3, 2},   {17, 17, 2, 8}, {2, 33, 1, 5},
        {33, 3, 2, 1}, {31, 13, 1, 16},
    };
    uint64_t rng = 62;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        const int *p = shapes[s];
        attn_case c = attn_alloc(p[0], p[1], p[2], p[3], &rng);
        bool ok = attn_backward_ok(&c);
        attn_free(&c);
        cr_assert(ok, "attention_bwd nq=%d nk=%d heads=%d dh=%d", p[0], p[1],
                  p[2], p[3]);
    }
}

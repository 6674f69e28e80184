// A record's per-record constants. H and E are frozen, so x̂ = LN(H) without
// affine, its span means and the lexical means are computed once per record
// (HEAD.md §7), never once per step: X = x̂ ⊙ γ + β is all a step needs.
#include "head.h"
#include "safetensors.h"

#include <stdlib.h>
#include <string.h>

// H (T, d) in float from the half-precision copy Hh (exact); NULL on OOM.
static float *half_to_f32(const clef_record *r)
{
    const size_t n = (size_t)r->T * r->d;
    float *H = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; H && i < n; i++)
        H[i] =
            r->Hh_f16 ? clef_f16_to_f32(r->Hh[i]) : clef_bf16_to_f32(r->Hh[i]);
    return H;
}

int clef_record_prepare(const clef_kernels *k, clef_record *r, const float *E,
                        int V, clef_err *err)
{
    const int T = r->T, d = r->d;
    if (!r->H && !r->Hh) // clef_record_keep_bf16 released them
        return clef_err_set(err, CLEF_ERR_RUN,
                            "record %s: its hidden states were released",
                            r->id ? r->id : "?");
    float *H = r->H ? r->H : half_to_f32(r); // a temporary for Hh
    float *ones = malloc(sizeof(float) * d);
    float *zeros = calloc(d, sizeof(float));
    float *y = malloc(sizeof(float) * (size_t)T * d);
    float *rstd = malloc(sizeof(float) * T);
    float *erows = malloc(sizeof(float) * (size_t)T * d);
    free(r->xhat);
    free(r->xhat16);
    r->xhat16 = NULL;
    free(r->qvhat);
    free(r->ctxhat);
    free(r->lex);
    free(r->lhat);
    free(r->is_score);
    r->is_score = malloc(sizeof(int) * (r->Q ? r->Q : 1));
    r->xhat = malloc(sizeof(float) * (size_t)T * d);
    r->qvhat = malloc(sizeof(float) * (size_t)r->Q * d);
    r->ctxhat = malloc(sizeof(float) * (size_t)r->O * d);
    r->lex = malloc(sizeof(float) * (size_t)r->O * d);
    r->lhat = malloc(sizeof(float) * (size_t)r->O * d);
    float *lnrm = malloc(sizeof(float) * (r->O ? r->O : 1));
    int rc = CLEF_OK;
    if (!H || !r->is_score || !ones || !zeros || !y || !rstd || !erows ||
        !r->xhat || !r->qvhat || !r->ctxhat || !r->lex || !r->lhat || !lnrm) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "record %s: out of memory",
                          r->id ? r->id : "?");
        goto out;
    }
    for (int t = 0; t < T; t++) {
        if (r->ids[t] < 0 || r->ids[t] >= V) {
            rc = clef_err_input(err, NULL, r->id, "input_ids",
                                "id %d at position %d is outside [0, %d)",
                                r->ids[t], t, V);
            goto out;
        }
    }
    for (int q = 0; q < r->Q; q++)
        r->is_score[q] = r->qtype[q] == CLEF_QTYPE_SCORE;
    for (int i = 0; i < d; i++)
        ones[i] = 1.f;
    // x̂ (T, d) = (H − μ) / σ: a LayerNorm with γ = 1, β = 0
    k->layernorm_fwd(T, d, H, ones, zeros, y, r->xhat, rstd);
    k->span_mean(r->Q, r->qspan, d, r->xhat, r->qvhat);  // (Q, d)
    k->span_mean(r->O, r->ospan, d, r->xhat, r->ctxhat); // (O, d)
    k->gather_rows(T, r->ids, d, E, erows);              // E[ids] (T, d)
    k->span_mean(r->O, r->ospan, d, erows, r->lex);      // (O, d)
    k->normalize_fwd(r->O, d, CLEF_NORMALIZE_EPS, r->lex, r->lhat, lnrm);
out:
    if (H != r->H)
        free(H);
    free(lnrm);
    free(ones);
    free(zeros);
    free(y);
    free(rstd);
    free(erows);
    return rc;
}

static void free_strings(char **s, int n)
{
    if (!s)
        return;
    for (int i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

int clef_record_add_bf16(const clef_kernels *k, clef_record *r)
{
    if (r->xhat16)
        return 0;
    const size_t n = (size_t)r->T * r->d;
    uint16_t *x = malloc(sizeof(uint16_t) * (n ? n : 1));
    if (!x)
        return -1;
    k->cvt_f32_bf16(n, r->xhat, x);
    r->xhat16 = x;
    return 0;
}

int clef_record_keep_bf16(const clef_kernels *k, clef_record *r)
{
    if (clef_record_add_bf16(k, r))
        return -1;
    free(r->xhat);
    free(r->H);
    free(r->Hh);
    r->xhat = r->H = NULL;
    r->Hh = NULL;
    return 0;
}

void clef_record_free(clef_record *r)
{
    free(r->id);
    free(r->H);
    free(r->Hh);
    free(r->ids);
    free(r->qtype);
    free(r->is_score);
    free(r->qspan);
    free(r->opt_off);
    free(r->ospan);
    free(r->has_target);
    free(r->label);
    free(r->target);
    free_strings(r->qid, r->Q);
    free_strings(r->oid, r->O);
    free(r->xhat);
    free(r->xhat16);
    free(r->qvhat);
    free(r->ctxhat);
    free(r->lex);
    free(r->lhat);
    memset(r, 0, sizeof(*r));
}

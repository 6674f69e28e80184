// The per-record workspace: every activation the backward pass needs and its
// scratch, carved from one arena sized for (Tmax, Qmax, Omax). Allocated once
// and reused for every record and step: no allocation in the update loop.
#include "acts.h"

#include <stdlib.h>
#include <string.h>

typedef struct arena {
    float *base; // NULL on the sizing pass
    size_t off;  // floats
} arena;

static float *take(arena *a, size_t n)
{
    float *p = a->base ? a->base + a->off : NULL;
    a->off += (n + 15) & ~(size_t)15; // 64-byte aligned slices
    return p;
}

static void take_ln(arena *a, ln_acts *ln, size_t rows, size_t n)
{
    ln->y = take(a, rows * n);
    ln->xhat = take(a, rows * n);
    ln->rstd = take(a, rows);
}

static size_t max3(size_t a, size_t b, size_t c)
{
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

static void carve(clef_ws *ws, arena *a)
{
    const clef_config *c = &ws->cfg;
    const size_t T = ws->Tmax, Q = ws->Qmax, O = ws->Omax;
    const size_t d = c->d, w = c->w, f = c->f, h = c->h;
    ws->X = take(a, T * d);
    ws->M = take(a, T * w);
    ws->qv = take(a, Q * d);
    ws->ctx = take(a, O * d);
    ws->g = take(a, d);
    ws->qo = take(a, Q * w);
    ws->r0 = take(a, O * w);
    for (int i = 0; i < c->R; i++) {
        route_acts *r = &ws->route[i];
        take_ln(a, &r->mn, T, w);
        r->kv = take(a, T * 2 * w);
        take_ln(a, &r->qn, O, w);
        r->q = take(a, O * w);
        r->att = take(a, h * O * T);
        r->o = take(a, O * w);
        r->r1 = take(a, O * w);
        take_ln(a, &r->fn, O, w);
        r->h1 = take(a, O * f);
        r->u = take(a, O * f);
        r->out = take(a, O * w);
    }
    ws->B = take(a, Q * w);
    ws->s = take(a, O);
    ws->alpha = take(a, O);
    ws->S = take(a, Q * w);
    take_ln(a, &ws->sum, Q, w);
    ws->gw = take(a, w);
    ws->F0 = take(a, Q * w);
    for (int j = 0; j < c->L; j++) {
        field_acts *l = &ws->field[j];
        take_ln(a, &l->n1, Q, w);
        l->qkv = take(a, Q * 3 * w);
        l->sa = take(a, h * Q * Q);
        l->sa_o = take(a, Q * w);
        l->xa = take(a, Q * w);
        take_ln(a, &l->n2, Q, w);
        l->qc = take(a, Q * w);
        l->kvc = take(a, T * 2 * w);
        l->ca = take(a, h * Q * T);
        l->ca_o = take(a, Q * w);
        l->xb = take(a, Q * w);
        take_ln(a, &l->n3, Q, w);
        l->h1 = take(a, Q * f);
        l->u = take(a, Q * f);
        l->out = take(a, Q * w);
    }
    take_ln(a, &ws->fnorm, Q, w);
    ws->fo = take(a, O * w);
    take_ln(a, &ws->onorm, O, w);
    ws->fhat = take(a, O * w);
    ws->nhat = take(a, O * w);
    ws->fnrm = take(a, O);
    ws->nnrm = take(a, O);
    ws->cos = take(a, O);
    ws->feat = take(a, O * 4 * w);
    ws->v1 = take(a, O * w);
    ws->u1 = take(a, O * w);
    ws->res = take(a, O);
    ws->lhat = take(a, O * d);
    ws->lnrm = take(a, O);
    ws->a = take(a, Q * d);
    ws->anrm = take(a, Q);
    ws->prior = take(a, O);
    ws->z = take(a, O);
    ws->p = take(a, O);
    ws->dz = take(a, O);
    // backward scratch
    const size_t rows = O > Q ? O : Q;
    const size_t cols = max3(4 * w, f, 3 * w);
    ws->dM = take(a, T * w);
    ws->dkv = take(a, T * 2 * w);
    ws->dmt = take(a, T * w);
    ws->dA = take(a, rows * cols);
    ws->dB_ = take(a, rows * cols);
    ws->dC = take(a, rows * cols);
    ws->dR = take(a, O * w);
    ws->dR1 = take(a, O * w);
    ws->dF = take(a, Q * w);
    ws->dx = take(a, Q * w);
    ws->dqv = take(a, Q * d);
    ws->dctx = take(a, O * d);
    ws->dg = take(a, d);
    ws->dsum = take(a, (Q > 1 ? Q : 1) * (w > d ? w : d));
    ws->att_scratch = take(a, rows * (T > Q ? T : Q));
    ws->dcos = take(a, O);
    ws->dres = take(a, O);
    ws->dalpha = take(a, O);
    ws->ds = take(a, O);
    ws->dxa = take(a, Q * w);
    ws->dxb = take(a, Q * w);
    ws->dwd = take(a, w * d);
    ws->dvec = take(a, w > d ? w : d);
}

clef_ws *clef_ws_create(const clef_config *c, int Tmax, int Qmax, int Omax)
{
    clef_ws *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    ws->cfg = *c;
    ws->Tmax = Tmax;
    ws->Qmax = Qmax;
    ws->Omax = Omax;
    ws->route = calloc(c->R ? c->R : 1, sizeof(*ws->route));
    ws->field = calloc(c->L ? c->L : 1, sizeof(*ws->field));
    ws->owner = calloc(Omax, sizeof(int));
    if (!ws->route || !ws->field || !ws->owner)
        goto fail;
    arena sizing = {NULL, 0};
    carve(ws, &sizing);
    ws->arena = aligned_alloc(64, sizing.off * sizeof(float));
    if (!ws->arena)
        goto fail;
    memset(ws->arena, 0, sizing.off * sizeof(float));
    arena real = {ws->arena, 0};
    carve(ws, &real);
    return ws;
fail:
    clef_ws_free(ws);
    return NULL;
}

void clef_ws_free(clef_ws *ws)
{
    if (!ws)
        return;
    free(ws->arena);
    free(ws->route);
    free(ws->field);
    free(ws->owner);
    free(ws);
}

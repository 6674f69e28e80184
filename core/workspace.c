// The per-record workspace: every activation the backward pass needs and its
// scratch, carved from one arena sized by clef_ws_limits. Allocated once
// and reused for every record and step: no allocation in the update loop.
#include "acts.h"
#include "bigalloc.h"
#include "memattn.h"
#include "rows.h"

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

int clef_ws_prepacks(const clef_config *c)
{
    return c->w >= 64;
}

static void carve(clef_ws *ws, arena *a)
{
    const clef_config *c = &ws->cfg;
    const clef_ws_limits *l = &ws->lim;
    const size_t T = l->T, Q = l->Q, O = l->O, B = l->B;
    const size_t OT = l->OT, QT = l->QT, QQ = l->QQ;
    const size_t d = c->d, w = c->w, f = c->f, h = c->h;
    // a memory pre-packed in each layout (memattn.h), when this head uses it
    const size_t pk = clef_ws_prepacks(c) ? clef_mempack_bound(B, T, w) : 0;
    // the memories transposed instead, for a head too narrow to pack
    const size_t tw = clef_ws_prepacks(c) ? 0 : T * w;
    ws->field_mpk.nt = take(a, pk);
    ws->field_mpk.nn = take(a, pk);
    ws->field_mpk.t = take(a, tw);
    ws->field_mpk.m16 = (uint16_t *)(pk ? ws->field_mpk.nt : ws->field_mpk.t);
    ws->dm_pk = take(a, pk ? (w + CLEF_PACK_PAD) * T + 16 * B : 0);
    ws->qvhat_b = take(a, B > 1 ? Q * d : 0);
    ws->ctxhat_b = take(a, B > 1 ? O * d : 0);
    ws->lex_b = take(a, B > 1 ? O * d : 0);
    ws->lhat_b = take(a, B > 1 ? O * d : 0);
    ws->target = take(a, O);
    ws->X = take(a, T * d);
    ws->M = take(a, T * w);
    ws->qv = take(a, Q * d);
    ws->ctx = take(a, O * d);
    ws->g = take(a, B * d);
    ws->qo = take(a, Q * w);
    ws->r0 = take(a, O * w);
    for (int i = 0; i < c->R; i++) {
        route_acts *r = &ws->route[i];
        take_ln(a, &r->mn, T, w);
        r->kv = take(a, T * 2 * w);
        take_ln(a, &r->qn, O, w);
        r->q = take(a, O * w);
        r->att = take(a, h * OT);
        r->qt = take(a, h * O * w);
        r->mt = take(a, h * O * w);
        r->mpk.nt = take(a, pk);
        r->mpk.nn = take(a, pk);
        r->mpk.t = take(a, tw);
        r->mpk.m16 = (uint16_t *)(pk ? r->mpk.nt : r->mpk.t);
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
    ws->gw = take(a, B * w);
    ws->F0 = take(a, Q * w);
    for (int j = 0; j < c->L; j++) {
        field_acts *l = &ws->field[j];
        take_ln(a, &l->n1, Q, w);
        l->qkv = take(a, Q * 3 * w);
        l->sa = take(a, h * QQ);
        l->sa_o = take(a, Q * w);
        l->xa = take(a, Q * w);
        take_ln(a, &l->n2, Q, w);
        l->qc = take(a, Q * w);
        l->ca = take(a, h * QT);
        l->qt = take(a, h * Q * w);
        l->mt = take(a, h * Q * w);
        l->ca_o = take(a, Q * w);
        l->xb = take(a, Q * w);
        take_ln(a, &l->n3, Q, w);
        l->h1 = take(a, Q * f);
        l->u = take(a, Q * f);
        l->out = take(a, Q * w);
    }
    const size_t L2w = (size_t)c->L * 2 * w;
    ws->kvw = take(a, L2w * w);
    ws->kvb = take(a, L2w);
    ws->kvc = take(a, T * L2w);
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
    ws->dg = take(a, B * d);
    ws->dsum = take(a, (Q > 1 ? Q : 1) * (w > d ? w : d));
    ws->att_scratch = take(a, max3(OT, QT, QQ));
    ws->dcos = take(a, O);
    ws->dres = take(a, O);
    ws->dalpha = take(a, O);
    ws->ds = take(a, O);
    ws->dxa = take(a, Q * w);
    ws->dxb = take(a, Q * w);
    ws->dwd = take(a, w * d);
    ws->dkvc = take(a, T * L2w);
    ws->dkvw = take(a, L2w * w);
    ws->dbias = take(a, L2w > 3 * w ? L2w : 3 * w);
    ws->dvec = take(a, B * w > d ? B * w : d);
    ws->ln_part = take(a, clef_rows_layernorm_bwd_scratch((int)T, (int)w));
    ws->mscr1 = take(a, h * rows * w);
    ws->mscr2 = take(a, h * rows * w);
    ws->mascr = take(a, 2 * h * max3(OT, QT, QQ));
    ws->drop_t = take(a, rows * w);
    ws->dm16 = (uint16_t *)take(a, (T * w + 1) / 2);
}

clef_ws *clef_ws_create_limits(const clef_config *c, const clef_ws_limits *l)
{
    clef_ws *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    ws->cfg = *c;
    ws->lim = *l;
    ws->d_block_flops = CLEF_D_BLOCK_FLOPS;
    if (ws->lim.B < 1)
        ws->lim.B = 1;
    const int B = ws->lim.B, Q = l->Q > 0 ? l->Q : 1, O = l->O > 0 ? l->O : 1;
    ws->route = calloc(c->R ? c->R : 1, sizeof(*ws->route));
    ws->field = calloc(c->L ? c->L : 1, sizeof(*ws->field));
    ws->owner = calloc(O, sizeof(int));
    ws->t_off = calloc(B + 1, sizeof(int));
    ws->q_off = calloc(B + 1, sizeof(int));
    ws->o_off = calloc(B + 1, sizeof(int));
    ws->ot_off = calloc(B + 1, sizeof(size_t));
    ws->qt_off = calloc(B + 1, sizeof(size_t));
    ws->qq_off = calloc(B + 1, sizeof(size_t));
    ws->qrec = calloc(Q, sizeof(int));
    ws->qtype = calloc(Q, sizeof(int));
    ws->is_score = calloc(Q, sizeof(int));
    ws->opt_off = calloc(Q + 1, sizeof(int));
    ws->pk_nt_off = calloc(B + 1, sizeof(size_t));
    ws->pk_nn_off = calloc(B + 1, sizeof(size_t));
    ws->pk_a_off = calloc(B + 1, sizeof(size_t));
    ws->xrec = calloc(B, sizeof(*ws->xrec));
    ws->xrec16 = calloc(B, sizeof(*ws->xrec16));
    const char *pe = getenv("CLEF_PREPACK");
    ws->prepack_off = pe && !strcmp(pe, "0");
    if (!ws->pk_nt_off || !ws->pk_nn_off || !ws->pk_a_off || !ws->xrec ||
        !ws->xrec16 || !ws->route || !ws->field || !ws->owner || !ws->t_off ||
        !ws->q_off || !ws->o_off || !ws->ot_off || !ws->qt_off || !ws->qq_off ||
        !ws->qrec || !ws->qtype || !ws->is_score || !ws->opt_off)
        goto fail;
    arena sizing = {NULL, 0};
    carve(ws, &sizing);
    ws->arena_bytes = sizing.off * sizeof(float);
    ws->arena = clef_big_calloc(ws->arena_bytes);
    if (!ws->arena)
        goto fail;
    arena real = {ws->arena, 0};
    carve(ws, &real);
    return ws;
fail:
    clef_ws_free(ws);
    return NULL;
}

clef_ws *clef_ws_create(const clef_config *c, int Tmax, int Qmax, int Omax)
{
    clef_ws_limits l = {
        .B = 1,
        .T = Tmax,
        .Q = Qmax,
        .O = Omax,
        .OT = (size_t)Omax * Tmax,
        .QT = (size_t)Qmax * Tmax,
        .QQ = (size_t)Qmax * Qmax,
    };
    return clef_ws_create_limits(c, &l);
}

static int cmp_desc(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x < y) - (x > y);
}

// Σ of the B largest values of v (n): sorts v.
static size_t sum_largest(size_t *v, int n, int B)
{
    qsort(v, n, sizeof(*v), cmp_desc);
    size_t s = 0;
    for (int i = 0; i < n && i < B; i++)
        s += v[i];
    return s;
}

void clef_ws_limits_for(const clef_record *recs, int nrec, int B,
                        clef_ws_limits *l)
{
    memset(l, 0, sizeof(*l));
    l->B = B < 1 ? 1 : (B < nrec ? B : (nrec > 0 ? nrec : 1));
    size_t *v = malloc(sizeof(size_t) * (nrec > 0 ? nrec : 1));
    if (!v)
        return;
#define LIMIT(field, expr)                                                     \
    do {                                                                       \
        for (int i = 0; i < nrec; i++) {                                       \
            const clef_record *r = &recs[i];                                   \
            v[i] = (size_t)(expr);                                             \
        }                                                                      \
        l->field = sum_largest(v, nrec, l->B);                                 \
    } while (0)
    LIMIT(T, r->T);
    LIMIT(Q, r->Q);
    LIMIT(O, r->O);
    LIMIT(OT, (size_t)r->O * r->T);
    LIMIT(QT, (size_t)r->Q * r->T);
    LIMIT(QQ, (size_t)r->Q * r->Q);
#undef LIMIT
    free(v);
}

int clef_ws_set_memory_attention(clef_ws *ws, const char *mode)
{
    const int m = clef_memattn_mode(mode);
    if (m < 0)
        return -1;
    ws->memattn = m;
    return 0;
}

void clef_ws_set_prepack(clef_ws *ws, int on)
{
    ws->prepack_off = !on;
}

void clef_ws_set_dropout(clef_ws *ws, double p, uint64_t seed, long step,
                         int rec0)
{
    clef_dropout_set(&ws->drop, p, seed, step, rec0);
}

void clef_ws_set_d_block_flops(clef_ws *ws, double flops)
{
    ws->d_block_flops = flops > 0 ? flops : CLEF_D_BLOCK_FLOPS;
}

void clef_ws_free(clef_ws *ws)
{
    if (!ws)
        return;
    clef_big_free(ws->arena, ws->arena_bytes);
    free(ws->route);
    free(ws->field);
    free(ws->owner);
    free(ws->t_off);
    free(ws->q_off);
    free(ws->o_off);
    free(ws->ot_off);
    free(ws->qt_off);
    free(ws->qq_off);
    free(ws->qrec);
    free(ws->qtype);
    free(ws->is_score);
    free(ws->opt_off);
    free(ws->pk_nt_off);
    free(ws->pk_nn_off);
    free(ws->pk_a_off);
    free(ws->xrec);
    free(ws->xrec16);
    free(ws);
}

// The head's parameters: the 122-tensor layout in state-dict order (HEAD.md
// §2), one flat buffer for params / grads / AdamW m / v, views into it, and the
// seeded PyTorch-style initialisation (HEAD.md §8).
#include "bigalloc.h"
#include "file.h"
#include "head.h"
#include "rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int clef_config_check(const clef_config *c, const char *file, clef_err *err)
{
    if (c->d < 1 || c->w < 1 || c->h < 1 || c->f < 1 || c->R < 1 || c->L < 1)
        return clef_err_input(err, file, NULL, "head",
                              "sizes must be at least 1 (hidden_size %d, width "
                              "%d, heads %d, feedforward %d, routing_layers "
                              "%d, layers %d)",
                              c->d, c->w, c->h, c->f, c->R, c->L);
    if (c->w % c->h != 0)
        return clef_err_input(err, file, NULL, "head.heads",
                              "width %d must be divisible by heads %d", c->w,
                              c->h);
    if (c->R > 64 || c->L > 64)
        return clef_err_input(err, file, NULL, "head",
                              "at most 64 routing layers and 64 layers");
    if (c->d > CLEF_DIM_MAX || c->w > CLEF_DIM_MAX || c->f > CLEF_DIM_MAX)
        return clef_err_input(err, file, NULL, "head",
                              "hidden_size %d, width %d and feedforward %d "
                              "must each be at most %d",
                              c->d, c->w, c->f, CLEF_DIM_MAX);
    // Within those bounds the count fits size_t; the head's one allocation
    // (params, grads, m, v) must fit this machine, else the size is bad
    // input, not a run failure.
    uint64_t bytes = 4 * sizeof(float) * (uint64_t)clef_param_count(c);
    uint64_t phys = clef_phys_mem_bytes();
    if (phys && bytes > phys)
        return clef_err_input(err, file, NULL, "head",
                              "%zu parameters need %.1f GiB (parameters, "
                              "gradients and AdamW moments): more than this "
                              "machine's %.1f GiB of memory",
                              clef_param_count(c), bytes / 1073741824.0,
                              phys / 1073741824.0);
    return CLEF_OK;
}

int clef_tensor_count(const clef_config *c)
{
    return 22 + 14 * c->R + 18 * c->L;
}

size_t clef_param_count(const clef_config *c)
{
    size_t d = c->d, w = c->w, f = c->f, R = c->R, L = c->L;
    return 2 * d + 6 * d * w + R * (4 * w * w + 2 * w * f + 11 * w + f) +
           L * (8 * w * w + 2 * w * f + 15 * w + f) + 4 * w * w + 11 * w + 4;
}

// ---- layout ----

typedef struct layout {
    clef_tensor_info *t;
    int n;
    size_t off;
} layout;

static int is_exempt_from_weights_decay(const char *name)
{
    size_t len = strlen(name);
    if (len >= 4 && strcmp(name + len - 4, "bias") == 0)
        return 1;                        // every bias, in_proj_bias included
    return strstr(name, "norm") != NULL; // LayerNorm weights
}

static void add(layout *lo, const char *name, int ndim, int s0, int s1)
{
    clef_tensor_info *t = &lo->t[lo->n++];
    size_t len = strlen(name); // names are short: the longest is 44 bytes
    if (len >= sizeof(t->name))
        len = sizeof(t->name) - 1;
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    t->ndim = ndim;
    t->shape[0] = ndim > 0 ? s0 : 0;
    t->shape[1] = ndim > 1 ? s1 : 0;
    t->numel = ndim == 0 ? 1 : (size_t)s0 * (ndim > 1 ? (size_t)s1 : 1);
    t->offset = lo->off;
    t->decays_in_weights_scope = !is_exempt_from_weights_decay(name);
    lo->off += t->numel;
}

static void add_pre(layout *lo, const char *prefix, const char *name, int ndim,
                    int s0, int s1)
{
    char full[2 * CLEF_NAME_MAX];
    snprintf(full, sizeof(full), "%s%s", prefix, name);
    add(lo, full, ndim, s0, s1);
}

static void add_norm(layout *lo, const char *prefix, const char *norm, int w)
{
    char name[2 * CLEF_NAME_MAX];
    snprintf(name, sizeof(name), "%s.weight", norm);
    add_pre(lo, prefix, name, 1, w, 0);
    snprintf(name, sizeof(name), "%s.bias", norm);
    add_pre(lo, prefix, name, 1, w, 0);
}

static void add_mha(layout *lo, const char *prefix, int w)
{
    add_pre(lo, prefix, "in_proj_weight", 2, 3 * w, w);
    add_pre(lo, prefix, "in_proj_bias", 1, 3 * w, 0);
    add_pre(lo, prefix, "out_proj.weight", 2, w, w);
    add_pre(lo, prefix, "out_proj.bias", 1, w, 0);
}

static void build_layout(const clef_config *c, layout *lo)
{
    const int d = c->d, w = c->w, f = c->f;
    char p[CLEF_NAME_MAX];
    // HEAD.md lists the three scalars as [], the reference module stores them
    // as [1] (see the golden weights): exports use [1], loads accept both.
    add(lo, "prior_logit_scale", 1, 1, 0);
    add(lo, "joint_logit_scale", 1, 1, 0);
    add(lo, "residual_gate", 1, 1, 0);
    add_norm(lo, "", "hidden_norm", d);
    add(lo, "memory_projection.weight", 2, w, d);
    add(lo, "question_projection.weight", 2, w, d);
    add(lo, "option_question_projection.weight", 2, w, d);
    add(lo, "global_projection.weight", 2, w, d);
    add(lo, "option_context_projection.weight", 2, w, d);
    add(lo, "option_lexical_projection.weight", 2, w, d);
    add(lo, "type_embedding.weight", 2, 3, w);
    for (int i = 0; i < c->R; i++) {
        snprintf(p, sizeof(p), "evidence_layers.%d.", i);
        add_norm(lo, p, "query_norm", w);
        add_norm(lo, p, "memory_norm", w);
        snprintf(p, sizeof(p), "evidence_layers.%d.attention.", i);
        add_mha(lo, p, w);
        snprintf(p, sizeof(p), "evidence_layers.%d.", i);
        add_norm(lo, p, "feedforward_norm", w);
        add_pre(lo, p, "feedforward.0.weight", 2, f, w);
        add_pre(lo, p, "feedforward.0.bias", 1, f, 0);
        add_pre(lo, p, "feedforward.3.weight", 2, w, f);
        add_pre(lo, p, "feedforward.3.bias", 1, w, 0);
    }
    add_norm(lo, "", "option_summary_norm", w);
    for (int j = 0; j < c->L; j++) {
        snprintf(p, sizeof(p), "layers.%d.self_attn.", j);
        add_mha(lo, p, w);
        snprintf(p, sizeof(p), "layers.%d.multihead_attn.", j);
        add_mha(lo, p, w);
        snprintf(p, sizeof(p), "layers.%d.", j);
        add_pre(lo, p, "linear1.weight", 2, f, w);
        add_pre(lo, p, "linear1.bias", 1, f, 0);
        add_pre(lo, p, "linear2.weight", 2, w, f);
        add_pre(lo, p, "linear2.bias", 1, w, 0);
        add_norm(lo, p, "norm1", w);
        add_norm(lo, p, "norm2", w);
        add_norm(lo, p, "norm3", w);
    }
    add_norm(lo, "", "field_norm", w);
    add_norm(lo, "", "option_norm", w);
    add(lo, "residual_scorer.0.weight", 2, w, 4 * w);
    add(lo, "residual_scorer.0.bias", 1, w, 0);
    add(lo, "residual_scorer.3.weight", 2, 1, w);
    add(lo, "residual_scorer.3.bias", 1, 1, 0);
}

// ---- views ----

int clef_tensors_view(const clef_config *c, float *base, clef_tensors *t)
{
    memset(t, 0, sizeof(*t));
    t->route = calloc(c->R ? c->R : 1, sizeof(*t->route));
    t->field = calloc(c->L ? c->L : 1, sizeof(*t->field));
    if (!t->route || !t->field) {
        clef_tensors_free(t);
        return CLEF_ERR_RUN;
    }
    // Walk the buffer in layout order; each take() claims the next tensor.
    const size_t d = c->d, w = c->w, f = c->f;
    float *p = base;
#define TAKE(dst, n) (dst = p, p += (n))
    TAKE(t->prior_scale, 1);
    TAKE(t->joint_scale, 1);
    TAKE(t->gate, 1);
    TAKE(t->hn_w, d);
    TAKE(t->hn_b, d);
    TAKE(t->W_m, w * d);
    TAKE(t->W_q, w * d);
    TAKE(t->W_oq, w * d);
    TAKE(t->W_g, w * d);
    TAKE(t->W_c, w * d);
    TAKE(t->W_l, w * d);
    TAKE(t->type_emb, 3 * w);
    for (int i = 0; i < c->R; i++) {
        clef_route_tensors *r = &t->route[i];
        TAKE(r->qn_w, w);
        TAKE(r->qn_b, w);
        TAKE(r->mn_w, w);
        TAKE(r->mn_b, w);
        TAKE(r->in_w, 3 * w * w);
        TAKE(r->in_b, 3 * w);
        TAKE(r->out_w, w * w);
        TAKE(r->out_b, w);
        TAKE(r->fn_w, w);
        TAKE(r->fn_b, w);
        TAKE(r->ff1_w, f * w);
        TAKE(r->ff1_b, f);
        TAKE(r->ff2_w, w * f);
        TAKE(r->ff2_b, w);
    }
    TAKE(t->sum_w, w);
    TAKE(t->sum_b, w);
    for (int j = 0; j < c->L; j++) {
        clef_field_tensors *l = &t->field[j];
        TAKE(l->sa_in_w, 3 * w * w);
        TAKE(l->sa_in_b, 3 * w);
        TAKE(l->sa_out_w, w * w);
        TAKE(l->sa_out_b, w);
        TAKE(l->ca_in_w, 3 * w * w);
        TAKE(l->ca_in_b, 3 * w);
        TAKE(l->ca_out_w, w * w);
        TAKE(l->ca_out_b, w);
        TAKE(l->l1_w, f * w);
        TAKE(l->l1_b, f);
        TAKE(l->l2_w, w * f);
        TAKE(l->l2_b, w);
        TAKE(l->n1_w, w);
        TAKE(l->n1_b, w);
        TAKE(l->n2_w, w);
        TAKE(l->n2_b, w);
        TAKE(l->n3_w, w);
        TAKE(l->n3_b, w);
    }
    TAKE(t->fn_w, w);
    TAKE(t->fn_b, w);
    TAKE(t->on_w, w);
    TAKE(t->on_b, w);
    TAKE(t->rs0_w, w * 4 * w);
    TAKE(t->rs0_b, w);
    TAKE(t->rs3_w, w);
    TAKE(t->rs3_b, 1);
#undef TAKE
    if ((size_t)(p - base) != clef_param_count(c)) {
        clef_tensors_free(t);
        return CLEF_ERR_RUN; // layout and views disagree: a bug
    }
    return CLEF_OK;
}

void clef_tensors_free(clef_tensors *t)
{
    free(t->route);
    free(t->field);
    t->route = NULL;
    t->field = NULL;
}

// ---- the head ----

// Bytes of the one allocation behind params, grads, m and v.
static size_t head_bytes(const clef_head *hd)
{
    return 4 * hd->nparams * sizeof(float);
}

int clef_head_alloc(clef_head *hd, const clef_config *cfg, clef_err *err)
{
    memset(hd, 0, sizeof(*hd));
    int rc = clef_config_check(cfg, NULL, err);
    if (rc)
        return rc;
    hd->cfg = *cfg;
    hd->ntensors = clef_tensor_count(cfg);
    hd->nparams = clef_param_count(cfg);
    hd->tensors = calloc(hd->ntensors, sizeof(*hd->tensors));
    // One allocation for params, grads, m, v: the same layout four times.
    float *all = clef_big_calloc(head_bytes(hd));
    if (!hd->tensors || !all) {
        clef_big_free(all, head_bytes(hd));
        goto oom;
    }
    hd->params = all;
    hd->grads = all + hd->nparams;
    hd->m = all + 2 * hd->nparams;
    hd->v = all + 3 * hd->nparams;
    layout lo = {hd->tensors, 0, 0};
    build_layout(cfg, &lo);
    if (lo.n != hd->ntensors || lo.off != hd->nparams) {
        clef_head_free(hd);
        return clef_err_set(err, CLEF_ERR_RUN, "internal: layout mismatch");
    }
    if (clef_tensors_view(cfg, hd->params, &hd->p) ||
        clef_tensors_view(cfg, hd->grads, &hd->g))
        goto oom;
    return CLEF_OK;
oom:
    clef_head_free(hd);
    return clef_err_set(err, CLEF_ERR_RUN,
                        "out of memory allocating a head of %zu parameters",
                        clef_param_count(cfg));
}

void clef_head_free(clef_head *hd)
{
    clef_tensors_free(&hd->p);
    clef_tensors_free(&hd->g);
    clef_big_free(hd->params, head_bytes(hd));
    free(hd->tensors);
    memset(hd, 0, sizeof(*hd));
}

int clef_head_find(const clef_head *hd, const char *name)
{
    for (int i = 0; i < hd->ntensors; i++)
        if (strcmp(hd->tensors[i].name, name) == 0)
            return i;
    return -1;
}

// ---- initialisation (HEAD.md §8), tensors drawn in state-dict order ----

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

// fan_in of the Linear layer that owns a weight or bias tensor.
static int linear_fan_in(const clef_head *hd, int i)
{
    const clef_tensor_info *t = &hd->tensors[i];
    if (t->ndim == 2)
        return t->shape[1];
    // a Linear bias: its weight is the tensor just before it
    return hd->tensors[i - 1].shape[1];
}

void clef_head_init_random(clef_head *hd, uint64_t seed)
{
    clef_rng rng;
    clef_rng_seed(&rng, seed);
    const float w = (float)hd->cfg.w;
    for (int i = 0; i < hd->ntensors; i++) {
        const clef_tensor_info *t = &hd->tensors[i];
        float *x = hd->params + t->offset;
        const char *n = t->name;
        float bound = 0.f;
        if (i < 3) {
            bound = 0.f; // the three scalars
        } else if (strstr(n, "norm")) {
            float v = ends_with(n, ".weight") ? 1.f : 0.f; // LayerNorm
            for (size_t k = 0; k < t->numel; k++)
                x[k] = v;
            continue;
        } else if (ends_with(n, "type_embedding.weight")) {
            for (size_t k = 0; k < t->numel; k++)
                x[k] = clef_rng_normal(&rng);
            continue;
        } else if (ends_with(n, "in_proj_weight")) {
            bound = sqrtf(6.f / (w + 3.f * w)); // xavier_uniform on (3w, w)
        } else if (ends_with(n, "in_proj_bias") ||
                   ends_with(n, "out_proj.bias")) {
            bound = 0.f;
        } else if (ends_with(n, "out_proj.weight")) {
            bound = 1.f / sqrtf(w);
        } else {
            bound = 1.f / sqrtf((float)linear_fan_in(hd, i));
        }
        for (size_t k = 0; k < t->numel; k++)
            x[k] = bound == 0.f ? 0.f : clef_rng_uniform(&rng, -bound, bound);
    }
    memset(hd->m, 0, 2 * hd->nparams * sizeof(float));
    hd->step = 0;
}

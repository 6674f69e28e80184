// One training update: forward, loss, backward, clipping and AdamW
// (HEAD.md §8).
#include "acts.h"
#include "backward.h"
#include "batch.h"
#include "head.h"
#include "loss.h"
#include "mm.h"
#include "par.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void clef_train_opts_default(clef_train_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->lr = 1e-3;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-4;
    o->weight_decay = 0.01;
    o->decay_all = 0;
}

// Fixed chunks of the flat gradient: each chunk's sum of squares (double,
// in order) on whichever thread, then the chunk sums in chunk order, so the
// norm does not depend on the thread count. 128 M released parameters took
// 0.1 s serially, half of a 2-thread update.
#define NORM_CHUNK ((size_t)1 << 16)
#define NORM_MAX_CHUNKS 4096

// Chunk length for n parameters: NORM_CHUNK, growing beyond
// NORM_MAX_CHUNKS · 2^16 (2^28) parameters so that there are at most
// NORM_MAX_CHUNKS chunks.
static size_t norm_chunk(size_t n)
{
    const size_t nchunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    return nchunks > NORM_MAX_CHUNKS
               ? (n + NORM_MAX_CHUNKS - 1) / NORM_MAX_CHUNKS
               : NORM_CHUNK;
}

double clef_grad_norm(const clef_head *hd)
{
    const size_t n = hd->nparams, chunk = norm_chunk(n);
    double part[NORM_MAX_CHUNKS];
    const size_t nc = (n + chunk - 1) / chunk;
    CLEF_PAR_FOR(nc > 2, size_t, ci, nc,
        const size_t i0 = ci * chunk, i1 = n - i0 < chunk ? n : i0 + chunk;
        double s = 0.0;
        for (size_t i = i0; i < i1; i++)
            s += (double)hd->grads[i] * hd->grads[i];
        part[ci] = s;
    );
    double s = 0.0;
    for (size_t ci = 0; ci < nc; ci++)
        s += part[ci];
    return sqrt(s);
}

// Exponent bits all ones: NaN or ±Inf (bit test: no FP compare to trap on).
static int chunk_nonfinite(const float *x, size_t i0, size_t i1)
{
    unsigned bad = 0;
    for (size_t i = i0; i < i1; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof(u));
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return (int)bad;
}

int clef_first_nonfinite(const clef_head *hd, const float *x, size_t *at)
{
    const size_t n = hd->nparams, chunk = norm_chunk(n);
    unsigned char bad[NORM_MAX_CHUNKS];
    const size_t nc = (n + chunk - 1) / chunk;
    CLEF_PAR_FOR(nc > 2, size_t, ci, nc,
        const size_t i0 = ci * chunk, i1 = n - i0 < chunk ? n : i0 + chunk;
        bad[ci] = (unsigned char)chunk_nonfinite(x, i0, i1);
    );
    for (size_t ci = 0; ci < nc; ci++) {
        if (!bad[ci])
            continue;
        size_t i = ci * chunk;
        while (!chunk_nonfinite(x, i, i + 1))
            i++;
        for (int t = 0; t < hd->ntensors; t++) {
            const clef_tensor_info *ti = &hd->tensors[t];
            if (i >= ti->offset && i < ti->offset + ti->numel) {
                *at = i - ti->offset;
                return t;
            }
        }
    }
    return -1;
}

// The AdamW arguments of step t (decay set per run of tensors).
static clef_adamw_args adamw_args(const clef_train_opts *o, long step)
{
    const double t = (double)step;
    const double bc1 = 1.0 - pow(o->beta1, t);
    const double bc2 = 1.0 - pow(o->beta2, t);
    return (clef_adamw_args){
        .lr = (float)o->lr,
        .beta1 = (float)o->beta1,
        .beta2 = (float)o->beta2,
        .eps = (float)o->eps,
        .step_size = (float)(o->lr / bc1),
        .bc2_sqrt = (float)sqrt(bc2),
    };
}

static int decays(const clef_train_opts *o, const clef_tensor_info *ti)
{
    return o->decay_all || ti->decays_in_weights_scope;
}

// The tensors the memory backward still writes (W_m, hidden_norm): AdamW
// beside it must leave them for after.
static int late_tensor(const clef_head *hd, const clef_tensor_info *ti)
{
    const float *g = hd->grads + ti->offset;
    return g == hd->g.W_m || g == hd->g.hn_w || g == hd->g.hn_b;
}

// AdamW elementwise chunks: fixed, so the split never changes a result
#define ADAMW_CHUNK ((size_t)1 << 16)

// AdamW over every tensor, or only the late ones (late_only); one call per
// run of consecutive tensors with the same decay (the update is elementwise:
// the same math as one call per tensor), in fixed chunks across threads
// (memory-bound).
static void adamw_tensors(const clef_kernels *k, clef_head *hd,
                          const clef_train_opts *o, clef_adamw_args a,
                          int late_only)
{
    for (int i = 0; i < hd->ntensors;) {
        const clef_tensor_info *ti = &hd->tensors[i];
        const int late = late_tensor(hd, ti);
        size_t n = 0;
        int j = i;
        for (; j < hd->ntensors; j++) {
            const clef_tensor_info *tj = &hd->tensors[j];
            if (decays(o, tj) != decays(o, ti) || late_tensor(hd, tj) != late)
                break;
            n += tj->numel;
        }
        if (!late_only || late) {
            a.decay = decays(o, ti) ? (float)o->weight_decay : 0.f;
            const size_t off = ti->offset,
                         nchunks = (n + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
            CLEF_PAR_FOR(nchunks > 2, size_t, ci, nchunks,
                const size_t c0 = ci * ADAMW_CHUNK;
                const size_t m = n - c0 < ADAMW_CHUNK ? n - c0 : ADAMW_CHUNK;
                k->adamw(m, hd->params + off + c0, hd->grads + off + c0,
                         hd->m + off + c0, hd->v + off + c0, &a);
                clef_mm_mirror(k, off + c0, m);
            );
        }
        i = j;
    }
}

void clef_adamw_step(const clef_kernels *k, clef_head *hd,
                     const clef_train_opts *o)
{
    hd->step++;
    adamw_tensors(k, hd, o, adamw_args(o, hd->step), 0);
}

// AdamW of one step over the tensors that are final before the memory
// backward's D (every one but the late ones), in ADAMW_CHUNK chunks counted
// tensor by tensor: item i of early_chunks is chunk i.
typedef struct adamw_run {
    const clef_kernels *k;
    clef_head *hd;
    const clef_train_opts *o;
    clef_adamw_args a;
} adamw_run;

static int early_chunks(const clef_head *hd)
{
    size_t n = 0;
    for (int t = 0; t < hd->ntensors; t++)
        if (!late_tensor(hd, &hd->tensors[t]))
            n += (hd->tensors[t].numel + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
    return (int)n;
}

static void early_chunk(const adamw_run *s, int i)
{
    clef_head *hd = s->hd;
    for (int t = 0; t < hd->ntensors; t++) {
        const clef_tensor_info *ti = &hd->tensors[t];
        if (late_tensor(hd, ti))
            continue;
        const int nch = (int)((ti->numel + ADAMW_CHUNK - 1) / ADAMW_CHUNK);
        if (i >= nch) {
            i -= nch;
            continue;
        }
        clef_adamw_args a = s->a;
        a.decay = decays(s->o, ti) ? (float)s->o->weight_decay : 0.f;
        const size_t c0 = (size_t)i * ADAMW_CHUNK, off = ti->offset + c0;
        const size_t m =
            ti->numel - c0 < ADAMW_CHUNK ? ti->numel - c0 : ADAMW_CHUNK;
        s->k->adamw(m, hd->params + off, hd->grads + off, hd->m + off,
                    hd->v + off, &a);
        clef_mm_mirror(s->k, off, m);
        return;
    }
}

// The memory backward's D blocks (core/backward.h) and the early AdamW
// chunks, from two pools on the team: thread 0 starts on D, the others on
// AdamW, and each then helps with the other pool. Every item runs on one
// thread (GEMMs inside the region run single-threaded), so the bits are
// those of a serial run.
static void d_beside_adamw(const clef_kernels *k, clef_ws *ws,
                           const adamw_run *s)
{
    const int nd = clef_memory_bwd_blocks(ws), na = early_chunks(s->hd);
    int next_d = 0, next_a = 0;
#pragma omp parallel
    {
        const int t = omp_get_thread_num();
        for (int pass = 0; pass < 2; pass++) {
            const int on_d = (pass == 0) == (t == 0);
            for (;;) {
                int i;
                if (on_d) {
#pragma omp atomic capture
                    i = next_d++;
                    if (i >= nd)
                        break;
                    clef_memory_bwd_block(k, ws, i);
                } else {
#pragma omp atomic capture
                    i = next_a++;
                    if (i >= na)
                        break;
                    early_chunk(s, i);
                }
            }
        }
    }
}

// D's blocks in order, each block's products on the whole team.
static void d_blocks(const clef_kernels *k, clef_ws *ws)
{
    const int nd = clef_memory_bwd_blocks(ws);
    for (int i = 0; i < nd; i++)
        clef_memory_bwd_block(k, ws, i);
}

// torch.nn.utils.clip_grad_norm_: scale by c / (‖g‖ + 1e-6) when below 1.
static void clip_grads(clef_head *hd, double max_norm)
{
    double coef = max_norm / (clef_grad_norm(hd) + 1e-6);
    if (coef >= 1.0)
        return;
    const float c = (float)coef;
    const size_t n = hd->nparams, nchunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    CLEF_PAR_FOR(nchunks > 2, size_t, ci, nchunks,
        const size_t i0 = ci * NORM_CHUNK;
        const size_t i1 = n - i0 < NORM_CHUNK ? n : i0 + NORM_CHUNK;
        for (size_t i = i0; i < i1; i++)
            hd->grads[i] *= c;
    );
}

// The longest prefix of recs (at least 1) that fits the workspace.
static int fitting_prefix(const clef_ws *ws, const clef_record *const *recs,
                          int n)
{
    int m = n;
    while (m > 1 && !clef_batch_fits(ws, recs, m))
        m--;
    return m;
}

// The passes over recs[0..n), records rec0.. of their update, each packed
// as far as the workspace allows: the first writes hd->grads, later ones add
// (acc0: the first adds too). The last pass's D runs beside AdamW when ad.
static double grad_passes(const clef_kernels *k, clef_head *hd,
                          const clef_record *const *recs, int n, int rec0,
                          int n_q, int n_score, clef_ws *ws,
                          const clef_train_opts *o, const adamw_run *ad)
{
    double loss = 0.0;
    for (int b = 0; b < n;) {
        const int m = fitting_prefix(ws, recs + b, n - b);
        const int acc = b > 0; // the first pass writes, later ones add
        clef_ws_set_dropout(ws, o->dropout, o->dropout_seed, hd->step,
                            rec0 + b);
        clef_batch_forward(k, hd, recs + b, m, ws, ws->z);
        loss += clef_update_loss(k, ws, o, n_q, n_score);
        clef_backward_upto_d(k, hd, ws, ws->dz, acc);
        if (ad && b + m == n)
            d_beside_adamw(k, ws, ad);
        else
            d_blocks(k, ws);
        clef_memory_bwd_finish(k, hd, ws, acc);
        b += m;
    }
    clef_ws_set_dropout(ws, 0, 0, 0, 0); // evaluations run without
    return loss;
}

void clef_train_begin(const clef_kernels *k, clef_head *hd)
{
    clef_mm_refresh_stale(k); // bf16: the parameters' copy, if AdamW's is not
    hd->step++;
}

double clef_shard_grads(const clef_kernels *k, clef_head *hd,
                        const clef_record *const *recs, int n, int rec0,
                        int n_q, int n_score, clef_ws *ws,
                        const clef_train_opts *o)
{
    clef_grads_prepare(hd); // a fresh gradient: the first pass writes
    return grad_passes(k, hd, recs, n, rec0, n_q, n_score, ws, o, NULL);
}

void clef_train_apply(const clef_kernels *k, clef_head *hd,
                      const clef_train_opts *o)
{
    if (o->max_grad_norm > 0)
        clip_grads(hd, o->max_grad_norm);
    adamw_tensors(k, hd, o, adamw_args(o, hd->step), 0);
}

// One packed pass when the batch fits the workspace; otherwise packed
// sub-batches in order. Backward accumulates and the loss is normalised by
// the whole batch's N, so both compute the same update. Without clipping,
// AdamW of every tensor but the late ones runs beside the last pass's
// memory backward (its last GEMM, D, which reads none of them):
// bandwidth-bound AdamW next to a compute-bound GEMM instead of after it.
double clef_train_step(const clef_kernels *k, clef_head *hd,
                       const clef_record *const *recs, int n, clef_ws *ws,
                       const clef_train_opts *o)
{
    int n_q, n_score;
    clef_batch_counts(recs, n, &n_q, &n_score);
    clef_grads_prepare(hd); // the first pass writes the big weight grads
    clef_train_begin(k, hd);
    const adamw_run ad = {k, hd, o, adamw_args(o, hd->step)};
    // (Not for a head whose AdamW runs on one thread anyway: the region
    // would cost more than it hides, 7,680 times in the seed's experiment.)
    const int beside = !(o->max_grad_norm > 0) && clef_par_team() &&
                       hd->nparams > 2 * ADAMW_CHUNK;
    double loss = grad_passes(k, hd, recs, n, 0, n_q, n_score, ws, o,
                              beside ? &ad : NULL);
    if (o->max_grad_norm > 0)
        clip_grads(hd, o->max_grad_norm);
    adamw_tensors(k, hd, o, ad.a, beside); // the late tensors only, if beside
    return loss;
}

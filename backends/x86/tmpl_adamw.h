// AdamW (torch.optim.AdamW, HEAD.md §8), written once against the vf layer.
// Memory-bound: θ, g, m, v read once, θ, m, v written once. Same operations
// in the same order as the scalar reference and no FMA, so every lane rounds
// exactly as clef_f32_adamw__scalar: the result is bitwise equal (the
// division by bc2_sqrt, one value for all, runs as vf_div_by: the same bits).
//   θ ← θ·keep;  m ← β1 m + (1−β1) g;  v ← β2 v + ((1−β2) g) g;
//   θ ← θ − (step_size·m) / (√v / bc2_sqrt + eps)

static inline void adamw_v(float *theta, const float *g, float *m, float *v,
                           int t, vf keep, vf b1, vf c1, vf b2, vf c2, vf step,
                           vf_divisor bc2, vf eps)
{
    vf th = t == VW ? vf_load(theta) : vf_loadn(theta, t);
    vf gi = t == VW ? vf_load(g) : vf_loadn(g, t);
    vf mi = t == VW ? vf_load(m) : vf_loadn(m, t);
    vf vi = t == VW ? vf_load(v) : vf_loadn(v, t);
    th = vf_mul(th, keep);
    mi = vf_add(vf_mul(b1, mi), vf_mul(c1, gi));
    vi = vf_add(vf_mul(b2, vi), vf_mul(vf_mul(c2, gi), gi));
    vf den = vf_add(vf_div_by(vf_sqrt(vi), bc2), eps);
    th = vf_sub(th, vf_div(vf_mul(step, mi), den));
    if (t == VW) {
        vf_store(theta, th);
        vf_store(m, mi);
        vf_store(v, vi);
    } else {
        vf_storen(theta, th, t);
        vf_storen(m, mi, t);
        vf_storen(v, vi, t);
    }
}

// Takes θ's cache lines for writing, one store per line, before the update
// writes them. When the other core has just read them (the forward and
// backward read weights on every thread), each line must first be
// invalidated there, and stalled behind AdamW's other loads and stores each
// invalidation waits in turn; a pass of nothing but these stores overlaps
// them (docs/PERF-NOTES.md, "Threads"; clef-bench --handoff). It rewrites
// the value it reads: no result changes.
static inline void adamw_claim(float *theta, size_t n)
{
    volatile float *p = theta;
    for (size_t i = 0; i < n; i += 16)
        p[i] = p[i];
}

#define ADAMW_BLOCK 4096 // floats claimed, then updated: 16 KiB of θ

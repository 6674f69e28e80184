#!/usr/bin/python3
"""An eager PyTorch model of the joint schema head (HEAD.md), built from
PyTorch's own modules (LayerNorm, MultiheadAttention, TransformerDecoderLayer
with norm_first, GELU) so its state dict has the reference's names.

Two uses:
  timing  : whole training updates (forward, loss, backward, AdamW) at a given
            geometry, the baseline clef's speed goals are measured against.
            torch_head.py time --hidden 8 --width 8 --heads 2 --ff 16 --T 96
                  --questions 2 --options 2 --batch 1 --threads 1 --steps 200
  parity  : logits of every record of a clef package with weights exported by
            clef, as JSON, so a test can compare them with `clef score`.
            torch_head.py logits --weights W.safetensors --package P/package.json
                  [--precision bf16]  (clef score --precision bf16's
                  roundings, with the memory attentions projected)
  grads   : the loss gradient of a package's train records as one batch,
            per tensor, as JSON (same flags as logits)

Needs Debian's python3-torch and python3-numpy only (no safetensors package:
the format is read by hand).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LN100 = math.log(100.0)
QTYPES = {"noul": 0, "choice": 1, "score": 2}


# ---- clef --precision bf16, in float64 ----
def to_bf16(x):
    """x rounded to bf16 (nearest even) from its float32 value, as clef
    rounds its float32 operands, kept in x's dtype."""
    return x.to(torch.float32).to(torch.bfloat16).to(x.dtype)


class LinearBF16(torch.autograd.Function):
    """y = x Wᵀ + b with both operands rounded to bf16, the products and sums
    exact (float64): clef's forward product; backward, clef's two products
    on the rounded output gradient (dx = dy W, dW = dyᵀ x, operands rounded
    again) and the bias gradient from the float dy."""

    @staticmethod
    def forward(ctx, x, w, b):
        xr, wr = to_bf16(x), to_bf16(w)
        ctx.save_for_backward(xr, wr)
        ctx.has_bias = b is not None
        y = torch.matmul(xr, wr.t())
        return y if b is None else y + b

    @staticmethod
    def backward(ctx, gy):
        xr, wr = ctx.saved_tensors
        g = to_bf16(gy)
        gx = torch.matmul(g, wr)
        gw = g.reshape(-1, g.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1])
        gb = gy.reshape(-1, gy.shape[-1]).sum(0) if ctx.has_bias else None
        return gx, gw, gb


def bf16_linear(x, w, b=None):
    return LinearBF16.apply(x, w, b)


class MemoryBF16(torch.autograd.Function):
    """M = bf16(X) bf16(W_m)ᵀ with X = x̂ γ + β, x̂ already bf16, and clef's
    backward of it (core/backward.c: dX is never formed): D = bf16(dM)ᵀ x̂,
    c = Σ_t dM, dW_m = D ⊙ γ + c βᵀ, dγ = Σ_j W_m ⊙ D, dβ = cᵀ W_m."""

    @staticmethod
    def forward(ctx, x16, gamma, beta, W):
        ctx.save_for_backward(x16, gamma, beta, W)
        return torch.matmul(to_bf16(x16 * gamma + beta), to_bf16(W).t())

    @staticmethod
    def backward(ctx, dM):
        x16, gamma, beta, W = ctx.saved_tensors
        D = to_bf16(dM).t() @ x16
        c = dM.sum(0)
        dW = D * gamma + c[:, None] * beta[None, :]
        return None, (W * D).sum(0), c @ W, dW


class EvidenceLayer(nn.Module):
    def __init__(self, w, h, f):
        super().__init__()
        self.query_norm = nn.LayerNorm(w)
        self.memory_norm = nn.LayerNorm(w)
        self.attention = nn.MultiheadAttention(w, h, batch_first=True)
        self.feedforward_norm = nn.LayerNorm(w)
        self.feedforward = nn.Sequential(nn.Linear(w, f), nn.GELU(),
                                         nn.Dropout(0.0), nn.Linear(f, w))

    def forward(self, r, m):
        mm = self.memory_norm(m)
        r = r + self.attention(self.query_norm(r), mm, mm,
                               need_weights=False)[0]
        return r + self.feedforward(self.feedforward_norm(r))


class JointSchemaHead(nn.Module):
    def __init__(self, d, w, h, f, R, L):
        super().__init__()
        self.w = w
        self.prior_logit_scale = nn.Parameter(torch.zeros(1))
        self.joint_logit_scale = nn.Parameter(torch.zeros(1))
        self.residual_gate = nn.Parameter(torch.zeros(1))
        self.hidden_norm = nn.LayerNorm(d)
        for name in ("memory", "question", "option_question", "global",
                     "option_context", "option_lexical"):
            setattr(self, name + "_projection", nn.Linear(d, w, bias=False))
        self.type_embedding = nn.Embedding(3, w)
        self.evidence_layers = nn.ModuleList(
            EvidenceLayer(w, h, f) for _ in range(R))
        self.option_summary_norm = nn.LayerNorm(w)
        self.layers = nn.ModuleList(
            nn.TransformerDecoderLayer(w, h, f, dropout=0.0,
                                       activation="gelu", batch_first=True,
                                       norm_first=True) for _ in range(L))
        self.field_norm = nn.LayerNorm(w)
        self.option_norm = nn.LayerNorm(w)
        self.residual_scorer = nn.Sequential(nn.Linear(4 * w, w), nn.GELU(),
                                             nn.Dropout(0.0), nn.Linear(w, 1))

    def forward(self, rec, bf16=False):
        """rec: H (T,d), lex (O,d), qspans, ospans, owner (O), qtype (Q).
        bf16: clef --precision bf16 (with F.linear = bf16_linear): x̂, the
        normalized hidden states, kept rounded and read by the memory and g;
        the span means taken before, from x̂ itself."""
        X = Xs = self.hidden_norm(rec["H"])
        if bf16:
            ln = self.hidden_norm
            x16 = to_bf16(F.layer_norm(rec["H"], ln.normalized_shape,
                                       eps=ln.eps))
            X = x16 * ln.weight + ln.bias
            M = MemoryBF16.apply(x16, ln.weight, ln.bias,
                                 self.memory_projection.weight)
        else:
            M = self.memory_projection(X)
        qv = torch.stack([Xs[s:e].mean(0) for s, e in rec["qspans"]])
        ctx = torch.stack([Xs[s:e].mean(0) for s, e in rec["ospans"]])
        g = X[-1]
        owner = rec["owner"]
        R = (self.option_context_projection(ctx) +
             self.option_lexical_projection(rec["lex"]) +
             self.option_question_projection(qv)[owner])
        # options attend to memory, never to each other: one query batch
        for layer in self.evidence_layers:
            R = layer(R.unsqueeze(0), M.unsqueeze(0)).squeeze(0)
        B = self.question_projection(qv)
        s = (R * B[owner]).sum(-1) / math.sqrt(self.w)
        Q = qv.shape[0]
        S = []
        for q in range(Q):
            idx = rec["opts"][q]
            a = torch.softmax(s[idx], 0)
            S.append((a.unsqueeze(1) * R[idx]).sum(0))
        S = torch.stack(S)
        Fq = (B + self.option_summary_norm(S) + self.global_projection(g) +
              self.type_embedding(rec["qtype"]))
        Fq = Fq.unsqueeze(0)
        for layer in self.layers:
            Fq = layer(Fq, M.unsqueeze(0))
        Fhat = self.field_norm(Fq.squeeze(0))
        f = Fhat[owner]
        n = self.option_norm(R)
        cos = (F.normalize(f, dim=-1, eps=1e-8) *
               F.normalize(n, dim=-1, eps=1e-8)).sum(-1)
        res = self.residual_scorer(
            torch.cat([f, n, f * n, (f - n).abs()], -1)).squeeze(-1)
        anchor = F.normalize(qv + g, dim=-1, eps=1e-12)
        prior = (self.prior_logit_scale.clamp(max=LN100).exp() *
                 (F.normalize(rec["lex"], dim=-1, eps=1e-12) *
                  anchor[owner]).sum(-1))
        joint = self.joint_logit_scale.clamp(max=LN100).exp() * cos + res
        return prior + torch.sigmoid(self.residual_gate) * joint


def grouped_loss(recs_targets, eps=0.0, brier=0.0):
    """Mean over questions of CE with smoothing (+ Brier): HEAD.md §6."""
    total, n = 0.0, 0
    for zr, targets in recs_targets:
        for idx, y in targets:
            logp = torch.log_softmax(zr[idx], 0)
            p = logp.exp()
            ys = (1 - eps) * y + eps / len(idx)
            total = total - (ys * logp).sum() + brier * ((p - y) ** 2).sum()
            n += 1
    return total / n


# ---- safetensors and packages, read with numpy ----
DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64,
      "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        buf = raw[base + b:base + e]
        if t["dtype"] == "BF16":
            u = np.frombuffer(buf, np.uint16).astype(np.uint32) << 16
            a = u.view(np.float32)
        else:
            a = np.frombuffer(buf, DT[t["dtype"]])
        out[name] = a.reshape(t["shape"]).astype(
            np.float32 if t["dtype"] in ("F32", "F16", "BF16", "F64") else np.int64)
    return out, header.get("__metadata__", {})


def load_package(manifest):
    folder = os.path.dirname(os.path.abspath(manifest))
    with open(manifest) as fh:
        man = json.load(fh)
    E = read_safetensors(os.path.join(folder, man["lexical"]["file"]))[0]["lexical"]
    shards = [read_safetensors(os.path.join(folder, s["file"]))[0]
              for s in man["shards"]]
    recs = []
    for r in man["records"]:
        t = shards[r["shard"]]
        rid = r["id"]
        H = torch.tensor(t[rid + "/hidden"], dtype=torch.float64)
        ids = t[rid + "/input_ids"]
        qs = t[rid + "/question_spans"].tolist()
        os_ = t[rid + "/option_spans"].tolist()
        lex = torch.tensor(np.stack([E[ids[s:e]].astype(np.float64).mean(0)
                                     for s, e in os_]))
        owner, opts, o = [], [], 0
        for q, question in enumerate(r["questions"]):
            k = len(question["options"])
            opts.append(list(range(o, o + k)))
            owner += [q] * k
            o += k
        recs.append({"id": rid, "H": H, "lex": lex, "qspans": qs,
                     "ospans": os_, "owner": torch.tensor(owner),
                     "opts": opts, "qtype": torch.tensor(
                         [QTYPES[q["type"]] for q in r["questions"]]),
                     "questions": r["questions"]})
    return man, recs


def load_head(a):
    """The head of a.weights in float64, in a.precision: bf16 routes every
    linear map through bf16_linear, MultiheadAttention's projections too
    (torch.nn.functional's own calls resolve `linear` at call time); the
    attention's scores and weighted sums stay float, as in clef."""
    if a.precision == "bf16":
        F.linear = bf16_linear
    tensors, meta = read_safetensors(a.weights)
    cfg = json.loads(meta["head"])
    head = JointSchemaHead(cfg["hidden_size"], cfg["width"], cfg["heads"],
                           cfg["feedforward"], cfg["routing_layers"],
                           cfg["layers"]).double()
    state = {k: torch.tensor(v, dtype=torch.float64) for k, v in tensors.items()}
    head.load_state_dict(state, strict=True)  # the reference's own names
    head.eval()
    return head


def cmd_logits(a):
    head = load_head(a)
    _, recs = load_package(a.package)
    out = {}
    bf16 = a.precision == "bf16"
    # bf16: grad enabled, so that MultiheadAttention's fused fast path (which
    # does not call F.linear) is off: it is whenever a weight requires grad
    with torch.set_grad_enabled(bf16):
        for r in recs:
            out[r["id"]] = head(r, bf16).detach().tolist()
    json.dump(out, sys.stdout)
    print()


def record_targets(r):
    """(option indices, target distribution) of each question with a label
    or a target: the questions HEAD.md §6's N counts."""
    out = []
    for q, question in enumerate(r["questions"]):
        idx = r["opts"][q]
        if "target" in question:
            y = torch.tensor(question["target"], dtype=torch.float64)
        elif "label" in question:
            lab = question["label"]
            if isinstance(lab, str):
                lab = question["options"].index(lab)
            y = F.one_hot(torch.tensor(lab), len(idx)).double()
        else:
            continue
        out.append((idx, y))
    return out


def cmd_grads(a):
    """The gradient of the plain grouped loss over the package's train
    records as one batch, per tensor (flattened), as JSON."""
    head = load_head(a)
    man, recs = load_package(a.package)
    train = [r for r, m in zip(recs, man["records"]) if m["split"] == "train"]
    bf16 = a.precision == "bf16"
    loss = grouped_loss([(head(r, bf16), record_targets(r)) for r in train])
    loss.backward()
    json.dump({n: p.grad.flatten().tolist()
               for n, p in head.named_parameters()}, sys.stdout)
    print()


def synthetic_record(d, T, Q, nopt, gen):
    H = torch.randn(T, d, generator=gen)
    O = Q * nopt
    lex = torch.randn(O, d, generator=gen)
    qspans = [(0, max(1, T // 4))] * Q
    ospans = [(T // 2 + (o % max(1, T // 2 - 1)), T) for o in range(O)]
    opts = [list(range(q * nopt, (q + 1) * nopt)) for q in range(Q)]
    owner = torch.tensor([q for q in range(Q) for _ in range(nopt)])
    targets = [(opts[q], F.one_hot(torch.tensor(q % nopt), nopt).float())
               for q in range(Q)]
    return {"H": H, "lex": lex, "qspans": qspans, "ospans": ospans,
            "opts": opts, "owner": owner, "qtype": torch.ones(Q, dtype=torch.long),
            "targets": targets}


def cmd_time(a):
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(0)
    head = JointSchemaHead(a.hidden, a.width, a.heads, a.ff, a.routing,
                           a.layers)
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3, eps=1e-4,
                            weight_decay=0.01)
    recs = [synthetic_record(a.hidden, a.T, a.questions, a.options, gen)
            for _ in range(a.batch)]

    def update():
        opt.zero_grad(set_to_none=True)
        zs = [(head(r), r["targets"]) for r in recs]
        loss = grouped_loss(zs)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        update()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        update()
    dt = (time.perf_counter() - t0) / a.steps
    print(json.dumps({"torch": torch.__version__, "threads": a.threads,
                      "cpu_capability": torch.backends.cpu.get_cpu_capability()
                      if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu, "get_cpu_capability") else None,
                      "seconds_per_update": dt, "updates_per_s": 1.0 / dt}))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    for name, default in (("hidden", 8), ("width", 8), ("heads", 2), ("ff", 16),
                          ("routing", 2), ("layers", 4), ("T", 96),
                          ("questions", 2), ("options", 2), ("batch", 1),
                          ("threads", 1), ("steps", 100), ("warmup", 5)):
        t.add_argument("--" + name, type=int, default=default)
    lg = sub.add_parser("logits")
    gr = sub.add_parser("grads")
    for q in (lg, gr):
        q.add_argument("--weights", required=True)
        q.add_argument("--package", required=True)
        q.add_argument("--precision", choices=("fp32", "bf16"),
                       default="fp32",
                       help="bf16: clef --precision bf16's rounding of "
                            "every linear map's operands and of x̂")
    a = p.parse_args()
    {"time": cmd_time, "logits": cmd_logits, "grads": cmd_grads}[a.cmd](a)


if __name__ == "__main__":
    main()

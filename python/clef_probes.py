#!/usr/bin/env python3
"""Baselines for a clef package on the frozen features it carries.

    python3 python/clef_probes.py --package DIR/package.json \\
        [--pool-spans DIR/capture.json] [--seeds 1,2,3] [--out probes.json] \\
        [--threads N]

Per question id (matched across records; every record must carry the same
options list for it), on the same train / validation / test split as
`clef train`:

- majority: the mode of the train labels; the probabilities are the train
  label frequencies with +1 per class (so the NLL is finite). With soft
  targets the frequencies are the sums of the targets (+1 per class).
- linear probe: d -> K on the pooled hidden state.
- ffn probe: d -> 4d -> K, GELU, dropout 0.1.

Features: the mean over tokens of the record's hidden state (float32 as
read; the mean is taken in float64), or, with --pool-spans FILE
({"records": {"<id>": {"state_span": [s, e], ...}}}, half-open), the mean
over tokens s..e-1 only. Standardised with the train split's mean and sd
(an sd of 0 is replaced by 1).

Training: AdamW (learning rate chosen on the selection NLL from
{1e-4, 1e-3, 1e-2} for the linear probe, from {1e-4, 1e-3} for the FFN
probe, each candidate trained from the same seed;
betas 0.9/0.999, eps 1e-8, weight decay 1e-2 fixed), cross-entropy
against the one-hot label or the soft target, minibatches of 64 shuffled
per epoch, at most 200 epochs, early stopping on validation NLL (patience
20 epochs) keeping the best weights. A question without validation
examples selects on train NLL instead (said in the output as
"selection"). torch.manual_seed(seed) before every model;
deterministic algorithms on. The test split is evaluated once per model,
with the chosen weights. Metrics are those of clef_metrics.py.
A question with a single option is reported (all metrics trivial) but not
trained.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clefpkg  # noqa: E402
from clef_metrics import question_metrics, mean_sd  # noqa: E402

__all__ = ["run_probes", "pooled_features", "SETTINGS"]

SPLITS = ("train", "validation", "test")
MODELS = ("majority", "linear probe", "ffn probe")
SETTINGS = {"lr": {"linear probe": [1e-4, 1e-3, 1e-2],
                   "ffn probe": [1e-4, 1e-3]},
            "betas": [0.9, 0.999], "eps": 1e-8,
            "weight_decay": 1e-2, "batch": 64, "max_epochs": 200,
            "patience": 20, "dropout": 0.1, "ffn_multiplier": 4}


# ------------------------------------------------------------------ input --

def _load_pool_spans(pool_spans):
    if pool_spans is None:
        return None
    if isinstance(pool_spans, (str, os.PathLike)):
        with open(pool_spans, "r", encoding="utf-8") as f:
            pool_spans = json.load(f)
    recs = pool_spans.get("records") if isinstance(pool_spans, dict) \
        else None
    if not isinstance(recs, dict):
        raise ValueError("pool spans: want {\"records\": {\"<id>\": "
                         "{\"state_span\": [s, e]}}}")
    return recs


def pooled_features(records, pool_spans=None):
    """(n, d) float32: the mean hidden state per record (over state_span
    when pool_spans, the "records" mapping, is given)."""
    rows = []
    for r in records:
        H = np.asarray(r["hidden"], dtype=np.float32)
        if H.ndim != 2 or H.shape[0] < 1:
            raise ValueError("record %s: hidden has shape %s, want (T, d)"
                             % (r["id"], H.shape))
        if pool_spans is not None:
            entry = pool_spans.get(r["id"])
            if entry is None or "state_span" not in entry:
                raise ValueError("pool spans: no state_span for record %s"
                                 % r["id"])
            s, e = (int(v) for v in entry["state_span"])
            if not 0 <= s < e <= H.shape[0]:
                raise ValueError("record %s: state_span [%d, %d] is not "
                                 "within 0 <= s < e <= T = %d"
                                 % (r["id"], s, e, H.shape[0]))
            H = H[s:e]
        rows.append(H.astype(np.float64).mean(axis=0))
    d = {row.shape[0] for row in rows}
    if len(d) > 1:
        raise ValueError("records differ in hidden size: %s" % sorted(d))
    return np.stack(rows).astype(np.float32) if rows else \
        np.zeros((0, 0), np.float32)


def _questions(records):
    """{qid: options} in first-seen order; checks the options agree.

    Records may list the same options in another order (a schema whose
    options were shuffled); labels and targets are then mapped onto the
    first-seen order by option id.
    """
    opts, first = {}, {}
    for r in records:
        for q in r["questions"]:
            qid, o = q["id"], list(q["options"])
            if qid not in opts:
                opts[qid], first[qid] = o, r["id"]
            elif sorted(opts[qid]) != sorted(o) or len(set(o)) != len(o):
                raise ValueError(
                    "question %r: record %s has options %s but record %s "
                    "has %s; a question id must keep one set of options"
                    % (qid, r["id"], o, first[qid], opts[qid]))
    return opts


def _question_data(records, qid, options):
    """Per split: {"all": rows of the records carrying the question,
    "rows": those with a label or target, "Y": their targets (n, K), one-hot
    for a label, "soft": whether any target was given}."""
    K = len(options)
    out = {s: {"rows": [], "Y": [], "soft": False} for s in SPLITS}
    for i, r in enumerate(records):
        mine = [q for q in r["questions"] if q["id"] == qid]
        if len(mine) > 1:
            raise ValueError("record %s: question %r appears %d times"
                             % (r["id"], qid, len(mine)))
        for q in mine:
            pos = [options.index(o) for o in q["options"]]
            if "target" in q and q["target"] is not None:
                y = np.zeros(K)
                y[pos] = np.asarray(q["target"], dtype=np.float64)
                out[r["split"]]["soft"] = True
            elif "label" in q and q["label"] is not None:
                y = np.zeros(K)
                y[pos[int(q["label"])]] = 1.0
            else:
                y = None
            out[r["split"]]["rows"].append((i, y))
    for s in SPLITS:
        rows = out[s]["rows"]
        lab = [(i, y) for i, y in rows if y is not None]
        out[s] = {"all": np.array([i for i, _ in rows], dtype=np.int64),
                  "rows": np.array([i for i, _ in lab], dtype=np.int64),
                  "Y": np.array([y for _, y in lab]).reshape(-1, K),
                  "soft": out[s]["soft"]}
    return out


def _metrics(P, part, options):
    Y = part["Y"]
    labels = np.argmax(Y, axis=1) if len(Y) else np.zeros(0, np.int64)
    return question_metrics(P, labels, options,
                            targets=Y if part["soft"] else None)


# --------------------------------------------------------------- training --

def _softmax64(logits):
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _make_model(torch, kind, d, K, settings):
    nn = torch.nn
    if kind == "linear probe":
        return nn.Linear(d, K)
    h = settings["ffn_multiplier"] * d
    return nn.Sequential(nn.Linear(d, h), nn.GELU(),
                         nn.Dropout(settings["dropout"]), nn.Linear(h, K))


def _train_one(torch, kind, seed, lr, X, parts, K, settings):
    """Trains one probe at one learning rate; returns (predict fn, info)."""
    F = torch.nn.functional
    torch.manual_seed(seed)
    d = X.shape[1]
    model = _make_model(torch, kind, d, K, settings)
    opt = torch.optim.AdamW(model.parameters(), lr=lr,
                            betas=tuple(settings["betas"]),
                            eps=settings["eps"],
                            weight_decay=settings["weight_decay"])
    gen = torch.Generator().manual_seed(seed)
    Xt = torch.from_numpy(X)
    tr = parts["train"]
    Xtr = Xt[torch.from_numpy(tr["rows"])]
    Ytr = torch.from_numpy(tr["Y"].astype(np.float32))
    sel = "validation" if len(parts["validation"]["rows"]) else "train"
    Xsel = Xt[torch.from_numpy(parts[sel]["rows"])]
    Ysel = torch.from_numpy(parts[sel]["Y"].astype(np.float32))

    def nll(Xs, Ys):
        model.eval()
        with torch.no_grad():
            lp = F.log_softmax(model(Xs).double(), dim=1)
            return float(-(Ys.double() * lp).sum(dim=1).mean())

    best = nll(Xsel, Ysel)
    best_state = {k: v.clone() for k, v in model.state_dict().items()}
    best_epoch, bad, epochs = 0, 0, 0
    n, B = Xtr.shape[0], settings["batch"]
    for epoch in range(1, settings["max_epochs"] + 1):
        model.train()
        perm = torch.randperm(n, generator=gen)
        for s in range(0, n, B):
            idx = perm[s:s + B]
            lp = F.log_softmax(model(Xtr[idx]), dim=1)
            loss = -(Ytr[idx] * lp).sum(dim=1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        epochs = epoch
        v = nll(Xsel, Ysel)
        if v < best:
            best, best_epoch, bad = v, epoch, 0
            best_state = {k: t.clone() for k, t in model.state_dict().items()}
        else:
            bad += 1
            if bad >= settings["patience"]:
                break
    model.load_state_dict(best_state)
    model.eval()

    def predict(rows):
        if len(rows) == 0:
            return np.zeros((0, K))
        with torch.no_grad():
            return _softmax64(model(Xt[torch.from_numpy(rows)]).numpy())

    return predict, {"epochs": epochs, "best_epoch": best_epoch,
                     "selection": sel + "_nll", "selection_nll": best,
                     "lr": lr}


def _train(torch, kind, seed, X, parts, K, settings):
    """One probe per learning rate of the grid, each from
    torch.manual_seed(seed); keeps the one with the lowest selection NLL
    (the first on ties)."""
    best = None
    grid = {}
    for lr in settings["lr"][kind]:
        fn, info = _train_one(torch, kind, seed, float(lr), X, parts, K,
                              settings)
        grid[repr(float(lr))] = info["selection_nll"]
        if best is None or info["selection_nll"] < best[1]["selection_nll"]:
            best = (fn, info)
    best[1]["lr_grid_nll"] = grid
    return best


def _majority(parts, K):
    counts = parts["train"]["Y"].sum(axis=0) if len(parts["train"]["Y"]) \
        else np.zeros(K)
    p = (counts + 1.0) / (counts.sum() + K)
    def predict(rows):
        return np.tile(p, (len(rows), 1))

    return predict, {"epochs": 0, "best_epoch": 0, "selection": "none",
                     "mode": int(np.argmax(p)),
                     "train_counts": counts.tolist()}


# ------------------------------------------------------------------- main --

def run_probes(manifest_path, pool_spans=None, seeds=(1, 2, 3),
               threads=None, settings=None, verify=True):
    """Runs the three baselines; returns the probes.json object."""
    import torch

    t0 = time.perf_counter()
    timing = {}
    cfg = dict(SETTINGS)
    cfg.update(settings or {})
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("no seeds")
    pkg = clefpkg.read_package(manifest_path, verify=verify)
    records = pkg["records"]
    for r in records:
        if r["split"] not in SPLITS:
            raise ValueError("record %s: split %r is not one of %s"
                             % (r["id"], r["split"], SPLITS))
    spans = _load_pool_spans(pool_spans)
    timing["load"] = time.perf_counter() - t0

    t = time.perf_counter()
    X = pooled_features(records, spans).astype(np.float64)
    is_train = np.array([r["split"] == "train" for r in records])
    if not is_train.any():
        raise ValueError("%s: no train records" % manifest_path)
    mu = X[is_train].mean(axis=0)
    sd = X[is_train].std(axis=0)
    sd[~(sd > 0)] = 1.0
    X = ((X - mu) / sd).astype(np.float32)
    questions = _questions(records)
    timing["features"] = time.perf_counter() - t

    prev_threads = torch.get_num_threads()
    prev_det = torch.are_deterministic_algorithms_enabled()
    if threads:
        torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True)
    used_threads = torch.get_num_threads()
    ids = [r["id"] for r in records]
    try:
        qparts = {q: _question_data(records, q, o)
                  for q, o in questions.items()}
        models = []
        for name in MODELS:
            t = time.perf_counter()
            per_seed, probs_first = [], {}
            for k, seed in enumerate(seeds):
                entry = {"seed": seed, "epochs": {}, "best_epoch": {},
                         "selection": {}, "per_question": {},
                         "validation": {}}
                for qid, options in questions.items():
                    K = len(options)
                    parts = qparts[qid]
                    if len(parts["train"]["rows"]) == 0:
                        raise ValueError("question %r: no labelled train "
                                         "records" % qid)
                    if name == "majority" or K < 2:
                        predict, info = _majority(parts, K)
                    else:
                        predict, info = _train(torch, name, seed, X, parts,
                                               K, cfg)
                    entry["epochs"][qid] = info["epochs"]
                    entry["best_epoch"][qid] = info["best_epoch"]
                    entry["selection"][qid] = info["selection"]
                    if "lr" in info:
                        entry.setdefault("lr", {})[qid] = info["lr"]
                        entry.setdefault("lr_grid_nll", {})[qid] = \
                            info["lr_grid_nll"]
                    te = parts["test"]
                    entry["per_question"][qid] = _metrics(
                        predict(te["rows"]), te, options)
                    entry["validation"][qid] = _metrics(
                        predict(parts["validation"]["rows"]),
                        parts["validation"], options)
                    if k == 0:
                        allrows = te["all"]
                        P = predict(allrows)
                        probs_first[qid] = {ids[i]: [float(v) for v in p]
                                            for i, p in zip(allrows, P)}
                per_seed.append(entry)
            summary = {}
            for qid in questions:
                summary[qid] = {m: mean_sd([s["per_question"][qid][m]
                                            for s in per_seed])
                                for m in ("accuracy", "macro_f1", "nll",
                                          "ece")}
            models.append({"name": name, "per_seed": per_seed,
                           "per_question": summary,
                           "test_probabilities": probs_first})
            timing[name] = time.perf_counter() - t
    finally:
        torch.use_deterministic_algorithms(prev_det)
        torch.set_num_threads(prev_threads)

    timing["total"] = time.perf_counter() - t0
    splits = {s: int(sum(1 for r in records if r["split"] == s))
              for s in SPLITS}
    return {"package": os.path.abspath(manifest_path),
            "package_sha256": pkg["sha256"],
            "pooling": "state_span" if spans is not None else "all_tokens",
            "hidden_size": int(X.shape[1]),
            "seeds": seeds, "splits": splits,
            "questions": questions,
            "evaluated": {q: {s: int(len(p[s]["rows"])) for s in SPLITS}
                          for q, p in qparts.items()},
            "settings": dict(cfg, threads=used_threads,
                             standardise="train mean/sd",
                             torch=torch.__version__),
            "models": models,
            "timing_s": timing}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", required=True, help="package.json")
    ap.add_argument("--pool-spans", default=None,
                    help="capture.json with records.<id>.state_span")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--out", default=None, help="write JSON here (else "
                    "stdout)")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args(argv)
    try:
        seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    except ValueError:
        ap.error("--seeds: want integers separated by commas, got %r"
                 % a.seeds)
    try:
        res = run_probes(a.package, a.pool_spans, seeds, threads=a.threads)
    except (ValueError, OSError, KeyError) as e:
        sys.stderr.write("clef_probes: %s\n" % e)
        return 1
    text = json.dumps(res, indent=1) + "\n"
    if a.out:
        tmp = a.out + ".tmp.%d" % os.getpid()
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, a.out)
        sys.stderr.write("clef_probes: wrote %s (%.1f s)\n"
                         % (a.out, res["timing_s"]["total"]))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

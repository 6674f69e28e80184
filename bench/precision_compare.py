#!/usr/bin/env python3
"""Two trainings of the same example side by side (issue 20, item 3).

    bench/precision_compare.py A_DIR B_DIR [--bound POINTS=0.5]

Each DIR is the --out of `python/clef_example.py TASK ...` with the same
task, seeds and settings except what is compared: --precision fp32 against
bf16, or, for the noise floor, fp32 against fp32 under another CLEF_MAX_ISA
(only the kernels' float rounding differs). Prints, per seed:

- how far B's history (train loss and validation loss at every evaluation,
  HISTORY in result.json) is from A's, as the largest |B - A| / A over the
  steps both evaluated;
- where DIR/run-seed<S>/scores.jsonl exist, how many test answers (argmax
  per record and question) the two runs share;

and the joint head's held-out test accuracy per question for both runs (the
test split is scored once per run), with the mean of B - A over the seeds and,
for two or more seeds, its standard deviation and standard error. Exit 1 when
a question's test accuracy differs by more than --bound points on average over
the seeds, 0 otherwise.
"""
import argparse
import json
import os
import sys


def history(run_dir):
    h = json.load(open(os.path.join(run_dir, "result.json")))["history"]
    return {e["step"]: e for e in h}


def band(a, b, key):
    """(largest relative difference of b from a, at step) over common steps."""
    worst = (0.0, None)
    for step in sorted(set(a) & set(b)):
        x, y = a[step].get(key), b[step].get(key)
        if x is None or y is None or x == 0:
            continue
        r = abs(y - x) / abs(x)
        if r > worst[0]:
            worst = (r, step)
    return worst


def joint(comparison):
    for m in comparison["models"]:
        if m["name"] == "joint head":
            return {q: v["accuracy"]["values"] for q, v in m["per_question"].items()}
    raise SystemExit("no joint head in comparison.json")


def test_keys(out_dir):
    """{(record, question)} of the test split, from DIR/pkg/package.json."""
    man = json.load(open(os.path.join(out_dir, "pkg", "package.json")))
    return {(r["id"], q["id"]) for r in man["records"] if r["split"] == "test"
            for q in r["questions"]}


def argmax_answers(lines, keys):
    """{(record, question): argmax candidate} of `clef score` output lines,
    for the keys given."""
    out = {}
    for line in lines:
        r = json.loads(line)
        k = (r["record"], r["question"])
        if k in keys:
            best = max(r["scores"], key=lambda s: s["probability"])
            out[k] = best["candidate_id"]
    return out


def answers(run_dir, keys):
    """argmax_answers of the run's scores.jsonl, or None without one."""
    path = os.path.join(run_dir, "scores.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return argmax_answers(f, keys)


def label(comparison, fallback):
    t = comparison.get("train", {})
    name = t.get("precision", fallback)
    return name + (f" (CLEF_MAX_ISA={t['clef_max_isa']})"
                   if t.get("clef_max_isa") else "")


def main(argv):
    p = argparse.ArgumentParser(prog="precision_compare.py")
    p.add_argument("a_dir")
    p.add_argument("b_dir")
    p.add_argument("--bound", type=float, default=0.5)
    a = p.parse_args(argv[1:])
    ca = json.load(open(os.path.join(a.a_dir, "comparison.json")))
    cb = json.load(open(os.path.join(a.b_dir, "comparison.json")))
    if ca["seeds"] != cb["seeds"] or ca["splits"] != cb["splits"]:
        raise SystemExit("the two runs differ in seeds or splits")
    la, lb = label(ca, "A"), label(cb, "B")
    print(f"A: {a.a_dir} = {la}\nB: {a.b_dir} = {lb}")
    keys = test_keys(a.a_dir)
    for seed in ca["seeds"]:
        ra = os.path.join(a.a_dir, f"run-seed{seed}")
        rb = os.path.join(a.b_dir, f"run-seed{seed}")
        ha, hb = history(ra), history(rb)
        tl, ts = band(ha, hb, "train_loss")
        vl, vs = band(ha, hb, "validation_loss")
        line = (f"seed {seed}: {len(set(ha) & set(hb))} common evaluations; "
                f"train loss within {100 * tl:.2f} % (worst at step {ts}), "
                f"validation loss within {100 * vl:.2f} % (step {vs}); "
                f"last steps {max(ha)} (A) {max(hb)} (B)")
        xa, xb = answers(ra, keys), answers(rb, keys)
        if xa is not None and xb is not None:
            same = sum(xa[k] == xb.get(k) for k in xa)
            line += f"; same test answer {same} of {len(xa)}"
        print(line)
    acc_a, acc_b = joint(ca), joint(cb)
    fail = 0
    for q in acc_a:
        d = [100 * (y - x) for x, y in zip(acc_a[q], acc_b[q])]
        mean = sum(d) / len(d)
        spread = ""
        if len(d) > 1:
            sd = (sum((x - mean) ** 2 for x in d) / (len(d) - 1)) ** 0.5
            spread = f", sd {sd:.2f}, standard error {sd / len(d) ** 0.5:.2f}"
        print(f"{q}: test accuracy A " + " ".join(f"{x:.3f}" for x in acc_a[q])
              + " | B " + " ".join(f"{y:.3f}" for y in acc_b[q])
              + f" | B - A {mean:+.2f} points{spread} (per seed "
              + " ".join(f"{x:+.2f}" for x in d) + ")")
        fail |= abs(mean) > a.bound
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""The same trained weights scored in the other precision (issue 20, item 3).

    bench/precision_rescore.py DIR [--precision bf16|fp32] [--split test]
                               [--bound POINTS=0.5]

DIR is the --out of `python/clef_example.py TASK ...`: DIR/pkg/package.json
and, per seed of DIR/comparison.json, DIR/run-seed<S>/weights.safetensors with
the scores.jsonl it was scored to in the run's own precision. Each seed's
weights are scored again by `clef score --precision P` (default: the other
one), and the script prints how many of the split's answers (argmax per record
and question) change and each question's accuracy both ways. Training in two
precisions takes two paths (bench/precision_compare.py); this isolates what
the precision of the products alone does to the answers of one model.
Exit 1 when a question's accuracy moves by more than --bound points in any
seed, 0 otherwise. CLEF_BIN names the clef binary (default build/bin/clef).
"""
import argparse
import json
import os
import subprocess
import sys

from precision_compare import argmax_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def labelled(pkg, split):
    """{(record, question): the labelled option id} of the split."""
    man = json.load(open(pkg))
    return {(r["id"], q["id"]): q["options"][q["label"]]
            for r in man["records"] if r["split"] == split
            for q in r["questions"] if q.get("label") is not None}


def accuracy(ans, lab):
    by_q = {}
    for k, a in ans.items():
        hit, n = by_q.get(k[1], (0, 0))
        by_q[k[1]] = (hit + (a == lab[k]), n + 1)
    return {q: hit / n for q, (hit, n) in by_q.items()}


def clef_score(clef, run_dir, pkg, precision):
    """`clef score` of run_dir/weights.safetensors on the package: its
    stdout; exits with clef's message when it fails."""
    out = subprocess.run([clef, "score", "--weights",
                          os.path.join(run_dir, "weights.safetensors"),
                          "--package", pkg, "--precision", precision],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"clef score failed for {run_dir}: "
                         + out.stderr.strip())
    return out.stdout


def main(argv):
    p = argparse.ArgumentParser(prog="precision_rescore.py")
    p.add_argument("dir")
    p.add_argument("--precision", choices=("fp32", "bf16"))
    p.add_argument("--split", default="test")
    p.add_argument("--bound", type=float, default=0.5)
    a = p.parse_args(argv[1:])
    comp = json.load(open(os.path.join(a.dir, "comparison.json")))
    trained = comp.get("train", {}).get("precision", "fp32")
    to = a.precision or ("bf16" if trained == "fp32" else "fp32")
    pkg = os.path.join(a.dir, "pkg", "package.json")
    lab = labelled(pkg, a.split)
    if not lab:
        raise SystemExit(f"{pkg}: no labelled records in split {a.split}")
    clef = os.environ.get("CLEF_BIN", os.path.join(ROOT, "build", "bin", "clef"))
    print(f"{a.dir}: trained in {trained}, scored again in {to}, "
          f"{a.split} split")
    fail, changed, total = 0, 0, 0
    for seed in comp["seeds"]:
        rd = os.path.join(a.dir, f"run-seed{seed}")
        with open(os.path.join(rd, "scores.jsonl")) as f:
            before = argmax_answers(f, lab)
        after = argmax_answers(
            clef_score(clef, rd, pkg, to).splitlines(), lab)
        if after.keys() != before.keys():
            raise SystemExit(f"seed {seed}: the two scorings cover "
                             "different records")
        diff = sum(before[k] != after[k] for k in before)
        changed, total = changed + diff, total + len(before)
        acc0, acc1 = accuracy(before, lab), accuracy(after, lab)
        parts = []
        for q in acc0:
            d = 100 * (acc1[q] - acc0[q])
            parts.append(f"{q} {acc0[q]:.4f} -> {acc1[q]:.4f} ({d:+.2f})")
            fail |= abs(d) > a.bound
        print(f"seed {seed}: {diff} of {len(before)} answers change; "
              + "; ".join(parts))
    print(f"all seeds: {changed} of {total} answers change")
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

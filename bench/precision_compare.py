#!/usr/bin/env python3
"""fp32 against bf16 training on the same example (issue 20, item 3).

    bench/precision_compare.py FP32_DIR BF16_DIR

Each DIR is the --out of `python/clef_example.py TASK --precision P` with the
same task, seeds and settings. Prints, per seed, how far the bf16 run's
history (train loss and validation loss at every evaluation, HISTORY in
result.json) is from the fp32 run's, as the largest |bf16 - fp32| / fp32
over the steps both evaluated, and the joint head's held-out test accuracy
per question for both precisions (the test split is scored once per run).
Exit 1 when a final test accuracy differs by more than 0.5 points (the
issue's bound) on average over the seeds, 0 otherwise.
"""
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


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    c32 = json.load(open(os.path.join(argv[1], "comparison.json")))
    c16 = json.load(open(os.path.join(argv[2], "comparison.json")))
    if c32["seeds"] != c16["seeds"] or c32["splits"] != c16["splits"]:
        raise SystemExit("the two runs differ in seeds or splits")
    for seed in c32["seeds"]:
        h32 = history(os.path.join(argv[1], f"run-seed{seed}"))
        h16 = history(os.path.join(argv[2], f"run-seed{seed}"))
        tl, ts = band(h32, h16, "train_loss")
        vl, vs = band(h32, h16, "validation_loss")
        print(f"seed {seed}: {len(set(h32) & set(h16))} common evaluations; "
              f"train loss within {100 * tl:.2f} % (worst at step {ts}), "
              f"validation loss within {100 * vl:.2f} % (step {vs}); "
              f"last steps {max(h32)} (fp32) {max(h16)} (bf16)")
    a32, a16 = joint(c32), joint(c16)
    fail = 0
    for q in a32:
        d = [100 * (y - x) for x, y in zip(a32[q], a16[q])]
        mean = sum(d) / len(d)
        print(f"{q}: test accuracy fp32 " + " ".join(f"{x:.3f}" for x in a32[q])
              + " | bf16 " + " ".join(f"{y:.3f}" for y in a16[q])
              + f" | bf16 - fp32 {mean:+.2f} points (per seed "
              + " ".join(f"{x:+.1f}" for x in d) + ")")
        fail |= abs(mean) > 0.5
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

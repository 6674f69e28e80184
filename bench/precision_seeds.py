#!/usr/bin/env python3
"""Many seeds of one example in fp32 and bf16, paired (issue 20, item 3).

    bench/precision_seeds.py DIR --seeds N [--seed S=1] [--parallel P]
        [--grid precision=fp32,bf16] [--bound POINTS=0.5] [--split test]
        [--learned QUESTION=ACCURACY ...]
        [--epochs 60 --batch 8 --lr 1e-3 --eps 1e-8 --max-grad-norm 1
         --patience 10]

DIR is the --out of `python/clef_example.py TASK ...` (DIR/pkg/package.json
is reused, nothing is captured again). One `clef sweep` over that package
trains every seed S..S+N-1 once per precision with the example's recipe
(bucketed batches, one evaluation per epoch, early stopping on validation
loss, best weights kept): the runs of a seed share the initial weights and
the order of the batches, so what differs between them is the precision of
the products alone. The sweep is resumable, and DIR/seeds/ keeps it.

Each run's answers on the split (argmax per record and question) are those
its result.json holds: every record scored once, after training, with the
weights the run exported, in its own precision. For the first --check seeds
(default 1) the script scores the exported weights again with `clef score`
and stops if a single answer differs. Per question the script prints the
mean accuracy of each precision, the paired difference B - A in points
(mean, sd, standard error, a 95 % interval by the t distribution), the
per-seed differences, and how many of the split's answers two runs of a seed
share; DIR/seeds/summary.json holds the same. Exit 1 when a question's
interval lies wholly outside +-bound (verdict "beyond": the data shows a
difference larger than the bound), 0 otherwise; the verdict printed per
question is "within" only when the interval lies inside +-bound, and
"unresolved" when it straddles a limit (too few seeds for the bound).

--learned Q=ACC (repeatable) asks when question Q was learned: per run, the
first evaluation whose validation accuracy on Q reaches ACC (from the run's
history; the test split is not read), paired between the runs of a seed,
and how many runs exported weights from before that step (early stopping's
best step earlier, or Q never reached ACC): with the seeds that did so in
one precision only and a two-sided sign test over them.
CLEF_BIN names the clef binary (default build/bin/clef).
"""
import argparse
import json
import math
import os
import subprocess
import sys

from precision_compare import argmax_answers, band
from precision_rescore import accuracy, clef_score, labelled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from clef_example import add_recipe_args, recipe_flags  # noqa: E402

# Two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom;
# above 30 the normal 1.96 is within 4 % of it.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
        2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
        2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
        2.048, 2.045, 2.042]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df


def clef_bin():
    return os.environ.get("CLEF_BIN", os.path.join(ROOT, "build", "bin",
                                                   "clef"))


def sweep(a, pkg, sweep_dir, train_n, axis, values):
    """Runs (or resumes) the sweep, seed outermost so that both runs of a
    seed finish together: stopped part way, it leaves whole pairs."""
    os.makedirs(a.dir, exist_ok=True)
    runs_file = os.path.join(a.dir, "seeds-runs.json")
    with open(runs_file + ".tmp", "w") as f:
        json.dump([{"seed": s, axis: v} for s in range(a.seed,
                                                       a.seed + a.seeds)
                   for v in values], f)
    os.replace(runs_file + ".tmp", runs_file)
    cmd = [clef_bin(), "sweep", "--package", pkg, "--sweep-dir", sweep_dir,
           "--runs", runs_file, *recipe_flags(a),
           "--eval-every", str(max(1, train_n // a.batch)), "--quiet"]
    if a.parallel:
        cmd += ["--parallel", str(a.parallel)]
    if a.patience > 0:
        cmd += ["--patience", str(a.patience)]
    print(" ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode:
        raise SystemExit("clef sweep failed (its runs are kept; the same "
                         "command resumes)")


def finished_runs(sweep_dir, lab):
    """[(settings, run)] of the sweep's runs that finished (result.json with
    status ok and the weights beside it), run as run_record makes it."""
    with open(os.path.join(sweep_dir, "sweep-spec.json")) as f:
        spec = json.load(f)
    out = []
    for r in spec["runs"]:
        rd = os.path.join(sweep_dir, "runs", r["name"])
        try:
            with open(os.path.join(rd, "result.json")) as f:
                res = json.load(f)
        except (OSError, ValueError):
            continue
        if res.get("status") == "ok" and os.path.exists(
                os.path.join(rd, "weights.safetensors")):
            out.append((r["settings"], run_record(rd, res, lab)))
    return out


def run_record(run_dir, res, lab):
    """What the analysis uses of a run's result.json res, read once: its
    answers on the split ({(record, question): predicted option}, for the
    keys of lab), its history by step and its early stopping."""
    return {"dir": run_dir,
            "answers": {(r["id"], q["id"]): q["predicted"]
                        for r in res["records"] for q in r["questions"]
                        if (r["id"], q["id"]) in lab},
            "history": {e["step"]: e for e in res["history"]},
            "es": early_stopping(res)}


def early_stopping(res):
    """result.json's early_stopping, or the last evaluation's validation
    loss as best_value when the run kept its last weights."""
    es = res.get("early_stopping")
    if es and es.get("best_step") is not None:
        return es
    last = res["history"][-1]
    return {"metric": "val_loss (last)", "best_value":
            last["validation_loss"], "best_step": last["step"]}


def learned_step(h, q, level):
    """The first evaluation step of history h whose validation accuracy on
    question q reaches level, None if none did."""
    for step in sorted(h):
        if h[step]["validation_accuracy_per_question"][q] >= level:
            return step
    return None


def sign_test(k, n):
    """Two-sided exact binomial p of k or fewer (or as many more) of n
    discordant pairs going one way at even odds."""
    if n == 0:
        return 1.0
    lo = min(k, n - k)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(lo + 1)) / 2 ** n)


def learning(q, level, seeds, by, values):
    """When q reached level in each run, paired; runs that exported weights
    from before it. by: {value: {seed: run_record}}."""
    step = {v: [learned_step(by[v][s]["history"], q, level) for s in seeds]
            for v in values}
    before = {v: [s for s, st in zip(seeds, step[v])
                  if st is None or by[v][s]["es"]["best_step"] < st]
              for v in values}
    both = [(x, y) for x, y in zip(*(step[v] for v in values))
            if x is not None and y is not None]
    A, B = values
    only = {A: sorted(set(before[A]) - set(before[B])),
            B: sorted(set(before[B]) - set(before[A]))}
    n = len(only[A]) + len(only[B])
    return {"question": q, "level": level, "step": step,
            "never": {v: sum(x is None for x in step[v]) for v in values},
            "difference": stats([y - x for x, y in both]) if both else None,
            "exported_before": before, "only": only,
            "sign_test_p": sign_test(len(only[A]), n)}


def ci_text(st, fmt):
    """" (95 % interval LO to HI)" of stats st, each bound in format fmt, or
    "" with one seed."""
    if "ci95" not in st:
        return ""
    lo, hi = (format(x, fmt) for x in st["ci95"])
    return f" (95 % interval {lo} to {hi})"


def st_mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def print_learning(L, A, B):
    q, lv = L["question"], L["level"]
    print(f"learning {q} (validation accuracy >= {lv:g}):")
    st = L["difference"]
    if st:
        line = (f"  first reached at step {A} {st_mean(L['step'][A]):.0f}, "
                f"{B} {st_mean(L['step'][B]):.0f} (means); paired over "
                f"{st['n']} seeds B - A {st['mean']:+.0f} steps"
                + ci_text(st, "+.0f"))
        print(line + f"; B later in {st['above']} seeds, earlier in "
              f"{st['below']}")
    print(f"  never reached: {A} {L['never'][A]}, {B} {L['never'][B]}")
    fmt = lambda s: ", ".join(map(str, s)) or "none"  # noqa: E731
    print(f"  weights exported before it: {A} {len(L['exported_before'][A])}"
          f" (seeds {fmt(L['exported_before'][A])}), {B} "
          f"{len(L['exported_before'][B])} (seeds "
          f"{fmt(L['exported_before'][B])}); in one precision only: {A} "
          f"{len(L['only'][A])}, {B} {len(L['only'][B])}, sign test p = "
          f"{L['sign_test_p']:.3g}")


def scored(run_dir, pkg, precision, lab):
    """argmax answers of the run's weights on the split's records by
    `clef score`, kept in run_dir/scores.jsonl."""
    path = os.path.join(run_dir, "scores.jsonl")
    if not os.path.exists(path):
        text = clef_score(clef_bin(), run_dir, pkg, precision)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    with open(path) as f:
        return argmax_answers(f, lab)


def stats(d):
    """Mean, sd, standard error and 95 % interval (t) of the differences d,
    their median and how many are above and below zero."""
    n = len(d)
    mean = sum(d) / n
    srt = sorted(d)
    med = (srt[(n - 1) // 2] + srt[n // 2]) / 2
    signs = {"above": sum(x > 0 for x in d), "below": sum(x < 0 for x in d)}
    if n < 2:
        return {"n": n, "mean": mean, "median": med, **signs}
    sd = (sum((x - mean) ** 2 for x in d) / (n - 1)) ** 0.5
    se = sd / n ** 0.5
    h = t975(n - 1) * se
    return {"n": n, "mean": mean, "sd": sd, "se": se,
            "ci95": [mean - h, mean + h], "median": med, **signs}


def verdict(st, bound):
    """What the 95 % interval says of |B - A| <= bound: "within" (the
    interval lies inside [-bound, bound]), "beyond" (wholly outside it) or
    "unresolved" (it straddles a limit, or there is one seed)."""
    if "ci95" not in st:
        return "unresolved"
    lo, hi = st["ci95"]
    if lo > bound or hi < -bound:
        return "beyond"
    return "within" if -bound <= lo and hi <= bound else "unresolved"


def main(argv):
    p = argparse.ArgumentParser(prog="precision_seeds.py")
    p.add_argument("dir")
    p.add_argument("--seeds", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--parallel", type=int, default=0)
    p.add_argument("--grid", default="precision=fp32,bf16")
    p.add_argument("--bound", type=float, default=0.5)
    p.add_argument("--split", default="test")
    add_recipe_args(p)  # python/clef_example.py's recipe
    p.add_argument("--learned", action="append", default=[],
                   metavar="QUESTION=ACCURACY",
                   help="when the question's validation accuracy first "
                   "reached ACCURACY, paired (repeatable)")
    p.add_argument("--check", type=int, default=1,
                   help="seeds whose runs are scored again by clef score")
    p.add_argument("--no-run", action="store_true",
                   help="only score and compare the runs finished so far")
    a = p.parse_args(argv[1:])
    learned = []
    for spec in a.learned:
        q, _, lv = spec.partition("=")
        try:
            learned.append((q, float(lv)))
        except ValueError:
            raise SystemExit(f"--learned {spec}: QUESTION=ACCURACY, with "
                             "ACCURACY a number")
    pkg = os.path.join(a.dir, "pkg", "package.json")
    man = json.load(open(pkg))
    train_n = sum(r["split"] == "train" for r in man["records"])
    lab = labelled(pkg, a.split)
    if not lab:
        raise SystemExit(f"{pkg}: no labelled records in split {a.split}")
    qs = sorted({k[1] for k in lab})
    for q, _ in learned:
        if q not in qs:
            raise SystemExit(f"--learned {q}: no such question (the "
                             f"package has {', '.join(qs)})")
    sweep_dir = os.path.join(a.dir, "seeds")
    axis, _, values = a.grid.partition("=")
    values = values.split(",")
    if len(values) != 2 or axis == "seed":
        raise SystemExit("--grid: one axis other than seed, two values")
    if not a.no_run:
        sweep(a, pkg, sweep_dir, train_n, axis, values)

    # {value: {seed: run_record}}; precision is the axis or fp32
    by = {v: {} for v in values}
    prec = {}
    for s, run in finished_runs(sweep_dir, lab):
        v, seed = str(s[axis]), int(s["seed"])
        by[v][seed] = run
        prec[(v, seed)] = s.get("precision", "fp32")
    seeds = sorted(set(by[values[0]]) & set(by[values[1]]))
    if not seeds:
        raise SystemExit(f"{sweep_dir}: no seed has both runs finished")
    for seed in seeds[:a.check]:
        for v in values:
            ans, rd = by[v][seed]["answers"], by[v][seed]["dir"]
            again = scored(rd, pkg, prec[(v, seed)], lab)
            diff = sum(again[k] != ans[k] for k in ans)
            if diff or again.keys() != ans.keys():
                raise SystemExit(f"{rd}: clef score gives {diff} answers "
                                 "other than its result.json")
    A, B = values
    print(f"{a.dir}: {len(seeds)} seeds, {axis} {A} (A) against {B} (B), "
          f"{a.split} split ({len(lab)} answers per run; those of "
          f"{min(a.check, len(seeds))} seeds checked against clef score)")
    summary = {"axis": axis, "a": A, "b": B, "seeds": seeds,
               "split": a.split, "bound": a.bound, "questions": {}}
    fail = 0
    for q in qs:
        keys = {k for k in lab if k[1] == q}
        acc = {v: [accuracy({k: by[v][s]["answers"][k] for k in keys}, lab)[q]
                   for s in seeds] for v in values}
        d = [100 * (y - x) for x, y in zip(acc[A], acc[B])]
        st = stats(d)
        same = [sum(by[A][s]["answers"][k] == by[B][s]["answers"][k]
                    for k in keys)
                for s in seeds]
        summary["questions"][q] = {
            "n": len(keys), "accuracy": acc, "b_minus_a_points": d,
            "difference": st, "same_answers": same,
            "mean_accuracy": {v: sum(acc[v]) / len(seeds) for v in values}}
        line = (f"{q} (n = {len(keys)}): mean accuracy {A} "
                f"{sum(acc[A]) / len(seeds):.4f}, {B} "
                f"{sum(acc[B]) / len(seeds):.4f}; B - A {st['mean']:+.2f} "
                "points")
        if "sd" in st:
            lo, hi = st["ci95"]
            line += (f" (sd {st['sd']:.2f}, standard error {st['se']:.2f}, "
                     f"95 % interval {lo:+.2f} to {hi:+.2f})")
        v = verdict(st, a.bound)
        st["verdict"] = v
        fail |= v == "beyond"
        print(line + f"; |B - A| <= {a.bound:g}: {v}")
        print(f"  per seed: " + " ".join(f"{x:+.1f}" for x in d))
        print(f"  median {st['median']:+.2f} points; B above A in "
              f"{st['above']} seeds, below in {st['below']}, level in "
              f"{len(d) - st['above'] - st['below']}")
        print(f"  same answers per seed: {min(same)}-{max(same)} of "
              f"{len(keys)} (mean {sum(same) / len(same):.1f})")
    gaps = {key: [band(by[A][s]["history"], by[B][s]["history"], key)[0]
                  for s in seeds]
            for key in ("train_loss", "validation_loss")}
    summary["loss_gap"] = gaps
    for key, g in gaps.items():
        print(f"{key.replace('_', ' ')}: B within {100 * min(g):.2f}-"
              f"{100 * max(g):.2f} % of A (largest |B - A| / A over the "
              "evaluations both made, per seed)")
    # the early-stopping metric and where it was reached, paired
    es = {v: [by[v][s]["es"] for s in seeds] for v in values}
    for key, unit in (("best_value", ""), ("best_step", " steps")):
        d = [y[key] - x[key] for x, y in zip(es[A], es[B])]
        st = stats(d)
        summary["early_stopping_" + key] = {
            "a": [x[key] for x in es[A]], "b": [y[key] for y in es[B]],
            "difference": st}
        mean = {v: sum(e[key] for e in es[v]) / len(seeds) for v in values}
        line = (f"early stopping's {key.replace('_', ' ')} ({es[A][0]['metric']}"
                f"): mean {A} {mean[A]:.4g}, {B} {mean[B]:.4g}{unit}; B - A "
                f"{st['mean']:+.4g}" + ci_text(st, "+.4g"))
        print(line)
    summary["learned"] = []
    for q, lv in learned:
        L = learning(q, lv, seeds, by, values)
        summary["learned"].append(L)
        print_learning(L, A, B)
    tmp = os.path.join(sweep_dir, "summary.json.tmp")
    with open(tmp, "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(tmp, os.path.join(sweep_dir, "summary.json"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

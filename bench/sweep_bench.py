#!/usr/bin/env python3
"""clef sweep against the same runs as separate `clef train` processes.

    bench/sweep_bench.py [--bin build/bin] [--case seed|mid|both] [--out FILE.json]

seed: the seed's long experiment (fixture: 192 train + 64 validation
records, 96 positions, d = w = 8), 40 epochs, batch 1, 16 runs (lr × weight
decay × label smoothing): the 16 `clef train` commands one after another
(default threads) against one `clef sweep` (default --parallel).
mid: d = 1024, w = 512, T = 256, 64 train records, 2 epochs, 4 runs: wall
time and peak RSS of the sweep (one process) against the largest and the sum
of the 4 `clef train` processes' peak RSS (run one after another).
Prints one line per measurement and the ratios; checks that every run's
weights are the same bytes both ways.
"""
import argparse, hashlib, json, os, resource, shutil, subprocess, sys, tempfile, time

SEED_FIXTURE = ["--records", "192", "--validation", "64", "--positions", "96", "--seed", "11"]
SEED_GRID = [("lr", ["3e-4", "1e-3", "3e-3", "1e-2"]), ("weight-decay", ["0", "0.01"]),
             ("label-smoothing", ["0", "0.1"])]
SEED_SHARED = ["--epochs", "40", "--batch", "1"]
MID_FIXTURE = ["--records", "64", "--validation", "8", "--positions", "256", "--hidden", "1024",
               "--width", "512", "--heads", "8", "--feedforward", "2048", "--routing-layers", "2",
               "--layers", "4", "--questions", "16", "--options", "4", "--seed", "12"]
MID_GRID = [("lr", ["3e-4", "1e-3"]), ("weight-decay", ["0", "0.01"])]
MID_SHARED = ["--epochs", "2", "--batch", "1"]
ABBR = {"lr": "lr", "weight-decay": "wd", "label-smoothing": "ls"}


def timed(cmd, env=None):
    """Runs cmd; returns (wall seconds, peak RSS of the process in MiB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    return wall, ru.ru_maxrss / 1024.0


def points(grid):
    out = [[]]
    for key, vals in grid:
        out = [p + [(key, v)] for p in out for v in vals]
    return out


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def case(name, binary, work, fixture, grid, shared):
    clef = os.path.join(binary, "clef")
    pkg = os.path.join(work, name + "-pkg")
    subprocess.run([clef, "fixture", "--out", pkg] + fixture, check=True,
                   stdout=subprocess.DEVNULL)
    manifest = os.path.join(pkg, "package.json")
    runs = points(grid)
    t_train, rss, alone = 0.0, [], {}
    for p in runs:
        rd = os.path.join(work, name + "-train-" + str(len(alone)))
        flags = [f"--{k}={v}" for k, v in p]
        w, r = timed([clef, "train", "--quiet", "--package", manifest, "--run-dir", rd]
                     + shared + flags)
        t_train += w
        rss.append(r)
        run_name = ",".join(f"{ABBR.get(k, k)}={v}" for k, v in p)
        alone[run_name] = sha(os.path.join(rd, "weights.safetensors"))
    sd = os.path.join(work, name + "-sweep")
    gflags = [f"--grid={k}=" + ",".join(v) for k, v in grid]
    t_sweep, rss_sweep = timed([clef, "sweep", "--package", manifest, "--sweep-dir", sd]
                               + gflags + shared)
    same = all(sha(os.path.join(sd, "runs", n, "weights.safetensors")) == h
               for n, h in alone.items())
    res = {"case": name, "runs": len(runs), "train_wall_s": t_train, "sweep_wall_s": t_sweep,
           "speedup": t_train / t_sweep, "train_peak_rss_mb_max": max(rss),
           "train_peak_rss_mb_sum": sum(rss), "sweep_peak_rss_mb": rss_sweep,
           "weights_identical": same}
    print(f"{name}: {len(runs)} runs: clef train x{len(runs)} one after another "
          f"{t_train:.2f} s, clef sweep {t_sweep:.2f} s: {t_train / t_sweep:.2f}x; peak RSS "
          f"train max {max(rss):.0f} MiB (sum {sum(rss):.0f}), sweep {rss_sweep:.0f} MiB; "
          f"weights identical: {same}")
    return res


def run_cases(prefix, cases, names, out_path):
    """Runs cases[name](work) for the chosen names ("both": all) in one temp
    dir, writes their results to out_path (if any); 1 when a case's weights
    were not identical both ways."""
    work = tempfile.mkdtemp(prefix=prefix)
    out = []
    try:
        for name, fn in cases.items():
            if names in (name, "both"):
                out.append(fn(work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if out_path:
        json.dump(out, open(out_path, "w"), indent=2)
    return 0 if all(r["weights_identical"] for r in out) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--case", default="both", choices=["seed", "mid", "both"])
    ap.add_argument("--out")
    a = ap.parse_args()
    return run_cases("clef-sweep-bench-", {
        "seed": lambda w: case("seed", a.bin, w, SEED_FIXTURE, SEED_GRID, SEED_SHARED),
        "mid": lambda w: case("mid", a.bin, w, MID_FIXTURE, MID_GRID, MID_SHARED),
    }, a.case, a.out)


if __name__ == "__main__":
    sys.exit(main())

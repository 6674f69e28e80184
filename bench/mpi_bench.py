#!/usr/bin/env python3
"""clef under mpirun against one process (issue 21), on this host.

    bench/mpi_bench.py [--bin build/bin] [--case dp|sweep|both] [--out FILE.json]

dp: mid geometry (d = 1024, w = 512, T = 256; the mid package of
sweep_bench.py), batch 8, 32 train records, 2 epochs (8 updates): updates/s of
training (result.json timing.updates_per_s, load and evaluation excluded)
and the peak RSS of every rank, for 1 process x 1 thread, 1 process x 2
threads (plain `clef train`), and 1 rank x 2 threads, 2 ranks x 1 thread
(`mpirun -np N clef train`, data-parallel, one-record shards: the default),
and 2 ranks x 1 thread with --shard-records 4 (one packed pass per rank).
Checks that the 1- and 2-rank weights are the same bytes.
sweep: the seed's long experiment (16 runs, sweep_bench.py's seed case):
`mpirun -np 2 clef sweep --parallel 1` against `clef sweep --parallel 2`, wall
time, and every run's weights the same bytes both ways.
"""
import argparse, json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_bench import (MID_FIXTURE, SEED_FIXTURE, SEED_GRID, SEED_SHARED,  # noqa: E402
                         run_cases, sha, timed)

MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def fixture(clef, out, flags):
    subprocess.run([clef, "fixture", "--out", out] + flags, check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(out, "package.json")


def with_records(flags, n):
    out = list(flags)
    out[out.index("--records") + 1] = str(n)
    return out


def dp_case(clef, work):
    manifest = fixture(clef, os.path.join(work, "mid-pkg"), with_records(MID_FIXTURE, 32))
    train = ["train", "--quiet", "--package", manifest, "--epochs", "2", "--batch", "8"]
    configs = [("1 process x 1 thread", 0, 1, 0), ("1 process x 2 threads", 0, 2, 0),
               ("1 rank x 2 threads", 1, 2, 0), ("2 ranks x 1 thread", 2, 1, 0),
               ("2 ranks x 1 thread, --shard-records 4", 2, 1, 4)]
    res = []
    for name, ranks, threads, shard in configs:
        rd = os.path.join(work, f"dp-{ranks}-{threads}-{shard}")
        cmd = [clef] + train + ["--run-dir", rd, "--threads", str(threads)]
        if shard:
            cmd += ["--shard-records", str(shard)]
        if ranks:
            cmd = MPIRUN + ["-np", str(ranks)] + cmd
        os.sync()
        wall, rss = timed(cmd, ENV)
        r = json.load(open(os.path.join(rd, "result.json")))
        per_rank = (r.get("data_parallel") or {}).get("peak_rss_mb") or [rss]
        row = {"config": name, "ranks": ranks or 1, "threads": threads,
               "updates": r["completed_steps"], "updates_per_s": r["timing"]["updates_per_s"],
               "wall_s": wall, "peak_rss_mb_per_rank": per_rank,
               "weights_sha256": sha(os.path.join(rd, "weights.safetensors"))}
        print(f"dp: {name}: {row['updates_per_s']:.3f} upd/s ({row['updates']} updates, "
              f"{wall:.1f} s wall), peak RSS per rank "
              + ", ".join(f"{x:.0f}" for x in per_rank) + " MiB", flush=True)
        res.append(row)
    same = res[2]["weights_sha256"] == res[3]["weights_sha256"]
    print(f"dp: 2 ranks / 1 rank x 2 threads: "
          f"{res[3]['updates_per_s'] / res[2]['updates_per_s']:.2f}x; "
          f"2 ranks / 1 process x 2 threads: "
          f"{res[3]['updates_per_s'] / res[1]['updates_per_s']:.2f}x; "
          f"2 ranks, shards of 4 / 1 process x 2 threads: "
          f"{res[4]['updates_per_s'] / res[1]['updates_per_s']:.2f}x; "
          f"1- and 2-rank weights identical: {same}")
    return {"case": "dp", "runs": res, "weights_identical": same}


def sweep_case(clef, work):
    manifest = fixture(clef, os.path.join(work, "seed-pkg"), SEED_FIXTURE)
    grid = [f"--grid={k}=" + ",".join(v) for k, v in SEED_GRID]
    sweep = [clef, "sweep", "--package", manifest] + grid + SEED_SHARED
    one = os.path.join(work, "sweep-1")
    two = os.path.join(work, "sweep-2")
    os.sync()  # the dp case's gigabytes in writeback would slow the runs' fsyncs
    t_one, rss_one = timed(sweep + ["--sweep-dir", one, "--parallel", "2"], ENV)
    os.sync()
    t_two, rss_two = timed(MPIRUN + ["-np", "2"] + sweep + ["--sweep-dir", two,
                                                             "--parallel", "1"], ENV)
    runs = sorted(os.listdir(os.path.join(one, "runs")))
    same = len(runs) == 16 and all(
        sha(os.path.join(one, "runs", n, "weights.safetensors"))
        == sha(os.path.join(two, "runs", n, "weights.safetensors")) for n in runs)
    print(f"sweep: 16 runs: 1 process --parallel 2 {t_one:.2f} s, 2 ranks --parallel 1 "
          f"{t_two:.2f} s: {t_one / t_two:.2f}x; weights identical: {same}")
    return {"case": "sweep", "one_process_s": t_one, "two_ranks_s": t_two,
            "ratio": t_one / t_two, "weights_identical": same}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--case", default="both", choices=["dp", "sweep", "both"])
    ap.add_argument("--out")
    a = ap.parse_args()
    clef = os.path.abspath(os.path.join(a.bin, "clef"))
    return run_cases("clef-mpi-bench-", {"dp": lambda w: dp_case(clef, w),
                                         "sweep": lambda w: sweep_case(clef, w)},
                     a.case, a.out)


if __name__ == "__main__":
    sys.exit(main())

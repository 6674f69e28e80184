#!/usr/bin/env python3
"""trampolines.py CLEF_BENCH: every op of `auto` through its trampoline.

Writes a tuning file (in a temporary XDG_CACHE_HOME, at the path auto reads
for this CPU) whose choices alternate per shape class between the scalar
reference and the best hand-written backend, then runs the parity matrix
for `auto`. Fails unless every op's kernel name is a per-class composite
(so the trampoline ran) and every row passed. Last line: the counts."""
import json, os, re, subprocess, sys, tempfile

bench = sys.argv[1]
env = dict(os.environ, CLEF_VERBOSE="1")
with tempfile.TemporaryDirectory() as tmp:
    env["XDG_CACHE_HOME"] = tmp
    lst = subprocess.run([bench, "--list"], env=env, capture_output=True, text=True)
    avail = re.findall(r"^  (\w+)\s+available$", lst.stdout, re.M)
    ops = re.search(r"^ops:\n((?:  .*\n)+)", lst.stdout, re.M)
    other = next((b for b in ("avx512", "avx2", "neon") if b in avail), None)
    if other is None:
        print("SKIP: no hand-written SIMD backend runs here (%s)" % ", ".join(avail))
        print("0 passed, 0 failed, 1 skipped")
        sys.exit(0)
    m = re.search(r"no tuning file (\S+/tune-([0-9a-f]{16})\.json)", lst.stderr)
    if not m:
        sys.exit("cannot find auto's tuning-file path in clef-bench --list's "
                 "CLEF_VERBOSE output:\n" + lst.stderr[-2000:])
    path, cpu_hash = m.group(1), m.group(2)
    names = re.findall(r"^\s+(\w+)", ops.group(1), re.M) if ops else []
    if len(names) < 20:
        sys.exit("cannot read the op list from clef-bench --list:\n" + lst.stdout)
    # the bf16 GEMMs: a bf16 backend's, else the fp32 GEMMs' on widened operands
    bf16 = next((b for b in ("amx", "avx512_bf16", "avx512", "avx2", "neon")
                 if b in avail), None)
    def other_of(op):
        return bf16 if op.startswith("gemm_bf16_") else other
    skipped = [op for op in names if other_of(op) is None]
    names = [op for op in names if other_of(op) is not None]
    doc = {"format": "clef-tune/1", "cpu": "trampoline test", "cpu_hash": cpu_hash,
           "blis_arch": "-", "threads": 1,
           "choices": {op: {c: {"backend": b, "time_s": 0.0} for c, b in
                            {"small": other_of(op), "medium": "scalar",
                             "large": other_of(op)}.items()}
                       for op in names}}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)
    out = os.path.join(tmp, "auto.json")
    run = subprocess.run([bench, "--backend", "auto", "--shape", "tiny,fixture,edge",
                          "--no-time", "--json", out], env=env, capture_output=True, text=True)
    sys.stdout.write(run.stdout[-3000:])
    rows = json.load(open(out))["rows"]
    want = "auto(small %s, medium scalar, large %s)" % (other, other)
    passed = failed = 0
    for op in skipped:
        print("SKIP %s: no bf16 backend runs here" % op)
    for op in names:  # one result per op: all its rows composite and PASS
        w = other_of(op)
        want_op = "auto(small %s, medium scalar, large %s)" % (w, w)
        mine = [r for r in rows if r["op"] == op]
        why = "no parity row" if not mine else ""
        for r in mine:
            if r["kernel"] != want_op:
                why = "%s: kernel %r, want %r" % (r["shape"], r["kernel"], want_op)
            elif r["verdict"] != "PASS":
                why = "%s: %s %s" % (r["shape"], r["verdict"], r.get("reason", ""))
            if why:
                break
        if why:
            print("FAIL %s %s" % (op, why))
        passed, failed = passed + (not why), failed + bool(why)
    if run.returncode != 0 and failed == 0:
        print("FAIL clef-bench exited %d" % run.returncode)
        failed = 1
    print("trampolines: %d ops, %d rows, via %s" % (len(names), len(rows), want))
    print("%d passed, %d failed, %d skipped" % (passed, failed, len(skipped)))
    sys.exit(1 if failed else 0)

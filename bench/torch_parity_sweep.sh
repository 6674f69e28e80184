#!/usr/bin/env bash
# clef score against bench/torch_head.py on random fixture geometries, per
# record (docs/ARCHITECTURE.md, "Checks against references"): fp32, and bf16
# with the memories projected (also on the scalar, avx2 and oneDNN tables)
# and absorbed; figures in FLT_EPSILON of each record's logit scale. Then
# one training update in each precision against torch_head.py grads, per
# tensor.
# Usage: bench/torch_parity_sweep.sh [SEED=5] [GEOMETRIES=6]  (OUT=DIR keeps
# the files; needs python3-torch)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
C=${CLEF:-$ROOT/build/bin/clef}; TH=$ROOT/bench/torch_head.py
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT" && cd "$OUT" || exit 2
RANDOM=${1:-5}
for it in $(seq 1 ${2:-6}); do
  h=$((RANDOM % 4 + 1)); w=$(( (RANDOM % 24 + 4) * h )); d=$((RANDOM % 300 + 3)); f=$((RANDOM % 200 + 3))
  T=$((RANDOM % 120 + 3)); L=$((RANDOM % 2 + 1)); R=$((RANDOM % 2 + 1)); Q=$((RANDOM % 3 + 1)); N=$((RANDOM % 4 + 1))
  g="d=$d w=$w h=$h f=$f T=$T R=$R L=$L Q=$Q N=$N"
  rm -rf p$it r$it; "$C" fixture --out p$it --records 5 --validation 1 --hidden $d --width $w --heads $h --feedforward $f --positions $T --routing-layers $R --layers $L --questions $Q --options $N --seed $it >/dev/null 2>&1 || { echo "fixture fail $g"; continue; }
  "$C" train --package p$it/package.json --run-dir r$it --epochs 2 --lr 0.01 --quiet >/dev/null 2>&1 || { echo "train fail $g"; continue; }
  W=r$it/weights.safetensors
  /usr/bin/python3 "$TH" logits --weights $W --package p$it/package.json > t32-$it.json
  /usr/bin/python3 "$TH" logits --weights $W --package p$it/package.json --precision bf16 > t16-$it.json
  CLEF_MEMORY_ATTENTION=project "$C" score --weights $W --package p$it/package.json > c32-$it.jsonl
  CLEF_MEMORY_ATTENTION=project "$C" score --weights $W --package p$it/package.json --precision bf16 > c16p-$it.jsonl
  CLEF_MEMORY_ATTENTION=absorb "$C" score --weights $W --package p$it/package.json --precision bf16 > c16a-$it.jsonl
  for be in scalar avx2 onednn; do CLEF_MEMORY_ATTENTION=project "$C" score --weights $W --package p$it/package.json --precision bf16 --backend $be > c16p-$be-$it.jsonl 2>/dev/null; done
  /usr/bin/python3 - "$g" $it <<'PY'
import json, sys
g, it = sys.argv[1], sys.argv[2]
def clef(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        out.setdefault(r["record"], []).extend(s["logit"] for s in r["scores"])
    return out
def per_record(c, t):  # FLT_EPSILON of each record's scale
    return [max(abs(a - b) for a, b in zip(c[r], t[r])) /
            max(1.0, max(abs(x) for x in t[r])) / 2**-23 for r in t]
def cell(name, c, t):
    e = per_record(c, t)
    return f"{name} {max(e):.1f} ({sum(x > 256 for x in e)}/{len(e)})"
t32, t16 = json.load(open(f"t32-{it}.json")), json.load(open(f"t16-{it}.json"))
row = [cell("fp32", clef(f"c32-{it}.jsonl"), t32),
       cell("bf16 projected", clef(f"c16p-{it}.jsonl"), t16),
       cell("absorbed", clef(f"c16a-{it}.jsonl"), t16),
       cell("bf16 vs fp32 model", clef(f"c16p-{it}.jsonl"), t32)]
for be in ("scalar", "avx2", "onednn"):
    try:
        row.append(cell(be, clef(f"c16p-{be}-{it}.jsonl"), t16))
    except (OSError, KeyError, ValueError):
        row.append(f"{be}: no table")
print(g, "|", ", ".join(row), "| worst FLT_EPSILON (records past 256)")
PY
  # one AdamW step of the 5 train records at lr 1000, eps 1, no decay:
  # W − W1 = 1000 g/(|g| + 1) per element (tests/test_torch_parity.c)
  for pr in fp32 bf16; do
    rm -rf u$pr-$it
    CLEF_MEMORY_ATTENTION=project "$C" train --package p$it/package.json --run-dir u$pr-$it --init $W --precision $pr --epochs 1 --batch 5 --lr 1000 --eps 1 --weight-decay 0 --quiet >/dev/null 2>&1 || echo "update fail $g $pr"
    /usr/bin/python3 "$TH" grads --weights $W --package p$it/package.json --precision $pr > g$pr-$it.json
  done
  PYTHONPATH=$ROOT/bench /usr/bin/python3 - "$g" $it $W <<'PY'
import json, sys
import numpy as np
from torch_head import read_safetensors
g, it, w0 = sys.argv[1], sys.argv[2], read_safetensors(sys.argv[3])[0]
LR = 1000.0
def errors(run, grads):  # per tensor, FLT_EPSILON of its scale
    w1 = read_safetensors(run)[0]
    gr = {n: np.array(v) for n, v in json.load(open(grads)).items()}
    ut = {n: LR * v / (np.abs(v) + 1.0) for n, v in gr.items()}
    floor = 1e-3 * max(np.abs(u).max() for u in ut.values())
    return np.array([np.abs((w0[n].astype(np.float64) -
                             w1[n].astype(np.float64)).ravel() - ut[n]).max() /
                     max(np.abs(ut[n]).max(), floor) / 2**-23 for n in ut])
if all(not np.any(v) for v in json.load(open(f"gfp32-{it}.json")).values()):
    print(g, "| update: no gradient (every question has one option)")
    sys.exit(0)
row = []
for name, run, grads in (("fp32", f"ufp32-{it}", f"gfp32-{it}.json"),
                         ("bf16", f"ubf16-{it}", f"gbf16-{it}.json"),
                         ("fp32 step vs bf16 model", f"ufp32-{it}",
                          f"gbf16-{it}.json")):
    e = errors(f"{run}/weights.safetensors", grads)
    row.append(f"{name} median {np.median(e):.0f} worst {e.max():.0f}")
print(g, "| update:", ", ".join(row), "| FLT_EPSILON per tensor")
PY
done

# Sourced by scripts/test (uses its `stage`). MPI (issue 21): data-parallel
# clef train and the distributed clef sweep under mpirun -np 1/2 on this
# host (two hosts over TCP: 63-mpi-netns.sh). Skips without MPI support.
# Every command is bounded by timeout: the stage cannot hang CI.
mpi_stage() {
    local bin=${BUILD:-build}/bin w p=0 f=0 s=0
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    local mr="timeout 120 mpirun --oversubscribe --bind-to none"
    if ! command -v mpirun >/dev/null; then
        echo "skip mpi: no mpirun"
        echo "0 passed, 0 failed, 1 skipped"
        return 0
    fi
    if [[ $("$bin/clef" --version 2>/dev/null) != *$'\nmpi: yes'* ]]; then
        echo "skip mpi: this build has no MPI support"
        echo "0 passed, 0 failed, 1 skipped"
        return 0
    fi
    w=$(mktemp -d)
    ok() { echo "ok   $1"; p=$((p + 1)); }
    no() { echo "FAIL $1"; f=$((f + 1)); }
    timeout 60 "$bin/clef" fixture --out "$w/pkg" --records 8 >/dev/null
    local tr=(train --package "$w/pkg/package.json" --epochs 2 --batch 4
        --threads 1 --quiet)
    $mr -np 1 "$bin/clef" "${tr[@]}" --run-dir "$w/n1" >/dev/null 2>&1
    $mr -np 2 "$bin/clef" "${tr[@]}" --run-dir "$w/n2" >/dev/null 2>&1
    $mr -np 2 "$bin/clef" "${tr[@]}" --run-dir "$w/n2b" >/dev/null 2>&1
    cmp -s "$w/n1/weights.safetensors" "$w/n2/weights.safetensors" &&
        ok "same bits on 1 and 2 ranks" || no "same bits on 1 and 2 ranks"
    cmp -s "$w/n2/weights.safetensors" "$w/n2b/weights.safetensors" &&
        ok "same bits on a repeat" || no "same bits on a repeat"
    local rc=0 out
    out=$($mr -np 2 "$bin/clef" train --package "$w/none.json" \
        --run-dir "$w/bad" 2>&1) || rc=$?
    [[ $rc -eq 2 && $(grep -c '^clef train:' <<<"$out") -eq 1 &&
        ! -e $w/bad ]] && ok "bad input: exit 2, one message" ||
        no "bad input: exit 2, one message (rc $rc)"
    rc=0
    local t0=$SECONDS
    CLEF_FAULT_KILL_STEP=2 $mr -np 2 -x CLEF_FAULT_KILL_STEP "$bin/clef" \
        "${tr[@]}" --checkpoint-every 2 --run-dir "$w/kill" >/dev/null 2>&1 ||
        rc=$?
    [[ $rc -ne 0 && $((SECONDS - t0)) -lt 60 &&
        -e $w/kill/checkpoint-2.safetensors ]] &&
        ok "a rank killed: job exits $rc, checkpoint kept" ||
        no "a rank killed (rc $rc)"
    $mr -np 1 "$bin/clef" "${tr[@]}" --run-dir "$w/kill" \
        --resume "$w/kill/checkpoint-2.safetensors" >/dev/null 2>&1
    cmp -s "$w/n2/weights.safetensors" "$w/kill/weights.safetensors" &&
        ok "resume on another N: same bits" || no "resume on another N"
    # N ranks against the one-process train (a packed batch, summed in
    # another order): within 1e-6 relative on the weights after 10 updates
    local ten=(train --package "$w/pkg/package.json" --epochs 5 --batch 4
        --threads 1 --quiet)
    timeout 60 "$bin/clef" "${ten[@]}" --run-dir "$w/p10" >/dev/null 2>&1
    $mr -np 2 "$bin/clef" "${ten[@]}" --run-dir "$w/n10" >/dev/null 2>&1
    rc=0
    out=$(/usr/bin/python3 tests/mpi/weights_close.py \
        "$w/n10/weights.safetensors" "$w/p10/weights.safetensors" 1e-6 2>&1) ||
        rc=$?
    [[ $rc -eq 0 && $(steps_of "$w/n10") == 10 ]] &&
        ok "2 ranks against one process, 10 updates: $out" ||
        no "2 ranks against one process, 10 updates: $out"
    # --shard-records: one process with one-record shards is the 2 ranks'
    # bits; one shard of the whole batch on 2 ranks is the plain train's
    timeout 60 "$bin/clef" "${ten[@]}" --shard-records 1 --run-dir "$w/s1p" \
        >/dev/null 2>&1
    $mr -np 2 "$bin/clef" "${ten[@]}" --shard-records 4 --run-dir "$w/s4n" \
        >/dev/null 2>&1
    cmp -s "$w/s1p/weights.safetensors" "$w/n10/weights.safetensors" &&
        ok "--shard-records 1 in one process: the bits of 2 ranks" ||
        no "--shard-records 1 in one process: the bits of 2 ranks"
    cmp -s "$w/s4n/weights.safetensors" "$w/p10/weights.safetensors" &&
        ok "--shard-records B on 2 ranks: the bits of plain train" ||
        no "--shard-records B on 2 ranks: the bits of plain train"
    sweep_tests "$w" "$bin" "$mr"
    no_mpi_test "$w" "$mr"
    rm -rf "$w"
    echo "$p passed, $f failed, $s skipped"
    [[ $f -eq 0 ]]
}
# A build without MPI (60-sanitize.sh's build-asan) started by mpirun says
# so and exits 2, writing nothing.
no_mpi_test() {
    local w=$1 mr=$2 nb=${CLEF_ASAN_BUILD_DIR:-build-asan}/bin/clef rc=0 out
    if [[ ! -x $nb || $("$nb" --version 2>/dev/null) != *$'\nmpi: no'* ]]; then
        echo "skip a build without MPI under mpirun: no such build ($nb)"
        s=$((s + 1))
        return 0
    fi
    out=$($mr -np 1 "$nb" train --package "$w/pkg/package.json" \
        --run-dir "$w/nompi" 2>&1) || rc=$?
    [[ $rc -eq 2 && $out == *"this build has no MPI support"* &&
        ! -e $w/nompi ]] && ok "a build without MPI under mpirun: exit 2" ||
        no "a build without MPI under mpirun (rc $rc): $out"
}

# completed_steps of a run dir's result.json
steps_of() {
    /usr/bin/python3 -c 'import json, sys
print(json.load(open(sys.argv[1] + "/result.json"))["completed_steps"])' "$1"
}

# 1 when every run dir of sweep dir $1 has the weights of the same run in $2,
# and both sweep.json and best.safetensors are the same bytes.
same_sweep() {
    local d n=0
    for d in "$1"/runs/*/; do
        cmp -s "$d/weights.safetensors" \
            "$2/runs/$(basename "$d")/weights.safetensors" || return 1
        n=$((n + 1))
    done
    [[ $n -gt 0 ]] && cmp -s "$1/sweep.json" "$2/sweep.json" &&
        cmp -s "$1/best.safetensors" "$2/best.safetensors"
}

# The distributed sweep: the same runs as one process, one leaderboard,
# bad specs refused on every rank, a rank killed and the sweep rerun.
sweep_tests() {
    local w=$1 bin=$2 mr=$3 rc out
    cat >"$w/runs.json" <<'EOF'
[{"epochs": 1, "lr": 1e-3}, {"epochs": 30, "lr": 1e-3},
 {"epochs": 1, "lr": 3e-3}, {"epochs": 30, "lr": 3e-3}]
EOF
    local sw=(sweep --package "$w/pkg/package.json" --runs "$w/runs.json"
        --batch 2 --threads-per-run 1 --parallel 1 --checkpoint-every 2)
    timeout 120 "$bin/clef" "${sw[@]}" --sweep-dir "$w/s1" >/dev/null 2>&1
    out=$($mr -np 2 "$bin/clef" "${sw[@]}" --sweep-dir "$w/s2" 2>&1)
    same_sweep "$w/s1" "$w/s2" &&
        [[ $(grep -c '^rank  name' <<<"$out") -eq 1 &&
            $(grep -c '^rank 1: run' <<<"$out") -eq 2 ]] &&
        ok "sweep on 2 ranks: the runs of one process, one leaderboard" ||
        no "sweep on 2 ranks: the runs of one process, one leaderboard"
    rc=0
    out=$($mr -np 2 "$bin/clef" sweep --package "$w/pkg/package.json" \
        --sweep-dir "$w/sbad" --grid lr= 2>&1) || rc=$?
    [[ $rc -eq 2 && $(grep -c '^clef sweep:' <<<"$out") -eq 1 &&
        ! -e $w/sbad ]] && ok "sweep, bad axis: exit 2, one message" ||
        no "sweep, bad axis: exit 2, one message (rc $rc)"
    # rank 1 dies at step 50 of its first (30-epoch) run: the job ends, and
    # the same command again keeps the finished runs and resumes the others
    rc=0
    local t0=$SECONDS before
    CLEF_FAULT_KILL_STEP=50 $mr -np 2 -x CLEF_FAULT_KILL_STEP "$bin/clef" \
        "${sw[@]}" --sweep-dir "$w/sk" >/dev/null 2>&1 || rc=$?
    before=$(find "$w/sk/runs" -name sweep-done.json | wc -l)
    [[ $rc -ne 0 && $((SECONDS - t0)) -lt 60 &&
        -e $w/sk/runs/epochs=30,lr=0.001/checkpoint-50.safetensors ]] &&
        ok "sweep, a rank killed: job exits $rc, checkpoint kept" ||
        no "sweep, a rank killed (rc $rc)"
    out=$($mr -np 2 "$bin/clef" "${sw[@]}" --sweep-dir "$w/sk" 2>&1)
    same_sweep "$w/s1" "$w/sk" &&
        [[ $(grep -c 'done before: outputs checked' <<<"$out") -eq $before ]] &&
        ok "sweep rerun after the kill: $before runs kept, same outputs" ||
        no "sweep rerun after the kill ($before runs done before)"
}

stage mpi mpi_stage

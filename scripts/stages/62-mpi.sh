# Sourced by scripts/test (uses its `stage`). MPI (issue 21): data-parallel
# clef train under mpirun -np 1/2 on this host. Skips without MPI support.
# Every command is bounded by timeout: the stage cannot hang CI.
mpi_stage() {
    local bin=${BUILD:-build}/bin w p=0 f=0 s=0
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    local mr="timeout 120 mpirun --oversubscribe --bind-to none"
    if ! command -v mpirun >/dev/null ||
        ! grep -q '^CLEF_HAVE_MPI:INTERNAL=ON$\|MPI support ON' \
            "${BUILD:-build}/CMakeCache.txt" 2>/dev/null &&
        ! nm "$bin/clef" 2>/dev/null | grep -q ' U MPI_Init_thread'; then
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
    rm -rf "$w"
    echo "$p passed, $f failed, $s skipped"
    [[ $f -eq 0 ]]
}
stage mpi mpi_stage

# Sourced by scripts/test (uses its `stage`). libFuzzer harnesses of
# tests/fuzz/ (issue 16): builds build-fuzz/ with clang (ASan + UBSan +
# fuzzer coverage on clef_kernels and clef_core), replays every committed
# reproducer of tests/fuzz/regressions/<harness>/ (one test each: passes
# once the defect is fixed), then runs each harness for CLEF_FUZZ_SECONDS
# (default 60) on a copy of its seed corpus (tests/fuzz/corpus/<harness>/,
# copied to a temp folder: the repository is never written). One test per
# harness: passed when the run ends without a crash, leak, timeout or OOM;
# otherwise the input is saved under build-fuzz/crashes/ and its path
# printed. Without clang, libFuzzer or libomp every test SKIPs, with the
# reason. Bounded: the build (a few minutes from scratch, seconds after),
# then 3 x (CLEF_FUZZ_SECONDS + at most 30 s) plus the replays.
# Needs (Debian 12): clang-14 libclang-rt-14-dev libomp-14-dev.
fuzz_tests() {
    local tmp rc=0
    tmp=$(mktemp -d)
    fuzz_run "$tmp" || rc=$?
    rm -rf "$tmp"
    return "$rc"
}
fuzz_run() {
    local tmp=$1
    local secs=${CLEF_FUZZ_SECONDS:-60} dir=${CLEF_FUZZ_BUILD_DIR:-build-fuzz}
    local harnesses=(safetensors weights package) cc=${CLEF_FUZZ_CC:-clang}
    local nh=${#harnesses[@]} p=0 f=0 s=0
    # ---- the toolchain ----
    local why=""
    if ! command -v "$cc" >/dev/null 2>&1; then
        why="$cc not found (apt-get install clang-14)"
    else
        printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ return 0; }\n' >"$tmp/probe.c"
        printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n' >"$tmp/omp.c"
        if ! "$cc" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" \
            -o "$tmp/probe" >"$tmp/probe.log" 2>&1; then
            why="$cc cannot link libFuzzer (apt-get install libclang-rt-14-dev)"
        elif ! "$cc" -fopenmp "$tmp/omp.c" -o "$tmp/omp" >"$tmp/omp.log" 2>&1; then
            why="$cc has no OpenMP runtime (apt-get install libomp-14-dev)"
        fi
    fi
    if [[ -n $why ]]; then
        echo "fuzz: SKIP all $nh harnesses: $why"
        echo "0 passed, 0 failed, $nh skipped"
        return 0
    fi
    # ---- the build ----
    if ! cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
        -DCLEF_FUZZ=ON >"$tmp/cmake.log" 2>&1 ||
        ! cmake --build "$dir" --target clef-fuzz -j"$(nproc)" >>"$tmp/cmake.log" 2>&1; then
        tail -n 30 "$tmp/cmake.log"
        echo "fuzz: FAIL: building $dir"
        echo "0 passed, $nh failed, 0 skipped"
        return 1
    fi
    mkdir -p "$dir/crashes"
    # ---- the committed reproducers ----
    local h r
    for h in "${harnesses[@]}"; do
        for r in tests/fuzz/regressions/"$h"/*; do
            [[ -f $r ]] || continue
            if timeout 60 "$dir/bin/fuzz_$h" -rss_limit_mb=2048 -timeout=10 \
                "$r" >"$tmp/replay.log" 2>&1; then
                echo "fuzz: PASS replay $r"
                p=$((p + 1))
            else
                echo "fuzz: FAIL replay $r: $(grep -m1 -E 'ERROR|runtime error|fuzz:' "$tmp/replay.log" | cut -c1-200)"
                f=$((f + 1))
            fi
        done
    done
    # ---- the bounded runs ----
    for h in "${harnesses[@]}"; do
        local corpus="$tmp/corpus-$h" log="$tmp/fuzz-$h.log" rc=0
        cp -R "tests/fuzz/corpus/$h" "$corpus"
        timeout -k 5 $((secs + 30)) "$dir/bin/fuzz_$h" -max_total_time="$secs" \
            -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
            -dict="tests/fuzz/$h.dict" \
            -artifact_prefix="$dir/crashes/$h-" "$corpus" >"$log" 2>&1 || rc=$?
        local execs eps art
        execs=$(grep -m1 -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
        eps=$(grep -m1 -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
        art=$(grep -m1 -oE 'Test unit written to [^ ]+' "$log" | sed 's/^Test unit written to //' || true)
        if [[ $rc -eq 0 && -z $art ]]; then
            echo "fuzz: PASS $h: ${secs}s, ${execs:-?} executions, ${eps:-?} exec/s, corpus $(find "$corpus" -type f | wc -l) files"
            p=$((p + 1))
        else
            grep -E '^==[0-9]+==ERROR|runtime error|^SUMMARY|^fuzz:|^    #[0-4] ' "$log" | head -n 12
            echo "fuzz: FAIL $h (exit $rc): ${execs:-?} executions, ${eps:-?} exec/s; input: ${art:-none saved (see the log above)}"
            f=$((f + 1))
        fi
    done
    echo "$p passed, $f failed, $s skipped"
    [[ $f -eq 0 ]]
}
stage fuzz fuzz_tests

# Sourced by scripts/test (uses its `stage`). AddressSanitizer (LeakSanitizer
# included) + UndefinedBehaviorSanitizer, any UB fatal (issue 16): builds
# build-asan/ with -DCLEF_SANITIZE=ON, then runs under it
#   - the whole Criterion suite (every test; the CLI tests run the sanitized
#     clef too),
#   - `clef fixture` + `clef train` for every backend this CPU and build
#     offer, at the fixture's default geometry and an odd one (hidden 6,
#     width 6: rows of 6 floats, the 2-float partial vectors at 4-byte
#     alignment),
#   - `clef-bench --backend all --shape tiny,edge --no-time`.
# A sanitizer report anywhere (a test's child process included: Criterion
# does not count a leak report at a child's exit) fails its step. On 2
# cores: 3 min 42 s from a clean build-asan/ (build 1 min, suite 2.8 min),
# 2.6 min when build-asan/ is current.
sanitize_stage() {
    local bdir=${CLEF_ASAN_BUILD_DIR:-build-asan} log rc p=0 f=0 s=0
    log=$(mktemp -d)
    # (CC, not -DCMAKE_C_COMPILER: a compiler change on the command line
    # drops the cache, -DCLEF_SANITIZE=ON with it). Built without MPI: the
    # suite then runs the one-rank MPI layer, and 62-mpi.sh checks that this
    # build refuses to run under mpirun.
    if ! { CC=${CC:-gcc} cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release \
        -DCLEF_SANITIZE=ON -DCLEF_MPI=OFF >"$log/build.log" 2>&1 &&
        grep -q '^CLEF_SANITIZE:BOOL=ON$' "$bdir/CMakeCache.txt" &&
        cmake --build "$bdir" -j"$(nproc)" >>"$log/build.log" 2>&1 &&
        [[ $(nm "$bdir/bin/clef-tests" | grep -c ' __asan_init') -gt 0 ]] &&
        [[ $(nm "$bdir/bin/clef" | grep -c ' __ubsan_handle_') -gt 0 ]]; }; then
        tail -n 40 "$log/build.log"
        echo "sanitize: build failed"
        echo "0 passed, 1 failed, 0 skipped"
        rm -rf "$log"
        return 1
    fi
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1"
    export LSAN_OPTIONS="suppressions=$PWD/tests/sanitize/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    # reports: a sanitizer's own lines, in any process of the step
    san_reports() {
        grep -E '^==[0-9]+==ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|^SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)' "$1" || true
    }
    step() { # step NAME CMD...: one counted check
        local name=$1 out="$log/step.log" r=0
        shift
        "$@" >"$out" 2>&1 || r=$?
        local rep
        rep=$(san_reports "$out")
        if [[ $r -ne 0 || -n $rep ]]; then
            echo "FAIL $name (exit $r)"
            tail -n 60 "$out"
            f=$((f + 1))
        else
            echo "ok   $name"
            p=$((p + 1))
        fi
    }

    # the Criterion suite: its own counts, plus one failure per sanitizer
    # report in its output (leaks at a test child's exit are not counted)
    local json="$log/criterion.json" r=0
    local t0=$SECONDS
    "$bdir/bin/clef-tests" --jobs "${CLEF_TEST_JOBS:-2}" --json="$json" \
        >"$log/unit.log" 2>&1 || r=$?
    local up uf us
    up=$(grep -m1 -oE '"passed": *[0-9]+' "$json" 2>/dev/null | grep -oE '[0-9]+$' || true)
    uf=$(grep -m1 -oE '"failed": *[0-9]+' "$json" 2>/dev/null | grep -oE '[0-9]+$' || true)
    us=$(grep -m1 -oE '"skipped": *[0-9]+' "$json" 2>/dev/null | grep -oE '[0-9]+$' || true)
    grep -E '^\[(FAIL|----)\]|^\[====\]' "$log/unit.log" | tail -n 40
    if [[ -z $up || -z $uf || -z $us ]]; then
        echo "FAIL clef-tests: no report (exit $r)"
        tail -n 40 "$log/unit.log"
        f=$((f + 1))
    else
        p=$((p + up)) f=$((f + uf)) s=$((s + us))
        [[ $r -ne 0 && $uf -eq 0 ]] && { echo "FAIL clef-tests exit $r"; f=$((f + 1)); }
    fi
    local nrep
    nrep=$(grep -cE '^SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)' "$log/unit.log" || true)
    if [[ $nrep -gt 0 ]]; then
        echo "FAIL clef-tests: $nrep sanitizer report(s):"
        grep -B2 -A14 -E '^==[0-9]+==ERROR' "$log/unit.log" | head -n 200
        f=$((f + nrep))
    fi
    echo "clef-tests under ASan+UBSan: $((SECONDS - t0)) s"

    # fixture + train per backend, two geometries
    local bin="$bdir/bin" w="$log/work" be
    mkdir -p "$w"
    step "fixture default" "$bin/clef" fixture --out "$w/pkg"
    step "fixture odd (hidden 6, width 6, heads 2, ff 10, positions 7)" \
        "$bin/clef" fixture --out "$w/odd" --hidden 6 --width 6 --heads 2 \
        --feedforward 10 --positions 7
    "$bin/clef-bench" --list >"$log/list.log" 2>&1 || true
    for be in scalar avx2 avx512 onednn blis auto; do
        if ! grep -qE "^  $be +available\$" "$log/list.log"; then
            echo "skip train $be: $(grep -E "^  $be " "$log/list.log" | sed 's/^ *//')"
            s=$((s + 2))
            continue
        fi
        step "train $be (default)" "$bin/clef" train --package "$w/pkg/package.json" \
            --run-dir "$w/run-$be" --backend "$be" --epochs 2 --batch 4
        step "train $be (odd)" "$bin/clef" train --package "$w/odd/package.json" \
            --run-dir "$w/run-odd-$be" --backend "$be" --epochs 3 --batch 2
    done

    step "clef-bench parity tiny,edge" "$bin/clef-bench" --backend all \
        --shape tiny,edge --no-time
    rm -rf "$log"
    echo "$p passed, $f failed, $s skipped"
    [[ $f -eq 0 ]]
}
stage sanitize sanitize_stage

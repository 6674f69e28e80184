# Sourced by scripts/test after the unit tests (uses its `stage` and $BUILD).
# The same parity matrix with the hand-written kernels capped by CLEF_MAX_ISA
# (issue 5): at avx2 the avx512 backend must SKIP and auto, oneDNN and BLIS
# fall through to AVX2 kernels; at scalar to the reference. Checks only
# (--no-time): a few seconds each.
stage bench-parity-max-avx2 env CLEF_MAX_ISA=avx2 "$BUILD/bin/clef-bench" \
    --backend all --shape tiny,fixture,edge --no-time
stage bench-parity-max-scalar env CLEF_MAX_ISA=scalar "$BUILD/bin/clef-bench" \
    --backend all --shape tiny,fixture,edge --no-time

# Sourced by scripts/test after the unit tests (uses its `stage` and $BUILD).
# Kernel parity matrix (issue 4): every backend's kernels against the scalar
# reference on the tiny, fixture and edge shapes. A backend this build or
# this CPU lacks gives SKIP rows with the reason; any FAIL or MISTRUSTED
# fails the run. About 20-40 s on 2 cores.
stage bench-parity "$BUILD/bin/clef-bench" --backend all --shape tiny,fixture,edge

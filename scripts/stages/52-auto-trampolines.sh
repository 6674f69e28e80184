# Sourced by scripts/test (uses its `stage` and $BUILD). auto's per-class
# trampolines (scheduler/tune.c, one per op from the op list) forward every
# argument of their op: a tuning file that gives each op's small and large
# classes to the scalar reference and its medium class to the best
# hand-written backend makes every op of the auto table a trampoline; the
# parity matrix then checks them all against the scalar reference.
stage auto-trampolines /usr/bin/python3 tests/auto/trampolines.py "$BUILD/bin/clef-bench"

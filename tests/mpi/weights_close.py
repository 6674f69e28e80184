#!/usr/bin/python3
"""Compares two weights.safetensors of the same head tensor by tensor.

usage: weights_close.py A B TOL

The figure tested: rel = ||A - B||_2 / ||B||_2 over every weight of the head
(all tensors as one vector, in double). Exits 1 when it exceeds TOL (or the
files hold different tensors), 0 otherwise. Also printed, not tested: the
worst tensor's own ||A_t - B_t|| / ||B_t|| (a zero-initialised bias has a
small norm, so its relative figure is the largest). Used by the MPI stage:
N ranks against one process within 1e-6 after 10 updates (issue 21).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import clefpkg  # noqa: E402


def rel(num, den):
    return num / den if den > 0 else (0.0 if num == 0 else np.inf)


def compare(a, b):
    """(overall relative difference, worst tensor name, its own figure)."""
    if sorted(a) != sorted(b):
        raise SystemExit("weights_close: the files hold different tensors")
    out = ("", 0.0)
    num2 = den2 = 0.0
    for name in sorted(a):
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            raise SystemExit(f"weights_close: {name}: shapes {x.shape} {y.shape}")
        num, den = np.linalg.norm(x - y), np.linalg.norm(y)
        num2 += num * num
        den2 += den * den
        if rel(num, den) >= out[1]:
            out = (name, float(rel(num, den)))
    return float(rel(np.sqrt(num2), np.sqrt(den2))), out[0], out[1]


def main(argv):
    if len(argv) != 4:
        raise SystemExit(__doc__)
    a, _ = clefpkg.load_safetensors(argv[1])
    b, _ = clefpkg.load_safetensors(argv[2])
    overall, name, worst = compare(a, b)
    tol = float(argv[3])
    print(f"weights: relative difference {overall:.3g} (limit {tol:g}); "
          f"worst tensor {name}: {worst:.3g}")
    return 0 if overall <= tol else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

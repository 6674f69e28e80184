#!/usr/bin/python3
"""Reproduces the polynomial coefficients of the vector erf / Φ / φ code:
backends/x86/tmpl_math.h and backends/avx512/gelu_lut.h.

Every fit is a weighted (relative-error) least-squares fit in double on
Chebyshev nodes, rounded to float; the printed error is the float-evaluated
(Horner, no FMA) relative error on a dense grid. Needs python3-numpy.

    /usr/bin/python3 backends/x86/fit_coefficients.py [erf|erfcx|tail|erfcx16|lut32]
"""
import math
import sys

import numpy as np


def erfcx(x):
    return math.erfc(x) * math.exp(x * x)


def fit(f, a, b, deg, var, center=0.0, n=4000):
    x = np.cos(np.pi * (np.arange(n) + 0.5) / n) * (b - a) / 2 + (a + b) / 2
    y = np.array([f(t) for t in x])
    w = 1 / np.abs(y)
    V = np.vander(var(x) - center, deg + 1, increasing=True)
    c = np.linalg.lstsq(V * w[:, None], y * w, rcond=None)[0].astype(np.float32)
    xs = np.linspace(a, b, 200001)
    u = (var(xs) - center).astype(np.float32)
    r = np.float32(c[-1])
    for k in range(deg - 1, -1, -1):
        r = (r * u + c[k]).astype(np.float32)
    ys = np.array([f(t) for t in xs])
    return c, np.max(np.abs(r - ys) / np.abs(ys))


def show(name, c, err):
    print("%s (float-evaluated relative error %.3g), c0 first:" % (name, err))
    for v in c:
        print("    %.9ef," % v)


def pieces(f, n_pieces, h, deg):
    """Piecewise fits on [j h, (j+1) h) in t = x − (j + ½) h (float h)."""
    worst, tabs = 0.0, [[] for _ in range(deg + 1)]
    for j in range(n_pieces):
        c = (j + 0.5) * h
        x = np.cos(np.pi * (np.arange(300) + 0.5) / 300) * (h / 2 * 1.02) + c
        y = np.array([f(t) for t in x])
        V = np.vander(x - c, deg + 1, increasing=True)
        co = np.linalg.lstsq(V / y[:, None], np.ones_like(y), rcond=None)[0].astype(np.float32)
        xs = np.linspace(j * h, (j + 1) * h, 3001).astype(np.float32).astype(np.float64)
        t = (xs - c).astype(np.float32)
        r = np.float32(co[-1])
        for k in range(deg - 1, -1, -1):
            r = (r * t + co[k]).astype(np.float32)
        ys = np.array([f(v) for v in xs])
        worst = max(worst, np.max(np.abs(r - ys) / ys))
        for k in range(deg + 1):
            tabs[k].append(co[k])
    return tabs, worst


def main(which):
    if which in ("all", "erf"):  # erf(x) = x P(x²), |x| < 0.875
        c, e = fit(lambda x: math.erf(x) / x if x else 2 / math.sqrt(math.pi),
                   0.0, 0.875, 6, lambda x: x * x)
        show("erf small P(x²)", c, e)
    if which in ("all", "erfcx"):  # erfcx on [0.875, 4), degree 12 in x − 2.4375
        c, e = fit(erfcx, 0.875, 4.0, 12, lambda x: x, 2.4375)
        show("erfcx [0.875, 4)", c, e)
    if which in ("all", "tail"):  # erfcx on [4, 10.1], degree 6 in 1/x
        c, e = fit(erfcx, 4.0, 10.1, 6, lambda x: 1 / x)
        show("erfcx [4, 10.1] in 1/x", c, e)
    if which in ("all", "erfcx16"):  # erfcx on [0, 4): degree 16 in x − 2
        c, e = fit(erfcx, 0.0, 4.0, 16, lambda x: x, 2.0)
        show("erfcx [0, 4) degree 16", c, e)
    if which in ("all", "lut16"):  # 16 pieces of 1/4 on [0, 4), degree 6
        tabs, e = pieces(erfcx, 16, 0.25, 6)
        print("erfcx 16 pieces (error %.3g)" % e)
        for k, t in enumerate(tabs):
            print("c%d = {%s}" % (k, ", ".join("%.9ef" % v for v in t)))
    if which in ("all", "lut32"):  # Φ(−a), φ(a): 32 pieces on [0, 4√2)
        h = float(np.float32(4 * math.sqrt(2) / 32))
        for name, f in (("phi", lambda a: 0.5 * math.erfc(a / math.sqrt(2))),
                        ("pdf", lambda a: math.exp(-a * a / 2) / math.sqrt(2 * math.pi))):
            tabs, e = pieces(f, 32, h, 6)
            print("// %s: 32 pieces, h = %.9ef, error %.3g" % (name, h, e))
            for k, t in enumerate(tabs):
                print("static const float %s_c%d[32] = {%s};" %
                      (name, k, ", ".join("%.9ef" % v for v in t)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "all")

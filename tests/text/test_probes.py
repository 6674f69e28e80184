"""Tests of python/clef_metrics.py and python/clef_probes.py.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/text -p 'test_probes.py'
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import clefpkg  # noqa: E402
from clef_metrics import question_metrics, mean_sd, ece_bin  # noqa: E402
import clef_probes  # noqa: E402

HEAD = {"hidden_size": 16, "width": 8, "heads": 2, "feedforward": 16,
        "routing_layers": 1, "layers": 1}


class MetricsTest(unittest.TestCase):

    def test_accuracy_confusion(self):
        P = np.array([[0.7, 0.2, 0.1],
                      [0.1, 0.8, 0.1],
                      [0.3, 0.3, 0.4],
                      [0.5, 0.4, 0.1]])
        y = np.array([0, 1, 0, 1])
        m = question_metrics(P, y, ["a", "b", "c"])
        self.assertEqual(m["n"], 4)
        self.assertEqual(m["options"], ["a", "b", "c"])
        self.assertAlmostEqual(m["accuracy"], 0.5)
        # rows: label, columns: predicted
        self.assertEqual(m["confusion"], [[1, 0, 1], [1, 1, 0], [0, 0, 0]])
        # class a: tp1 fp1 fn1 -> 0.5; b: tp1 fp0 fn1 -> 2/3;
        # c: tp0 fp1 fn0 -> 0 (predicted, so it counts)
        self.assertAlmostEqual(m["macro_f1"], (0.5 + 2 / 3 + 0.0) / 3)
        want = -(math.log(0.7) + math.log(0.8) + math.log(0.3)
                 + math.log(0.4)) / 4
        self.assertAlmostEqual(m["nll"], want)

    def test_macro_f1_missing_class(self):
        # class "c" is neither a label nor a prediction: left out of the mean
        P = np.array([[0.9, 0.05, 0.05],
                      [0.2, 0.7, 0.1],
                      [0.6, 0.3, 0.1]])
        y = np.array([0, 1, 1])
        m = question_metrics(P, y, ["a", "b", "c"])
        # a: tp1 fp1 fn0 -> 2/3; b: tp1 fp0 fn1 -> 2/3
        self.assertAlmostEqual(m["macro_f1"], 2 / 3)
        self.assertNotAlmostEqual(m["macro_f1"], (2 / 3 + 2 / 3) / 3)

    def test_ece_confidence_one_and_bin_edge(self):
        self.assertEqual(ece_bin(0.0), 0)
        self.assertEqual(ece_bin(1.0), 14)
        self.assertEqual(ece_bin(1 / 15), 0)      # (0, 1/15] is bin 0
        self.assertEqual(ece_bin(2 / 15), 1)
        self.assertEqual(ece_bin(np.nextafter(2 / 15, 1)), 2)
        self.assertEqual(ece_bin(0.5), 7)         # 7/15 < 0.5 <= 8/15
        # float32 confidences: the same bins as C's ceil(c * 15) - 1
        for c in np.linspace(0, 1, 2001, dtype=np.float32).tolist() + [
                float(np.float32(k / 15)) for k in range(16)]:
            want = max(0, min(14, int(math.ceil(c * 15)) - 1))
            self.assertEqual(ece_bin(c), want, c)
        # conf 1.0 (right) and 1.0 (wrong) share bin 14: acc 0.5, conf 1
        P = np.array([[1.0, 0.0],
                      [0.0, 1.0],
                      [0.6, 0.4]])
        y = np.array([0, 0, 0])
        m = question_metrics(P, y, ["x", "y"])
        # bin 14: n2 acc .5 conf 1 -> .5*2/3; bin 8 (0.6): acc 1 conf .6
        # -> .4/3
        self.assertAlmostEqual(m["ece"], (0.5 * 2 + 0.4) / 3)
        # the 2/15 edge: with K = 8 options a top probability of exactly
        # 2/15 (the rest shared below it) falls in bin 1 and one just above
        # 2/15 in bin 2; in separate bins their ECE terms add up.
        top = 2 / 15
        rest = (1 - top) / 7
        self.assertLess(rest, top)
        P8 = np.full((2, 8), rest)
        P8[0, 0] = top
        P8[1, 0] = np.nextafter(top, 1)
        P8[1, 1:] = (1 - P8[1, 0]) / 7
        y8 = np.array([0, 1])
        m8 = question_metrics(P8, y8, [str(i) for i in range(8)])
        # bin 1: acc 1, conf 2/15; bin 2: acc 0, conf ~2/15
        want = ((1 - top) + P8[1, 0]) / 2
        self.assertAlmostEqual(m8["ece"], want, places=12)
        # had the two shared a bin, ECE would be |0.5 - 2/15|
        self.assertGreater(abs(m8["ece"] - abs(0.5 - top)), 0.1)

    def test_soft_target_nll(self):
        P = np.array([[0.5, 0.5], [0.8, 0.2]])
        T = np.array([[0.25, 0.75], [1.0, 0.0]])
        m = question_metrics(P, None, ["a", "b"], targets=T)
        want = (-(0.25 * math.log(0.5) + 0.75 * math.log(0.5))
                - math.log(0.8)) / 2
        self.assertAlmostEqual(m["nll"], want)
        # labels are argmax targets: [1, 0]; predictions [0 (tie), 0]
        self.assertEqual(m["confusion"], [[1, 0], [1, 0]])
        self.assertAlmostEqual(m["accuracy"], 0.5)

    def test_zero_probability_floor(self):
        m = question_metrics(np.array([[1.0, 0.0]]), [1], ["a", "b"])
        self.assertAlmostEqual(m["nll"], 126 * math.log(2))   # FLT_MIN

    def test_empty(self):
        m = question_metrics(np.zeros((0, 2)), np.zeros(0, int), ["a", "b"])
        self.assertEqual(m["n"], 0)
        self.assertIsNone(m["accuracy"])
        self.assertEqual(m["confusion"], [[0, 0], [0, 0]])

    def test_mean_sd(self):
        r = mean_sd([1.0, 2.0, 4.0])
        self.assertAlmostEqual(r["mean"], 7 / 3)
        self.assertAlmostEqual(r["sd"], math.sqrt(((1 - 7 / 3) ** 2
                                                   + (2 - 7 / 3) ** 2
                                                   + (4 - 7 / 3) ** 2) / 2))
        self.assertEqual(r["values"], [1.0, 2.0, 4.0])
        self.assertEqual(mean_sd([3.0])["sd"], 0.0)


# ------------------------------------------------------ synthetic packages --

def _records(rng, n_per_split, d, labeller, dtype="F32"):
    """Records whose mean hidden state is z; labeller(z) -> question dicts."""
    records, k = [], 0
    for split, n in zip(("train", "validation", "test"), n_per_split):
        for _ in range(n):
            T = int(rng.integers(3, 9))
            z = rng.standard_normal(d)
            noise = rng.standard_normal((T, d))
            H = z + noise - noise.mean(axis=0)   # mean over tokens is z
            qs = labeller(z)
            O = sum(len(q["options"]) for q in qs)
            records.append({
                "id": "r-%04d" % k, "split": split, "hidden_dtype": dtype,
                "hidden": H.astype(np.float32),
                "input_ids": rng.integers(0, 10, T),
                "question_spans": [[0, 1]] * len(qs),
                "option_spans": [[1, 2]] * O,
                "questions": qs})
            k += 1
    return records


def _write(directory, records):
    lex = np.zeros((10, HEAD["hidden_size"]), np.float32)
    return clefpkg.write_package(directory, HEAD, lex, records)


def _separable(rng, d):
    W = rng.standard_normal((3, d))
    w = rng.standard_normal(d)

    def lab(z):
        return [{"id": "act", "type": "choice", "options": ["a", "b", "c"],
                 "label": int(np.argmax(W @ z))},
                {"id": "yes", "type": "noul", "options": ["no", "yes"],
                 "label": int(w @ z > 0.5)}]
    return lab


# the default settings but one FFN learning rate (the test's time budget)
FAST = {"lr": {"linear probe": [1e-4, 1e-3, 1e-2], "ffn probe": [1e-3]}}


class ProbesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="clef-probes-")
        cls.timings = {}
        d = HEAD["hidden_size"]
        rng = np.random.default_rng(11)
        cls.sep = _write(os.path.join(cls.tmp, "sep"),
                         _records(rng, (400, 100, 200), d,
                                  _separable(rng, d), dtype="BF16"))
        rng = np.random.default_rng(12)

        def rand_lab(z):
            return [{"id": "coin", "type": "noul", "options": ["h", "t"],
                     "label": int(rng.integers(0, 2))}]
        cls.rand = _write(os.path.join(cls.tmp, "rand"),
                          _records(rng, (300, 100, 300), d, rand_lab))
        t = time.perf_counter()
        cls.sep_res = clef_probes.run_probes(cls.sep, seeds=(1, 2, 3),
                                             threads=1, settings=FAST)
        cls.timings["separable"] = time.perf_counter() - t
        t = time.perf_counter()
        cls.rand_res = clef_probes.run_probes(cls.rand, seeds=(1, 2, 3),
                                              threads=1, settings=FAST)
        cls.timings["random"] = time.perf_counter() - t

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if os.environ.get("CLEF_PROBES_TIMING"):
            sys.stderr.write("probe timings: %s\n" % json.dumps(
                {k: round(v, 2) for k, v in cls.timings.items()}))

    def model(self, res, name):
        return [m for m in res["models"] if m["name"] == name][0]

    def test_output_shape(self):
        r = self.sep_res
        self.assertEqual(r["pooling"], "all_tokens")
        self.assertEqual(r["seeds"], [1, 2, 3])
        self.assertEqual(r["splits"], {"train": 400, "validation": 100,
                                       "test": 200})
        self.assertEqual(r["questions"], {"act": ["a", "b", "c"],
                                          "yes": ["no", "yes"]})
        self.assertEqual([m["name"] for m in r["models"]],
                         ["majority", "linear probe", "ffn probe"])
        for m in r["models"]:
            self.assertEqual([s["seed"] for s in m["per_seed"]], [1, 2, 3])
            for s in m["per_seed"]:
                for q in ("act", "yes"):
                    self.assertEqual(s["per_question"][q]["n"], 200)
                    self.assertEqual(s["validation"][q]["n"], 100)
            for q in ("act", "yes"):
                for k in ("accuracy", "macro_f1", "nll", "ece"):
                    self.assertEqual(len(m["per_question"][q][k]["values"]),
                                     3)
                tp = m["test_probabilities"][q]
                self.assertEqual(len(tp), 200)
                for p in tp.values():
                    self.assertAlmostEqual(sum(p), 1.0, places=6)
        json.dumps(r)   # serialisable

    def test_separable(self):
        lin = self.model(self.sep_res, "linear probe")
        ffn = self.model(self.sep_res, "ffn probe")
        for q in ("act", "yes"):
            for acc in lin["per_question"][q]["accuracy"]["values"]:
                self.assertGreaterEqual(acc, 0.95, q)
            self.assertGreaterEqual(
                ffn["per_question"][q]["accuracy"]["mean"], 0.9, q)
        maj = self.model(self.sep_res, "majority")
        pkg = clefpkg.read_package(self.sep)
        for q in ("act", "yes"):
            train = [x["label"] for r in pkg["records"]
                     if r["split"] == "train" for x in r["questions"]
                     if x["id"] == q]
            test = [x["label"] for r in pkg["records"]
                    if r["split"] == "test" for x in r["questions"]
                    if x["id"] == q]
            mode = int(np.bincount(train).argmax())
            freq = float(np.mean(np.array(test) == mode))
            m = maj["per_question"][q]
            self.assertAlmostEqual(m["accuracy"]["mean"], freq)
            self.assertEqual(m["accuracy"]["sd"], 0.0)
            K = len(pkg["records"][0]["questions"][0 if q == "act" else 1]
                    ["options"])
            p = (np.bincount(train, minlength=K) + 1.0) / (len(train) + K)
            first = next(iter(maj["test_probabilities"][q].values()))
            np.testing.assert_allclose(first, p)
            self.assertLess(lin["per_question"][q]["nll"]["mean"],
                            m["nll"]["mean"])

    def test_random_labels(self):
        for name in ("linear probe", "ffn probe", "majority"):
            m = self.model(self.rand_res, name)["per_question"]["coin"]
            self.assertLessEqual(m["accuracy"]["mean"], 0.5 + 0.1, name)
            # NLL no better than a coin flip by more than a little
            self.assertGreater(m["nll"]["mean"], math.log(2) - 0.05, name)

    def test_early_stopping_keeps_best(self):
        for s in self.model(self.rand_res, "linear probe")["per_seed"]:
            self.assertLess(s["epochs"]["coin"], 200)
            self.assertLessEqual(s["best_epoch"]["coin"], s["epochs"]["coin"])
            self.assertEqual(s["selection"]["coin"], "validation_nll")

    def test_deterministic(self):
        a = clef_probes.run_probes(self.rand, seeds=(5,), threads=1,
                                   settings={"max_epochs": 30})
        b = clef_probes.run_probes(self.rand, seeds=(5,), threads=1,
                                   settings={"max_epochs": 30})
        a.pop("timing_s")
        b.pop("timing_s")
        self.assertEqual(json.dumps(a, sort_keys=True),
                         json.dumps(b, sort_keys=True))
        c = clef_probes.run_probes(self.rand, seeds=(6,), threads=1,
                                   settings={"max_epochs": 30})
        self.assertNotEqual(
            self.model(a, "ffn probe")["test_probabilities"],
            self.model(c, "ffn probe")["test_probabilities"])


class PoolingTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="clef-probes-pool-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_state_span_pooling(self):
        rng = np.random.default_rng(3)
        d = HEAD["hidden_size"]
        recs = _records(rng, (4, 2, 2), d, lambda z: [
            {"id": "q", "type": "noul", "options": ["n", "y"],
             "label": int(z[0] > 0)}])
        spans = {r["id"]: {"state_span": [1, 3], "text": "ignored"}
                 for r in recs}
        feats = clef_probes.pooled_features(recs, spans)
        want = np.stack([r["hidden"][1:3].astype(np.float64).mean(axis=0)
                         for r in recs])
        np.testing.assert_allclose(feats, want, rtol=1e-6, atol=1e-6)
        allt = clef_probes.pooled_features(recs)
        self.assertGreater(np.abs(allt - feats).max(), 1e-3)
        path = _write(os.path.join(self.tmp, "p"), recs)
        cap = os.path.join(self.tmp, "capture.json")
        with open(cap, "w") as f:
            json.dump({"records": spans}, f)
        out = os.path.join(self.tmp, "probes.json")
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "python", "clef_probes.py"),
             "--package", path, "--pool-spans", cap, "--seeds", "1,2",
             "--out", out, "--threads", "1"],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            res = json.load(f)
        self.assertEqual(res["pooling"], "state_span")
        self.assertEqual(res["seeds"], [1, 2])

    def test_bad_span_and_missing_record(self):
        rng = np.random.default_rng(4)
        recs = _records(rng, (2, 0, 0), HEAD["hidden_size"], lambda z: [
            {"id": "q", "type": "noul", "options": ["n", "y"], "label": 0}])
        with self.assertRaisesRegex(ValueError, "no state_span for record"):
            clef_probes.pooled_features(recs, {recs[0]["id"]:
                                               {"state_span": [0, 1]}})
        with self.assertRaisesRegex(ValueError, "state_span"):
            clef_probes.pooled_features(
                recs, {r["id"]: {"state_span": [0, 99]} for r in recs})

    def test_option_mismatch_fails(self):
        rng = np.random.default_rng(5)
        flip = iter(range(1000))

        def lab(z):
            opts = ["n", "y"] if next(flip) != 3 else ["n", "z"]
            return [{"id": "q", "type": "choice", "options": opts,
                     "label": 0}]
        path = _write(os.path.join(self.tmp, "m"),
                      _records(rng, (4, 1, 1), HEAD["hidden_size"], lab))
        with self.assertRaisesRegex(ValueError, "question 'q'.*r-0003"):
            clef_probes.run_probes(path, seeds=(1,))
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "python", "clef_probes.py"),
             "--package", path], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("one set of options", proc.stderr)

    def test_reordered_options_map_by_id(self):
        rng = np.random.default_rng(6)
        flip = iter(range(1000))

        def lab(z):
            if next(flip) == 2:  # the same options, listed the other way
                return [{"id": "q", "type": "choice", "options": ["y", "n"],
                         "label": 0}]
            return [{"id": "q", "type": "choice", "options": ["n", "y"],
                     "label": 0}]
        recs = _records(rng, (4, 1, 1), HEAD["hidden_size"], lab)
        opts = clef_probes._questions(recs)
        self.assertEqual(opts, {"q": ["n", "y"]})
        parts = clef_probes._question_data(recs, "q", opts["q"])
        Y = parts["train"]["Y"]
        rows = list(parts["train"]["rows"])
        self.assertEqual(Y[rows.index(2)].tolist(), [0.0, 1.0])  # "y"
        self.assertEqual(Y[rows.index(0)].tolist(), [1.0, 0.0])  # "n"


if __name__ == "__main__":
    unittest.main()

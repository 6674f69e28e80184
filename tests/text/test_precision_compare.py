"""bench/precision_compare.py: loss bands, shared test answers, the bound."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "precision_compare.py")

# Four records: r0, r1 test; r2 train; r3 test. One question "q", two options.
RECORDS = [("r0", "test"), ("r1", "test"), ("r2", "train"), ("r3", "test")]


def write_out(root, precision, acc, losses, answers, isa=None):
    """A clef_example.py --out DIR with one seed (1)."""
    os.makedirs(os.path.join(root, "pkg"))
    os.makedirs(os.path.join(root, "run-seed1"))
    man = {"records": [{"id": r, "split": s, "questions": [
        {"id": "q", "options": ["a", "b"]}]} for r, s in RECORDS]}
    with open(os.path.join(root, "pkg", "package.json"), "w") as f:
        json.dump(man, f)
    comp = {"seeds": [1], "splits": {"train": 1, "validation": 0, "test": 3},
            "train": {"precision": precision, "clef_max_isa": isa},
            "models": [{"name": "joint head", "per_question": {
                "q": {"accuracy": {"values": [acc]}}}}]}
    with open(os.path.join(root, "comparison.json"), "w") as f:
        json.dump(comp, f)
    hist = [{"step": s, "train_loss": t, "validation_loss": v}
            for s, (t, v) in enumerate(losses)]
    with open(os.path.join(root, "run-seed1", "result.json"), "w") as f:
        json.dump({"history": hist}, f)
    with open(os.path.join(root, "run-seed1", "scores.jsonl"), "w") as f:
        for (rid, _), best in zip(RECORDS, answers):
            p = {"a": 0.9, "b": 0.1} if best == "a" else {"a": 0.2, "b": 0.8}
            f.write(json.dumps({"record": rid, "question": "q", "scores": [
                {"candidate_id": c, "probability": p[c]} for c in "ab"]})
                + "\n")


def compare(a, b, *extra):
    return subprocess.run([sys.executable, SCRIPT, a, b, *extra],
                          capture_output=True, text=True)


class PrecisionCompare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.a = os.path.join(self.tmp.name, "a")
        self.b = os.path.join(self.tmp.name, "b")

    def tearDown(self):
        self.tmp.cleanup()

    def test_band_answers_and_pass(self):
        write_out(self.a, "fp32", 0.800, [(1.0, 2.0), (0.5, 1.0)], "abab")
        # 10 % off at step 1 in train loss, 5 % in validation; r1 differs
        # (test), r2 differs too but is a train record and is not counted
        write_out(self.b, "bf16", 0.803, [(1.0, 2.0), (0.55, 1.05)], "aabb")
        r = compare(self.a, self.b)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("B: %s = bf16" % self.b, r.stdout)
        self.assertIn("train loss within 10.00 % (worst at step 1)", r.stdout)
        self.assertIn("validation loss within 5.00 % (step 1)", r.stdout)
        self.assertIn("same test answer 2 of 3", r.stdout)
        self.assertIn("B - A +0.30 points", r.stdout)

    def test_outside_the_bound_fails(self):
        write_out(self.a, "fp32", 0.800, [(1.0, 2.0)], "abab")
        write_out(self.b, "fp32", 0.794, [(1.0, 2.0)], "abab", isa="avx2")
        r = compare(self.a, self.b)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("fp32 (CLEF_MAX_ISA=avx2)", r.stdout)
        self.assertIn("B - A -0.60 points", r.stdout)
        self.assertIn("same test answer 3 of 3", r.stdout)
        self.assertEqual(compare(self.a, self.b, "--bound", "1").returncode, 0)

    def test_two_seeds_spread(self):
        for root, prec, accs in ((self.a, "fp32", [0.80, 0.80]),
                                 (self.b, "bf16", [0.81, 0.79])):
            write_out(root, prec, accs[0], [(1.0, 2.0)], "abab")
            shutil.copytree(os.path.join(root, "run-seed1"),
                            os.path.join(root, "run-seed2"))
            path = os.path.join(root, "comparison.json")
            comp = json.load(open(path))
            comp["seeds"] = [1, 2]
            comp["models"][0]["per_question"]["q"]["accuracy"]["values"] = accs
            json.dump(comp, open(path, "w"))
        r = compare(self.a, self.b)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("seed 2: 1 common evaluations", r.stdout)
        # per seed +1 and -1 points: mean 0, sd sqrt(2), se 1
        self.assertIn("B - A +0.00 points, sd 1.41, standard error 1.00 "
                      "(per seed +1.00 -1.00)", r.stdout)

    def test_different_seeds_refused(self):
        write_out(self.a, "fp32", 0.8, [(1.0, 2.0)], "abab")
        write_out(self.b, "bf16", 0.8, [(1.0, 2.0)], "abab")
        path = os.path.join(self.b, "comparison.json")
        comp = json.load(open(path))
        comp["seeds"] = [2]
        json.dump(comp, open(path, "w"))
        r = compare(self.a, self.b)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("differ in seeds or splits", r.stderr)


if __name__ == "__main__":
    unittest.main()

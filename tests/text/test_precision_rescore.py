"""bench/precision_rescore.py on a `clef fixture` package.

clef is $CLEF_BIN, else build/bin/clef (skipped with a reason when absent).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "bench", "precision_rescore.py")
CLEF = os.environ.get("CLEF_BIN") or os.path.join(ROOT, "build", "bin", "clef")
NVAL, NQ = 40, 2


def clef(*args):
    return subprocess.run([CLEF, *args], capture_output=True, text=True,
                          check=True).stdout


@unittest.skipUnless(os.access(CLEF, os.X_OK), "no clef binary at " + CLEF)
class PrecisionRescore(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name
        pkg = os.path.join(self.out, "pkg")
        clef("fixture", "--out", pkg, "--records", "4", "--validation",
             str(NVAL), "--questions", str(NQ), "--options", "3",
             "--hidden", "32", "--width", "16")
        self.run_dir = os.path.join(self.out, "run-seed1")
        os.makedirs(self.run_dir)
        w = os.path.join(self.run_dir, "weights.safetensors")
        shutil.copyfile(os.path.join(pkg, "init.safetensors"), w)
        self.scores = os.path.join(self.run_dir, "scores.jsonl")
        with open(self.scores, "w") as f:
            f.write(clef("score", "--weights", w, "--package",
                         os.path.join(pkg, "package.json"),
                         "--precision", "fp32"))
        with open(os.path.join(self.out, "comparison.json"), "w") as f:
            json.dump({"seeds": [1], "train": {"precision": "fp32"}}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def rescore(self, *extra):
        return subprocess.run([sys.executable, SCRIPT, self.out, "--split",
                               "validation", *extra], capture_output=True,
                              text=True, env={**os.environ, "CLEF_BIN": CLEF})

    def test_scored_again_in_bf16(self):
        r = self.rescore("--bound", "100")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("trained in fp32, scored again in bf16", r.stdout)
        self.assertRegex(r.stdout, r"seed 1: \d+ of %d answers change; "
                         r"q0 \d\.\d{4} -> \d\.\d{4}" % (NVAL * NQ))

    def test_same_precision_changes_nothing(self):
        r = self.rescore("--precision", "fp32")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("all seeds: 0 of %d answers change" % (NVAL * NQ),
                      r.stdout)

    def test_changed_answers_are_counted_and_bounded(self):
        # every kept answer moved to another option: each one now differs
        # from the new scoring, and the accuracies move by far more than 0.5
        lines = []
        with open(self.scores) as f:
            for line in f:
                r = json.loads(line)
                p = [s["probability"] for s in r["scores"]]
                best = p.index(max(p))
                p[best], p[best - 1] = p[best - 1], p[best]
                for s, x in zip(r["scores"], p):
                    s["probability"] = x
                lines.append(json.dumps(r))
        with open(self.scores, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = self.rescore("--precision", "fp32")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("all seeds: %d of %d answers change"
                      % (NVAL * NQ, NVAL * NQ), r.stdout)

    def test_split_without_labels_refused(self):
        r = self.rescore("--split", "test")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no labelled records in split test", r.stderr)


if __name__ == "__main__":
    unittest.main()

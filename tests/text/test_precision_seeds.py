"""bench/precision_seeds.py: a paired sweep of seeds on a `clef fixture`
package, its statistics and its verdicts.

clef is $CLEF_BIN, else build/bin/clef (skipped with a reason when absent).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BENCH = os.path.join(ROOT, "bench")
SCRIPT = os.path.join(BENCH, "precision_seeds.py")
CLEF = os.environ.get("CLEF_BIN") or os.path.join(ROOT, "build", "bin", "clef")
NVAL, NQ, SEEDS = 40, 2, 3

sys.path.insert(0, BENCH)
import precision_seeds as ps  # noqa: E402


class Statistics(unittest.TestCase):
    def test_t_quantiles(self):
        self.assertEqual(ps.t975(1), 12.706)
        self.assertEqual(ps.t975(30), 2.042)
        self.assertAlmostEqual(ps.t975(99), 1.984, delta=0.002)

    def test_interval(self):
        st = ps.stats([1.0, 2.0, 3.0])
        self.assertEqual(st["mean"], 2.0)
        self.assertAlmostEqual(st["sd"], 1.0)
        self.assertAlmostEqual(st["se"], 3 ** -0.5)
        self.assertAlmostEqual(st["ci95"][1] - 2.0, 4.303 * 3 ** -0.5)

    def test_median_and_signs(self):
        st = ps.stats([3.0, -1.0, 0.0, 2.0])
        self.assertEqual(st["median"], 1.0)
        self.assertEqual((st["above"], st["below"]), (2, 1))
        self.assertEqual(ps.stats([-2.0, 5.0, -1.0])["median"], -1.0)

    def test_verdicts(self):
        v = lambda d: ps.verdict(ps.stats(d), 0.5)  # noqa: E731
        self.assertEqual(v([0.1, -0.1, 0.05, -0.05, 0.0]), "within")
        self.assertEqual(v([1.0, 1.2, 0.8, 1.1]), "beyond")
        self.assertEqual(v([-1.0, -1.2, -0.8, -1.1]), "beyond")
        self.assertEqual(v([2.0, -2.0, 1.0, -1.0]), "unresolved")
        self.assertEqual(v([0.4, 0.7, 0.5]), "unresolved")
        self.assertEqual(v([0.0]), "unresolved")

    def test_sign_test(self):
        self.assertEqual(ps.sign_test(0, 0), 1.0)
        self.assertAlmostEqual(ps.sign_test(2, 7), 2 * (1 + 7 + 21) / 128)
        self.assertAlmostEqual(ps.sign_test(5, 7), 2 * (1 + 7 + 21) / 128)
        self.assertAlmostEqual(ps.sign_test(0, 10), 2 / 1024)
        self.assertEqual(ps.sign_test(3, 6), 1.0)


def clef(*args):
    return subprocess.run([CLEF, *args], capture_output=True, text=True,
                          check=True).stdout


@unittest.skipUnless(os.access(CLEF, os.X_OK), "no clef binary at " + CLEF)
class PairedSweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = cls.tmp.name
        cls.pkg = os.path.join(cls.out, "pkg", "package.json")
        clef("fixture", "--out", os.path.join(cls.out, "pkg"), "--records",
             "64", "--validation", str(NVAL), "--questions", str(NQ),
             "--options", "3", "--hidden", "32", "--width", "16")
        cls.first = cls.seeds()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def seeds(cls, *extra, out=None):
        return subprocess.run(
            [sys.executable, SCRIPT, out or cls.out, "--seeds", str(SEEDS),
             "--epochs", "1", "--patience", "0", "--split", "validation",
             "--bound", "100", *extra], capture_output=True, text=True,
            env={**os.environ, "CLEF_BIN": CLEF})

    def run_dir(self, seed, prec, out=None):
        return os.path.join(out or self.out, "seeds", "runs",
                            f"seed={seed},prec={prec}")

    def summary(self):
        with open(os.path.join(self.out, "seeds", "summary.json")) as f:
            return json.load(f)

    def test_every_seed_paired(self):
        r = self.first
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"{SEEDS} seeds, precision fp32 (A) against bf16 (B), "
                      f"validation split ({NVAL * NQ} answers per run; those "
                      "of 1 seeds checked against clef score)", r.stdout)
        self.assertRegex(r.stdout, r"q0 \(n = %d\): mean accuracy fp32 "
                         r"\d\.\d{4}, bf16 \d\.\d{4}; B - A [-+]\d+\.\d\d "
                         r"points \(sd .*95 %% interval .*: within" % NVAL)
        s = self.summary()
        self.assertEqual(s["seeds"], list(range(1, SEEDS + 1)))
        for q in ("q0", "q1"):
            self.assertEqual(len(s["questions"][q]["b_minus_a_points"]),
                             SEEDS)
        self.assertEqual(len(s["loss_gap"]["validation_loss"]), SEEDS)

    def test_accuracy_is_that_of_the_runs_weights(self):
        # seed 2's bf16 run scored here, independently of the script
        from precision_rescore import labelled
        lab = labelled(self.pkg, "validation")
        w = os.path.join(self.run_dir(2, "bf16"), "weights.safetensors")
        hit = {}
        for line in clef("score", "--weights", w, "--package", self.pkg,
                         "--precision", "bf16").splitlines():
            r = json.loads(line)
            k = (r["record"], r["question"])
            if k in lab:
                best = max(r["scores"], key=lambda x: x["probability"])
                hit.setdefault(k[1], []).append(best["candidate_id"] == lab[k])
        s = self.summary()
        for q, h in hit.items():
            self.assertEqual(len(h), NVAL)
            self.assertAlmostEqual(s["questions"][q]["accuracy"]["bf16"][1],
                                   sum(h) / NVAL)

    def test_seeds_differ(self):
        # the seed orders the bucketed batches: runs of different seeds
        # end with different weights
        ws = [hashlib.sha256(open(os.path.join(
            self.run_dir(s, "fp32"), "weights.safetensors"), "rb").read())
            .hexdigest() for s in (1, 2)]
        self.assertNotEqual(ws[0], ws[1])

    def test_learned_steps_from_the_histories(self):
        r = self.seeds("--no-run", "--learned", "q0=0.4", "--learned",
                       "q1=0", "--learned", "q1=1.01")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        got = {(L["question"], L["level"]): L for L in self.summary()["learned"]}
        self.assertEqual(len(got), 3)
        for prec in ("fp32", "bf16"):
            want = []
            for seed in range(1, SEEDS + 1):
                res = json.load(open(os.path.join(self.run_dir(seed, prec),
                                                  "result.json")))
                hit = [h["step"] for h in res["history"]
                       if h["validation_accuracy_per_question"]["q0"] >= 0.4]
                want.append(min(hit) if hit else None)
            self.assertEqual(got[("q0", 0.4)]["step"][prec], want)
            # every run has it at step 0; none ever reaches 1.01
            self.assertEqual(got[("q1", 0.0)]["step"][prec], [0] * SEEDS)
            self.assertEqual(got[("q1", 0.0)]["exported_before"][prec], [])
            self.assertEqual(got[("q1", 1.01)]["never"][prec], SEEDS)
            self.assertEqual(got[("q1", 1.01)]["exported_before"][prec],
                             list(range(1, SEEDS + 1)))
        self.assertEqual(got[("q1", 1.01)]["sign_test_p"], 1.0)
        self.assertIn("learning q1 (validation accuracy >= 1.01):\n"
                      "  never reached: fp32 3, bf16 3\n", r.stdout)
        bad = self.seeds("--no-run", "--learned", "q9=0.5")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--learned q9: no such question", bad.stderr)

    def test_rerun_resumes_and_beyond_fails(self):
        # on a copy: the other tests read the first sweep's files
        out = os.path.join(self.out, "copy")
        shutil.copytree(os.path.join(self.out, "pkg"),
                        os.path.join(out, "pkg"))
        shutil.copytree(os.path.join(self.out, "seeds"),
                        os.path.join(out, "seeds"))
        again = self.seeds("--no-run", out=out)
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        # the same analysis, less the sweep's own lines and the DIR
        tail = lambda r: r.stdout[r.stdout.index(  # noqa: E731
            f": {SEEDS} seeds, "):]
        self.assertEqual(tail(again), tail(self.first))
        # every fp32 answer made right and every bf16 answer wrong in the
        # runs' result.json: -100 points in each seed, beyond any bound
        from precision_rescore import labelled
        lab = labelled(self.pkg, "validation")
        for s in range(1, SEEDS + 1):
            for prec in ("fp32", "bf16"):
                path = os.path.join(self.run_dir(s, prec, out),
                                    "result.json")
                res = json.load(open(path))
                for r in res["records"]:
                    for q in r["questions"]:
                        right = lab.get((r["id"], q["id"]))
                        if right is None:
                            continue
                        wrong = [o for o in q["options"] if o != right][0]
                        q["predicted"] = right if prec == "fp32" else wrong
                with open(path, "w") as f:
                    json.dump(res, f)
        # seed 1's answers no longer those of its weights: the check stops
        chk = self.seeds("--no-run", out=out)
        self.assertNotEqual(chk.returncode, 0)
        self.assertIn("answers other than its result.json", chk.stderr)
        bad = self.seeds("--no-run", "--bound", "0.5", "--check", "0",
                         out=out)
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("B - A -100.00 points", bad.stdout)
        self.assertIn(": beyond", bad.stdout)
        self.assertIn(f"same answers per seed: 0-0 of {NVAL}", bad.stdout)


if __name__ == "__main__":
    unittest.main()

"""clef report: the HTML page of a run, loaded by headless Chromium.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/text -p 'test_report.py'

clef is $CLEF_BIN, else build/bin/clef (skipped with a reason when absent).
The work folder is <build dir>/test-report (kept after the run: the page and
its screenshot, printed, lie at stable paths there).
"""

import json
import os
import shutil
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLEF = os.environ.get("CLEF_BIN") or os.path.join(ROOT, "build", "bin", "clef")
CHROMIUM = os.environ.get("CLEF_CHROMIUM", "/usr/bin/chromium")
SECTIONS = ("summary", "loss", "accuracy", "confusion", "reliability",
            "comparison", "examples")
EVIL = '<script>alert("x")</script> & <b>bold</b>'


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True,
                          timeout=kw.pop("timeout", 60), **kw)


def stat(mean, sd, n=3):
    return {"mean": mean, "sd": sd, "values": [mean] * n}


def comparison():
    pq = lambda a: {"action": {"accuracy": stat(a, 0.02),  # noqa: E731
                               "macro_f1": stat(a - 0.05, 0.03),
                               "nll": stat(1.2 - a, 0.01),
                               "ece": stat(0.1, 0.01)},
                    "mode": {"accuracy": stat(1.0, 0.0)}}
    return {"task": "fixture", "title": "Fixture " + EVIL,
            "splits": {"train": 8, "validation": 4, "test": 0},
            "split_seed": 17,
            "questions": {"action": ["read", "clarify"], "mode": ["normal"]},
            "metrics": ["accuracy", "macro_f1", "nll", "ece"],
            "models": [{"name": "majority", "per_question": pq(0.5)},
                       {"name": "linear probe", "per_question": pq(0.6)},
                       {"name": "ffn probe", "per_question": pq(0.65)},
                       {"name": "joint head", "per_question": pq(0.75)}],
            "robustness": [
                {"variant": "original", "description": "as captured",
                 "model": "joint head",
                 "per_question": {"action": {"accuracy": stat(0.75, 0.02),
                                             "distractor_probability": None}}},
                {"variant": "distractor", "description": "a decoy option",
                 "model": "joint head",
                 "per_question": {"action": {
                     "accuracy": stat(0.7, 0.03),
                     "distractor_probability": stat(0.08, 0.01)}}}],
            "notes": ["synthetic numbers for the report test " + EVIL]}


@unittest.skipUnless(os.access(CLEF, os.X_OK),
                     "no clef binary at %s (build it, or set CLEF_BIN)" % CLEF)
class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(CLEF))), "test-report")
        shutil.rmtree(cls.work, ignore_errors=True)
        os.makedirs(cls.work)
        cls.pkg = os.path.join(cls.work, "pkg")
        cls.run_dir = os.path.join(cls.work, "run")
        r = run(CLEF, "fixture", "--out", cls.pkg, "--records", "8",
                "--validation", "4")
        assert r.returncode == 0, r.stderr
        r = run(CLEF, "train", "--package",
                os.path.join(cls.pkg, "package.json"), "--run-dir",
                cls.run_dir, "--epochs", "5", "--eval-every", "2", "--quiet")
        assert r.returncode == 0, r.stderr
        with open(os.path.join(cls.pkg, "package.json")) as f:
            manifest = json.load(f)
        with open(os.path.join(cls.pkg, "requests.jsonl"), "w") as f:
            for i, rec in enumerate(manifest["records"]):
                f.write(json.dumps({
                    "id": rec["id"], "split": rec["split"],
                    "state": "request %d: the user asks %s" % (i, EVIL),
                    "questions": [{"id": q["id"], "text": "what now, %s?"
                                   % q["id"], "options": q["options"]}
                                  for q in rec["questions"]],
                    "labels": {q["id"]: q["options"][q["label"]]
                               for q in rec["questions"]}}) + "\n")
        with open(os.path.join(cls.run_dir, "comparison.json"), "w") as f:
            json.dump(comparison(), f)
        cls.html = os.path.join(cls.run_dir, "R.html")
        cls.report = run(CLEF, "report", cls.run_dir, "--out", cls.html)

    def page(self):
        with open(self.html, encoding="utf-8") as f:
            return f.read()

    def test_exit_and_sections(self):
        self.assertEqual(self.report.returncode, 0, self.report.stderr)
        text = self.page()
        for s in SECTIONS:
            self.assertTrue('id="%s"' % s in text, "no section " + s)
        self.assertNotIn("http://", text)
        self.assertNotIn("https://", text)
        self.assertNotIn("<script", text)  # EVIL arrives escaped
        self.assertIn("&lt;script&gt;", text)
        srcs = [p.split('"', 1)[0] for p in text.split('src="')[1:]]
        self.assertGreaterEqual(len(srcs), 3)  # loss, confusion, reliability
        for s in srcs:
            self.assertTrue(s.startswith("data:image/png;base64,"), s[:40])
        self.assertNotIn("<link", text)
        # comparison, examples with text from requests.jsonl
        for word in ("linear probe", "joint head", "distractor",
                     "the user asks &lt;script&gt;", "what now, action?",
                     "\u2717 mistake"):
            self.assertTrue(word in text, "%r not in the page" % word)
        self.assertNotIn("not available (no comparison.json", text)
        # no temporaries left next to the page
        left = [n for n in os.listdir(self.run_dir) if ".tmp." in n]
        self.assertEqual(left, [])

    def test_default_out_and_new_fields(self):
        # a run dir with the fields clef train is gaining: early stopping,
        # validation accuracy per question, metrics.per_question
        d = os.path.join(self.work, "run-extended")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(self.run_dir, "result.json")) as f:
            res = json.load(f)
        for i, h in enumerate(res["history"]):
            h["validation_accuracy"] = 0.5 + 0.01 * i
            h["validation_accuracy_per_question"] = {"action": 0.5 + 0.01 * i,
                                                     "mode": 1.0}
        res["early_stopping"] = {"patience": 3, "min_delta": 0.0,
                                 "best_step": 10,
                                 "best_validation_loss": 0.3,
                                 "stopped_at_step": 16, "stopped_early": True}
        q = {"n": 4, "options": ["read", "clarify"], "accuracy": 0.75,
             "macro_f1": 0.73, "nll": 0.6, "ece": 0.1,
             "confusion": [[2, 0], [1, 1]]}
        res["metrics"]["per_question"] = {
            w: {"validation": {"action": q}} for w in ("before", "after")}
        with open(os.path.join(d, "result.json"), "w") as f:
            json.dump(res, f)
        r = run(CLEF, "report", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("stopped_at_step", text)
        self.assertIn("metrics.per_question.after.validation", text)
        self.assertIn('alt="validation accuracy per question over steps"',
                      text)
        self.assertIn("not available (no comparison.json", text)

    def test_bad_result_json(self):
        d = os.path.join(self.work, "run-bad")
        cases = {"missing": None, "corrupt": '{"status": "ok", "history": [',
                 "wrong type": '{"status": "ok", "history": [{"step": "x"}]}'}
        for name, content in cases.items():
            with self.subTest(name):
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                if content is not None:
                    with open(os.path.join(d, "result.json"), "w") as f:
                        f.write(content)
                before = sorted(os.listdir(d))
                r = run(CLEF, "report", d, "--out",
                        os.path.join(d, "R.html"))
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("result.json", r.stderr)
                if name == "wrong type":
                    self.assertIn("history[0].step", r.stderr)
                self.assertEqual(sorted(os.listdir(d)), before)
        r = run(CLEF, "report", os.path.join(self.work, "no-such-dir"))
        self.assertEqual(r.returncode, 2)

    @unittest.skipUnless(os.access(CHROMIUM, os.X_OK),
                         "no chromium at %s (apt-get install chromium)"
                         % CHROMIUM)
    def test_chromium_renders(self):
        self.assertEqual(self.report.returncode, 0, self.report.stderr)
        url = "file://" + os.path.abspath(self.html)
        shot = os.path.join(self.run_dir, "report-screenshot.png")
        if os.path.exists(shot):
            os.unlink(shot)
        flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                 "--user-data-dir=" + os.path.join(self.work, "chromium")]
        r = run(*flags, "--dump-dom", url, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        for s in SECTIONS:
            self.assertIn('id="%s"' % s, r.stdout)
        r = run(*flags, "--screenshot=" + shot, "--window-size=1280,3000",
                url, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertTrue(os.path.isfile(shot), "no screenshot written")
        print("\nscreenshot: %s" % shot, file=sys.stderr)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mpimg
        px = mpimg.imread(shot)[..., :3]
        self.assertEqual(px.shape[:2], (3000, 1280))
        self.assertGreater(float(px.var()), 0.005)
        nonwhite = float((px.min(axis=2) < 0.9).mean())
        self.assertGreater(nonwhite, 0.05)


if __name__ == "__main__":
    unittest.main()

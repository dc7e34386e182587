#!/usr/bin/env python3
"""tools/tally-trace against the timelines trace_run wrote at 3 ranks.

usage: test_trace.py TALLY_TRACE DIR

For each traced mutex (by-env through TALLY_TRACE, by-option through
options::trace) and each rank, the merged trace must hold as many critical-section
slices as the rank's acquisitions, as many marked local as its local acquisitions,
one REQUEST instant per broadcast, one "token out" per token sent and one
"token in" per token received, every token move a flow from sender to receiver.
Then the tool's errors: no traces (2), a rank's file missing (1).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOL, DIR = sys.argv[1], sys.argv[2]


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def expectations(folder, mutex):
    out = {}
    for path in glob.glob(os.path.join(folder, f"expect-{mutex}-rank*.json")):
        with open(path) as f:
            e = json.load(f)
        out[e["rank"]] = e
    return out


class Trace(unittest.TestCase):
    def check(self, folder, mutex):
        out = os.path.join(folder, "merged.json")
        r = run(folder, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{mutex}: 3 ranks", r.stdout)
        with open(out) as f:
            events = json.load(f)["traceEvents"]
        want = expectations(folder, mutex)
        self.assertEqual(sorted(want), [0, 1, 2])
        flows_s = [e for e in events if e["ph"] == "s"]
        flows_f = [e for e in events if e["ph"] == "f"]
        self.assertEqual(len(flows_s), len(flows_f))
        self.assertEqual(len(flows_s), sum(w["tokens_sent"] for w in want.values()))
        self.assertEqual(sorted(e["id"] for e in flows_s), sorted(e["id"] for e in flows_f))
        self.assertGreater(len(flows_s), 0, "no token ever moved: the run tested nothing")
        for rank, w in want.items():
            mine = [e for e in events if e.get("tid") == rank]
            cs = [e for e in mine if e["ph"] == "X" and e["name"] in ("critical section", "local re-entry")]
            local = [e for e in cs if e["name"] == "local re-entry"]
            requests = [e for e in mine if e["ph"] == "i" and e["name"].startswith("REQUEST")]
            outs = [e for e in mine if e["ph"] == "X" and e["name"].startswith("token out")]
            ins = [e for e in mine if e["ph"] == "X" and e["name"].startswith("token in")]
            self.assertEqual(len(cs), w["acquisitions"], f"rank {rank}")
            self.assertEqual(len(local), w["local_acquisitions"], f"rank {rank}")
            self.assertEqual(len(requests), w["broadcasts"], f"rank {rank}")
            self.assertEqual(len(outs), w["tokens_sent"], f"rank {rank}")
            self.assertEqual(len(ins), w["tokens_received"], f"rank {rank}")
            starts = [e["ts"] for e in cs]
            self.assertEqual(starts, sorted(starts), f"rank {rank}: slices out of order")
        # A flow goes from the token's sender to its receiver, after it was sent.
        by_id = {e["id"]: e for e in flows_s}
        for f_ in flows_f:
            s_ = by_id[f_["id"]]
            self.assertNotEqual(s_["tid"], f_["tid"])

    def test_by_environment(self):
        self.check(DIR, "by-env")

    def test_picture(self):
        with tempfile.TemporaryDirectory() as tmp:
            png = os.path.join(tmp, "timeline.png")
            r = run(DIR, "-o", os.path.join(tmp, "t.json"), "--png", png)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertGreater(os.path.getsize(png), 5000)

    def test_by_option(self):
        self.check(os.path.join(DIR, "by-option"), "by-option")

    def test_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(tmp)
            self.assertEqual(r.returncode, 2)
            self.assertIn("no tally-*-rank*.jsonl files", r.stderr)
            for path in glob.glob(os.path.join(DIR, "tally-by-env-rank*.jsonl")):
                shutil.copy(path, tmp)
            os.remove(os.path.join(tmp, "tally-by-env-rank1.jsonl"))
            r = run(tmp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no trace for rank(s) [1] of 3", r.stderr)
        r = run()
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]])

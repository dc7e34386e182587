#!/usr/bin/env python3
"""tools/tally-trace against the timelines trace_run wrote at 3 ranks.

usage: test_trace.py TALLY_TRACE DIR

For each traced mutex (by-env through TALLY_TRACE, by-option through
options::trace) and each rank, the merged trace must hold as many critical-section
slices as the rank's acquisitions, as many marked local as its local acquisitions,
one REQUEST instant per broadcast, one "token out" per token sent and one
"token in" per token received, every token move a flow from sender to receiver;
on one host every rank shares rank 0's clock and no move needs a correction.
Then the tool's errors: no traces (2), a rank's file missing (1). Correction runs
the merger on small traces written here: offsets applied linearly, backward moves
shifted forward by the least amount (cascading to later receivers), a cycle refused.
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
    return subprocess.run([TOOL, *args], capture_output=True, text=True)


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
        # One host, no skew: every rank reads rank 0's clock, and no move reads backward.
        self.assertRegex(r.stdout, rf"{mutex}: .*; clock: shared by every rank; 0 of (\d+) token moves read "
                                   r"backward and were corrected \(largest 0\.000 us")
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


def write_trace(folder, rank, size, events, samples=None, mutex="syn"):
    head = {"tally_trace": 2, "mutex": mutex, "rank": rank, "size": size, "events": len(events), "dropped": 0,
            "clock": {"source": "monotonic", "domain": 0 if samples is None else rank,
                      "samples": samples if samples is not None else [{"at": 0, "offset": 0, "rtt": 0}] * 2}}
    with open(os.path.join(folder, f"tally-{mutex}-rank{rank}.jsonl"), "w") as f:
        for line in [head] + [{"t": t, "ev": ev, "peer": peer, "seq": 0} for t, ev, peer in events]:
            f.write(json.dumps(line) + "\n")


class Correction(unittest.TestCase):
    def merge(self, folder):
        out = os.path.join(folder, "out.json")
        r = run(folder, "-o", out)
        if r.returncode != 0:
            return r, None
        with open(out) as f:
            return r, json.load(f)["traceEvents"]

    def test_backward_moves_shift_their_receivers(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Rank 1 reads the token 50 ns before rank 0 sent it; rank 0 then reads it
            # back at 400, before rank 1's send once shifted (420): a second shift of 20.
            write_trace(tmp, 0, 2, [(100, "enter", -1), (200, "exit", -1), (300, "token_out", 1),
                                    (350, "request", -1), (400, "token_in", 1), (410, "enter", -1),
                                    (500, "exit", -1)])
            write_trace(tmp, 1, 2, [(50, "request", -1), (250, "token_in", 0), (260, "enter", -1),
                                    (360, "exit", -1), (370, "token_out", 0)])
            r, ev = self.merge(tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("2 of 2 token moves read backward and were corrected (largest 0.050 us, "
                          "in all 0.070 us)", r.stdout)
            self.assertIn("clock: shared by every rank", r.stdout)
            cs = {(e["tid"], round(e["ts"] * 1000)): round(e["dur"] * 1000) for e in ev
                  if e["ph"] == "X" and e["name"] == "critical section"}
            # Times from rank 1's REQUEST at 50, which stays where it was: rank 1's
            # section moves from 260 to 310, rank 0's second from 410 to 430.
            self.assertEqual(cs, {(0, 50): 100, (1, 260): 100, (0, 380): 90})
            arrows = {e["id"]: e for e in ev if e["ph"] == "s"}
            for f_ in (e for e in ev if e["ph"] == "f"):
                self.assertGreaterEqual(f_["ts"], arrows[f_["id"]]["ts"])

    def test_offsets_apply_linearly(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_trace(tmp, 0, 2, [(1000, "token_out", 1), (900000, "enter", -1), (900001, "exit", -1)])
            # Rank 1's clock reads 1,000 ns behind rank 0's at 0 and 2,000 behind at
            # 1,000,000: its receive at 499,000 is 500,499 in rank 0's time (the
            # output counts from the first event, rank 0's send at 1,000).
            write_trace(tmp, 1, 2, [(499000, "token_in", 0), (499100, "enter", -1), (499200, "exit", -1)],
                        samples=[{"at": 0, "offset": 1000, "rtt": 10}, {"at": 1000000, "offset": 2000, "rtt": 10}])
            r, ev = self.merge(tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("0 of 1 token moves read backward", r.stdout)
            self.assertIn("rank 1's +1.000 us (+-0.005) then +2.000 us (+-0.005)", r.stdout)
            f_ = next(e for e in ev if e["ph"] == "f")
            self.assertAlmostEqual(f_["ts"] * 1000, 500499 - 1000, places=3)

    def test_several_domains_keep_one_summary_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_trace(tmp, 0, 3, [(1000, "token_out", 1)])
            write_trace(tmp, 1, 3, [(2000, "token_in", 0), (2100, "token_out", 2)],
                        samples=[{"at": 0, "offset": 0, "rtt": 10}] * 2)
            write_trace(tmp, 2, 3, [(3000, "token_in", 1)], samples=[{"at": 0, "offset": 0, "rtt": 20}] * 2)
            r, _ = self.merge(tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            line = r.stdout.splitlines()[0]
            # Its parts stay ';'-separated: the counts, the clock, the corrections.
            self.assertEqual(len(line.split("; ")), 3, line)
            self.assertIn("clock: 3 domains, offsets from rank 0 estimated: rank 1's +0.000 us (+-0.005) then "
                          "+0.000 us (+-0.005), rank 2's", line)

    def test_a_cycle_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_trace(tmp, 0, 2, [(10, "token_in", 1), (20, "token_out", 1)])
            write_trace(tmp, 1, 2, [(10, "token_in", 0), (20, "token_out", 0)])
            r, _ = self.merge(tmp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("wait on each other", r.stderr)

    def test_traces_without_clock_samples_merge(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_trace(tmp, 0, 2, [(300, "token_out", 1)], samples=[])
            write_trace(tmp, 1, 2, [(100, "token_in", 0), (110, "enter", -1), (120, "exit", -1)], samples=[])
            r, _ = self.merge(tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("no offsets measured", r.stdout)
            self.assertIn("1 of 1 token moves read backward and were corrected (largest 0.200 us", r.stdout)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]])

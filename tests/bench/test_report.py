#!/usr/bin/env python3
"""Tests of bench/report on a small fixture, a malformed file and a missing one.

usage: test_report.py PATH_TO_REPORT
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = None  # set from argv
FIXTURE = os.path.join(HERE, "report_fixture.json")
MALFORMED = os.path.join(HERE, "report_malformed.json")


def run(*args):
    return subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True,
                          timeout=120)


def rows(stdout, columns=11):
    """Rows of the table with `columns` cells, keyed by (transport, benchmark, lock)."""
    out = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == columns and cells[0] in ("shm", "tcp", "ucx", "default"):
            out[(cells[0], cells[2], cells[3])] = cells
    return out


class Report(unittest.TestCase):
    def test_table_and_plots(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run("--plots", tmp, FIXTURE)
            self.assertEqual(r.returncode, 0, r.stderr)
            t = rows(r.stdout)
            # Floor: one-way time per entry, the samples' mean (absent: –), counted size.
            self.assertEqual(t[("shm", "Floor", "floor")][4:11],
                             ["1.00 µs", "–", "990 ns", "1.50 µs", "1.00", "28.0", "–"])
            # Units converted (us -> ns), the samples' own mean, ratio carried over.
            self.assertEqual(t[("shm", "Handoff", "tally")][4:11],
                             ["1.25 µs", "1.22 µs", "1.20 µs", "3.10 µs", "1.50", "32.0", "1.25"])
            self.assertEqual(t[("shm", "Handoff", "win_lock")][10], "4.00")
            self.assertIn(("shm", "CsSweep(cs_ns=10000,think_ns=0)", "tally"), t)
            self.assertIn(("shm", "IdleHolder(compute_us=10)", "tally_thread"), t)
            self.assertIn("skipped: thread progress needs MPI_THREAD_MULTIPLE",
                          t[("shm", "Handoff", "tally_thread")][4])
            # Aggregates are not rows of their own: one Handoff<tally> row only.
            self.assertEqual(sum(1 for k in t if k[1:] == ("Handoff", "tally")), 1)
            # Floor first, then tally before the baselines.
            keys = [k for k in t]
            self.assertEqual(keys[0], ("shm", "Floor", "floor"))
            self.assertLess(keys.index(("shm", "Handoff", "tally")),
                            keys.index(("shm", "Handoff", "win_lock")))
            # The handoff table: contended benchmarks with handoff counters only.
            h = rows(r.stdout, columns=9)
            self.assertEqual(list(h), [("shm", "Handoff", "tally"), ("shm", "Handoff", "win_lock")])
            self.assertEqual(h[("shm", "Handoff", "tally")][4:9],
                             ["80%", "1.40 µs", "1.30 µs", "3.50 µs", "1.41"])
            self.assertEqual(h[("shm", "Handoff", "win_lock")][4], "10%")
            for png in ("handoff_vs_ranks.png", "remote_acquire_vs_ranks.png",
                        "cs_sweep_shm.png"):
                path = os.path.join(tmp, png)
                self.assertTrue(os.path.getsize(path) > 1000, png)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_summary(self):
        r = run(FIXTURE)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertLess(out.index("## Summary"), out.index("## Full tables"))
        summ = out[:out.index("## Full tables")]
        self.assertLess(len(summ.splitlines()), 60, "the summary must fit a screen")
        cells = {}
        for line in summ.splitlines():
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            if c[0] == "shm":
                cells.setdefault(c[2], []).append(c)
        # Against the floor (990 ns one-way): handoffs only, 1400 / 990; remote
        # acquire 2500 / 1980; local re-entry in ns; win_lock 20000 / 990.
        floor_row = cells["handoff"][0]
        self.assertEqual(floor_row[3:7], ["990 ns", "1.41× ✗", "–", "20.20×"])
        self.assertEqual(cells["remote acquire"][0][3:5], ["1.98 µs", "1.26× ✓"])
        self.assertEqual(cells["local re-entry (rank 1)"][0][3:5], ["–", "80 ns ✓"])
        # Against each peer: win_lock's handoff over tally's.
        self.assertEqual(cells["handoff"][1][3], "14.29")
        self.assertIn("Targets: 2 met, 1 missed:", summ)
        self.assertIn("- ✗ shm, 2 ranks: tally handoff 1.41 × floor (target ≤ 1.3 × floor)", summ)

    def test_full_tables_to_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            full = os.path.join(tmp, "full.md")
            r = run("--full", full, FIXTURE)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("## Summary", r.stdout)
            self.assertNotIn("| transport | ranks | benchmark |", r.stdout)
            self.assertIn("The full tables: full.md", r.stdout)
            with open(full, encoding="utf-8") as f:
                self.assertIn(("shm", "Handoff", "tally"), rows(f.read()))

    def test_oversubscribed_marked(self):
        with open(FIXTURE, encoding="utf-8") as f:
            doc = json.load(f)
        doc["context"].update(num_cpus=2, mpi_ranks="4")
        for b in doc["benchmarks"]:
            if "ranks" in b:
                b["ranks"] = 4
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "over.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            r = run("--plots", tmp, path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| shm | 4* | handoff |", r.stdout)
            self.assertIn(("shm", "Handoff", "tally"), rows(r.stdout))
            self.assertEqual(rows(r.stdout)[("shm", "Handoff", "tally")][1], "4*")
        with open(FIXTURE, encoding="utf-8") as f:
            doc = json.load(f)
        doc["context"].update(num_cpus=4)  # 2 ranks on 4 cores: not oversubscribed
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "fits.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            r = run(path)
            self.assertIn("| shm | 2 | handoff |", r.stdout)

    def test_below_floor_reasons(self):
        import importlib.machinery
        import importlib.util
        loader = importlib.machinery.SourceFileLoader("report", REPORT)
        report = importlib.util.module_from_spec(importlib.util.spec_from_loader("report", loader))
        loader.exec_module(report)
        base = {"transport": "shm", "nodes": 1, "ranks": 2, "cores": 2, "handoff_share": 1.0}
        why = report.below_floor_reason
        self.assertIn("no message", why(dict(base, kind="win_lock"), "handoff", 0.5))
        self.assertIn("shared memory", why(dict(base, kind="tally_node"), "handoff", 0.5))
        self.assertIn("re-entries", why(dict(base, kind="tally", handoff_share=0.6),
                                        "all entries", 0.5))
        self.assertIn("spread", why(dict(base, kind="tally"), "handoff", 0.9))
        self.assertIn("oversubscribed", why(dict(base, kind="tally", ranks=4), "handoff", 0.5))
        # Nothing explains a flat tally handoff at half the floor over TCP.
        self.assertIsNone(why(dict(base, kind="tally", transport="tcp"), "handoff", 0.5))
        self.assertIsNone(why(dict(base, kind="win_lock", transport="tcp"), "handoff", 0.5))

    def test_append_table(self):
        ctx = {"mpi_btl": "self,tcp", "mpi_pml": "ob1", "mpi_ranks": "3"}
        ok = {"name": "BM_SharedAppend<tally>/max_body:16/manual_time", "run_type": "iteration",
              "real_time": 5.0, "time_unit": "us", "ranks": 3, "msgs_per_entry": 2.5,
              "bytes_per_entry": 12, "p50_ns": 4000, "p99_ns": 9000,
              "items_per_second": 200000.0}
        bad = {"name": "BM_SharedAppend<write_shared>/max_body:16/manual_time",
               "run_type": "iteration", "error_occurred": True,
               "error_message": "file holds 10 bytes, 20 were appended (a gap or an overlap)"}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "append.json")
            with open(path, "w") as f:
                json.dump({"context": ctx, "benchmarks": [bad, ok]}, f)
            r = run(path)
            self.assertEqual(r.returncode, 0, r.stderr)
            t = {(c[0], c[2], c[3]): c for c in rows(r.stdout, columns=9).values()}
            self.assertEqual(t[("tcp", "16 B", "tally")][4:9],
                             ["200 k", "5.00 µs", "4.00 µs", "9.00 µs", "2.50"])
            self.assertIn("failed: file holds 10 bytes", t[("tcp", "16 B", "write_shared")][4])
            # Its own table only, not the latency table's.
            self.assertNotIn("SharedAppend", r.stdout.split("appends/s")[0])

    def test_nodes_kept_apart(self):
        run_ = {"name": "BM_Floor/manual_time", "run_type": "iteration", "real_time": 2.0,
                "time_unit": "us", "ranks": 2, "msgs_per_entry": 1, "bytes_per_entry": 28,
                "p50_ns": 1900, "p99_ns": 2500}
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for nodes in ("1", "2"):
                paths.append(os.path.join(tmp, f"n{nodes}.json"))
                with open(paths[-1], "w") as f:
                    json.dump({"context": {"mpi_pml": "ucx", "mpi_ranks": "2",
                                           "mpi_nodes": nodes}, "benchmarks": [run_]}, f)
            r = run(*paths)
            self.assertEqual(r.returncode, 0, r.stderr)
            firsts = [line.split("|")[1].strip() for line in r.stdout.splitlines()
                      if "| Floor |" in line]
            self.assertEqual(sorted(firsts), ["ucx", "ucx, 2 nodes"])

    def test_malformed_json(self):
        r = run(MALFORMED)
        self.assertEqual(r.returncode, 2)
        self.assertIn(MALFORMED, r.stderr)
        self.assertIn("not valid JSON", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_unwritable_plots_dir(self):
        with tempfile.TemporaryDirectory() as tmp:
            blocker = os.path.join(tmp, "a-file")
            open(blocker, "w").close()
            r = run("--plots", os.path.join(blocker, "plots"), FIXTURE)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("cannot write plots into", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_missing_file(self):
        missing = os.path.join(HERE, "no-such-file.json")
        r = run(FIXTURE, missing)
        self.assertEqual(r.returncode, 2)
        self.assertIn(missing, r.stderr)
        self.assertIn("cannot read", r.stderr)

    def test_wrong_structure(self):
        cases = {
            "not google benchmark": [1, 2, 3],
            "missing counter": {"context": {}, "benchmarks": [
                {"name": "BM_Handoff<tally>/manual_time", "run_type": "iteration",
                 "real_time": 1.0, "time_unit": "ns", "ranks": 2}]},
            "bad name": {"context": {}, "benchmarks": [
                {"name": "something else", "real_time": 1.0, "time_unit": "ns"}]},
            "empty": {"context": {}, "benchmarks": []},
        }
        with tempfile.TemporaryDirectory() as tmp:
            for what, doc in cases.items():
                path = os.path.join(tmp, what.replace(" ", "_") + ".json")
                with open(path, "w") as f:
                    json.dump(doc, f)
                r = run(path)
                self.assertEqual(r.returncode, 2, what)
                self.assertIn(path, r.stderr, what)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    REPORT = sys.argv.pop(1)
    unittest.main()

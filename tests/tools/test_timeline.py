#!/usr/bin/env python3
"""The timeline's time base end to end: runs trace_run, merges its traces, checks them.

usage: test_timeline.py TOOL DIR SKEW -- LAUNCH...

LAUNCH (an mpiexec line of trace_run DIR ..., possibly inside scripts/emu-cluster)
runs with TALLY_TRACE=DIR and TALLY_TRACE_SKEW=SKEW (FIRST[-LAST]:NS[:PPM], the
test aid that offsets and drifts the trace clocks of ranks FIRST..LAST, which must
not include rank 0; NS < 0 and PPM <= 0, so that a token they receive reads early). Then, for
each of trace_run's two mutexes, TOOL (tools/tally-trace) merges the traces, and:
  - the raw traces: every other rank shares rank 0's clock (domain 0, offset 0),
    and every token move between two such ranks already reads forward (the common
    monotonic clock needs no estimate); the skewed ranks share one domain and its
    first rank's estimate; some move into them (of either mutex) reads backward
    before the offset is applied (every rank enters, so the token reaches them:
    not vacuous);
  - the estimate: each of the domain's two samples (creation, free) is within
    half its round trip of the injected offset at that time (the bound the
    ping-pong proves);
  - the merged trace: no token arrow points backward, each rank's critical
    sections keep their lengths, and the summary line reports the moves corrected,
    none by more than twice the larger half round trip.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

SUMMARY = re.compile(r"^(?P<mutex>\S+): (?P<ranks>\d+) ranks, .*?(?P<tokens>\d+) token moves, .*; clock: "
                     r"(?P<clock>[^;]*); (?P<corrected>\d+) of (?P=tokens) token moves read backward and were "
                     r"corrected \(largest (?P<largest>[\d.]+) us, in all (?P<total>[\d.]+) us\)$", re.M)
SLACK_NS = 20  # rounding: integer midpoints, the drift's conversion to whole ns


def fail(msg):
    print(f"test_timeline: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def load(folder, mutex):
    heads, events = {}, {}
    for path in glob.glob(os.path.join(folder, f"tally-{mutex}-rank*.jsonl")):
        with open(path) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        heads[lines[0]["rank"]] = lines[0]
        events[lines[0]["rank"]] = lines[1:]
    return heads, events


def raw_moves(events):
    """(src, t_out, dst, t_in) of every token move, paired FIFO per pair of ranks."""
    outs, ins = {}, {}
    for r, evs in events.items():
        for e in evs:
            if e["ev"] == "token_out":
                outs.setdefault((r, e["peer"]), []).append(e["t"])
            elif e["ev"] == "token_in":
                ins.setdefault((e["peer"], r), []).append(e["t"])
    return [(s, to, d, ti) for (s, d), tis in ins.items() for to, ti in zip(outs.get((s, d), []), tis)]


def check_mutex(tool, folder, mutex, skewed, skew_ns, ppm):
    """skewed: the ranks whose clocks were skewed."""
    merged = os.path.join(folder, f"merged-{mutex}.json")
    r = subprocess.run([tool, folder, "-o", merged], capture_output=True, text=True)
    check(r.returncode == 0, f"{mutex}: tally-trace exited {r.returncode}: {r.stderr}")
    m = next((m for m in SUMMARY.finditer(r.stdout) if m["mutex"] == mutex), None)
    check(m is not None, f"{mutex}: no summary line with the corrections in:\n{r.stdout}")
    print(r.stdout.strip())
    heads, events = load(folder, mutex)
    size = int(m["ranks"])
    check(sorted(heads) == list(range(size)), f"{mutex}: traces of ranks {sorted(heads)} of {size}")

    # The raw traces and the estimate.
    moves = raw_moves(events)
    check(len(moves) == int(m["tokens"]) and moves, f"{mutex}: {len(moves)} token moves in the raw traces, "
          f"{m['tokens']} merged: nothing to test if none")
    half_rtt = 0
    for rank, h in heads.items():
        samples = h["clock"]["samples"]
        check(len(samples) == 2, f"{mutex} rank {rank}: {len(samples)} clock samples, want creation and free")
        if rank not in skewed:
            check(h["clock"]["domain"] == 0 and all(s["offset"] == 0 and s["rtt"] == 0 for s in samples),
                  f"{mutex} rank {rank}: not in rank 0's clock domain: {h['clock']}")
            continue
        lead = min(skewed)
        check(h["clock"]["domain"] == lead, f"{mutex} rank {rank}: skewed, yet in domain {h['clock']['domain']}")
        if rank != lead:
            check(samples == heads[lead]["clock"]["samples"], f"{mutex} rank {rank}: not rank {lead}'s estimate")
            continue
        inj = h["clock"]["injected_skew"]
        check(inj["ns"] == skew_ns and inj["ppm"] == ppm, f"{mutex}: injected {inj}, want {skew_ns} ns {ppm} ppm")
        for which, s in zip(("creation", "free"), samples):
            # at is skewed local time, at = m + NS + PPM * 1e-6 * m for the monotonic m.
            m_at = (s["at"] - skew_ns) / (1 + ppm * 1e-6)
            want = -(skew_ns + ppm * 1e-6 * m_at)
            err = s["offset"] - want
            print(f"{mutex}: rank {rank} offset at {which}: {s['offset']} ns, injected {-want:.0f} ns, "
                  f"error {err:+.0f} ns, tolerance (half the round trip) {s['rtt'] / 2:.0f} ns")
            check(abs(err) <= s["rtt"] / 2 + SLACK_NS + abs(ppm) * 1e-6 * s["rtt"],
                  f"{mutex}: offset at {which} off by {err:.0f} ns, more than half its round trip {s['rtt']} ns")
            half_rtt = max(half_rtt, s["rtt"] / 2)
    common = [x for x in moves if x[0] not in skewed and x[2] not in skewed]
    backward = [x for x in common if x[3] < x[1]]
    check(not backward, f"{mutex}: {len(backward)} of {len(common)} moves between ranks of one clock read "
          f"backward: {backward[:3]}")
    into = [x for x in moves if x[0] not in skewed and x[2] in skewed]
    check(into, f"{mutex}: no token moved into the skewed ranks {sorted(skewed)}: nothing to test")
    raw_backward = [x for x in into if x[3] < x[1]]
    print(f"{mutex}: raw traces: {len(raw_backward)} of {len(into)} moves into ranks {sorted(skewed)} backward, "
          f"0 of {len(common)} between ranks of rank 0's clock")

    # The merged trace.
    with open(merged) as f:
        out = json.load(f)["traceEvents"]
    starts = {e["id"]: e for e in out if e["ph"] == "s"}
    flows = [(starts[e["id"]], e) for e in out if e["ph"] == "f"]
    check(len(flows) == len(moves), f"{mutex}: {len(flows)} arrows for {len(moves)} moves")
    back = [(s, f_) for s, f_ in flows if f_["ts"] < s["ts"]]
    check(not back, f"{mutex}: {len(back)} arrows still point backward: {back[:2]}")
    for rank, evs in events.items():
        # A critical section's length in rank 0's time: its own, scaled by the drift
        # the two samples give (exactly 1 on rank 0's clock).
        a, b = heads[rank]["clock"]["samples"]
        rate = 1 + (b["offset"] - a["offset"]) / (b["at"] - a["at"]) if b["at"] != a["at"] else 1
        lengths = []
        enter = None
        for e in evs:
            if e["ev"] == "enter":
                enter = e["t"]
            elif e["ev"] == "exit" and enter is not None:
                lengths.append((e["t"] - enter) * rate / 1000)
                enter = None
        slices = sorted((e for e in out if e["ph"] == "X" and e.get("tid") == rank and
                         e["name"] in ("critical section", "local re-entry")), key=lambda e: e["ts"])
        got = [e["dur"] for e in slices]
        check(len(got) == len(lengths) and all(abs(g - max(w, 0.001)) < 0.01 for g, w in zip(got, lengths)),
              f"{mutex} rank {rank}: critical sections changed length in the merge")
    corrected, largest = int(m["corrected"]), float(m["largest"]) * 1000
    check(largest <= 2 * half_rtt + SLACK_NS + 1, f"{mutex}: a correction of {largest:.0f} ns, more than the "
          f"estimate's error can explain (2 x {half_rtt:.0f} ns)")
    print(f"{mutex}: merged: 0 of {len(flows)} arrows backward, {corrected} moves corrected, largest "
          f"{largest:.0f} ns")
    return len(raw_backward)


def main(argv):
    if len(argv) < 5 or argv[3] != "--":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tool, folder, skew, launch = argv[0], argv[1], argv[2], argv[4:]
    parts = skew.split(":")
    first, _, last = parts[0].partition("-")
    skewed = set(range(int(first), int(last or first) + 1))
    skew_ns, ppm = int(parts[1]), float(parts[2]) if len(parts) > 2 else 0.0
    check(0 not in skewed and skew_ns < 0 and ppm <= 0, f"SKEW {skew}: rank 0 skewed, or NS or PPM positive")
    shutil.rmtree(folder, ignore_errors=True)
    env = dict(os.environ, TALLY_TRACE=folder, TALLY_TRACE_SKEW=skew)
    r = subprocess.run(launch, env=env)
    check(r.returncode == 0, f"the run exited {r.returncode}")
    backward = check_mutex(tool, folder, "by-env", skewed, skew_ns, ppm)
    backward += check_mutex(tool, os.path.join(folder, "by-option"), "by-option", skewed, skew_ns, ppm)
    # A move into a skewed rank reads backward unless it took longer than the skew:
    # one of them at least must show it (a token reaches every rank of each mutex).
    check(backward > 0, "no move into the skewed ranks read backward before correction: the skew did not show")
    print("test_timeline: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

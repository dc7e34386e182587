#!/usr/bin/env python3
"""Merge tally's per-rank timelines into one Chrome/Perfetto trace.

usage: tally-trace DIR [-o OUT.json] [--png OUT.png]

DIR holds the files a run with TALLY_TRACE=DIR (or options::trace) wrote at free():
tally-<mutex>-rank<k>.jsonl, one per rank and mutex. The output (default
DIR/trace.json) is Chrome trace-event JSON: one process per mutex, one track per
rank; each critical section is a slice ("critical section", or "local re-entry"
when it cost no message), REQUESTs are instants, and every token move is a flow
arrow from the sending rank's "token out" to the receiving rank's "token in".
Open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing.
With --png, also draws a small picture of the first mutex's first 40 critical
sections (needs matplotlib): a row per rank, critical sections as bars (hatched:
local re-entries), token moves as arrows, REQUESTs as ticks.

Times are rank 0's: each rank's clock offset, measured at creation and at free
(docs/design.md, "Timeline"), is applied linearly between the two; then any token
that still reads as received before it was sent moves its receiver's later events
forward by the least amount that restores the order. Prints one summary line per
mutex, with the clock offsets found and the moves corrected. Exit status: 0, 1 if
a mutex's files are inconsistent (a rank missing, a token received that nobody
sent), 2 for a usage error or a directory without traces.
"""
import glob
import json
import os
import re
import sys

FILE = re.compile(r"^tally-(?P<mutex>.+)-rank(?P<rank>\d+)\.jsonl$")


class TraceError(Exception):
    pass


def load(path):
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not lines or lines[0].get("tally_trace") not in (1, 2):
        raise TraceError(f"{path}: not a tally trace (no header line)")
    return lines[0], lines[1:]


def offset_of(head):
    """The function from a rank's clock to rank 0's: the offsets measured at creation
    and at free, linear between (and beyond) them; one sample: constant; none (a
    rank 0 of its own domain, or not every rank traced): zero."""
    samples = head.get("clock", {}).get("samples", [])
    if len(samples) >= 2 and samples[1]["at"] != samples[0]["at"]:
        a, b = samples[0], samples[1]
        slope = (b["offset"] - a["offset"]) / (b["at"] - a["at"])
        return lambda t: a["offset"] + slope * (t - a["at"])
    if samples:
        return lambda t, o=samples[0]["offset"]: o
    return lambda t: 0


def restore_order(times, moves):
    """times: {rank: [t, ...]} in each rank's own order; moves: [(src, i, dst, j)], the
    token src sent at its i-th event arrived at dst's j-th. Where a receive reads
    earlier than its send, shifts the receiving rank's events from the receive on by
    the least amount that puts it at its send (the forward pass of a controlled
    logical clock): each rank's own intervals stay as they were, but for the gap
    before a shifted receive. Returns (the times, the shifts made)."""
    sent_by = {(d, j): (s, i) for s, i, d, j in moves}
    final = {r: [None] * len(ts) for r, ts in times.items()}
    cursor = dict.fromkeys(times, 0)
    shift = dict.fromkeys(times, 0)
    shifts = []
    advanced = True
    while advanced:
        advanced = False
        for r, ts in times.items():
            while cursor[r] < len(ts):
                k = cursor[r]
                t = ts[k] + shift[r]
                if (r, k) in sent_by:
                    s, i = sent_by[(r, k)]
                    sent = final[s][i]
                    if sent is None:
                        break  # its send is not placed yet
                    if t < sent:
                        shifts.append(sent - t)
                        shift[r] += sent - t
                        t = sent
                final[r][k] = t
                cursor[r] += 1
                advanced = True
    stuck = sorted(r for r in times if cursor[r] < len(times[r]))
    if stuck:
        raise TraceError(f"the token moves of rank(s) {stuck} wait on each other: no order of "
                         "events puts every receive after its send")
    return final, shifts


def describe_clock(heads):
    """One phrase: which ranks' offsets were estimated, and how well."""
    if any(not h.get("clock", {}).get("samples") for h in heads.values()):
        return "clock: no offsets measured (not every rank traced): order restored from the messages alone"
    leaders = sorted({h["clock"]["domain"] for h in heads.values()})
    if leaders == [0]:
        return "clock: shared by every rank"
    parts = []
    for d in leaders:
        if d == 0:
            continue
        ss = heads[d]["clock"]["samples"]
        parts.append(f"rank {d}'s " + " then ".join(
            f"{x['offset'] / 1000:+.3f} us (+-{x['rtt'] / 2000:.3f})" for x in ss))
    more = f" and {len(parts) - 4} more" if len(parts) > 4 else ""
    return f"clock: {len(leaders)} domains, offsets from rank 0 estimated: {', '.join(parts[:4])}{more}"


def merge(files, pid):
    """files: {rank: path} of one mutex; pid: its process id in the output.
    Returns (chrome events, summary dict)."""
    heads, evs = {}, {}
    for rank, path in sorted(files.items()):
        heads[rank], evs[rank] = load(path)
    size = next(iter(heads.values()))["size"]
    name = next(iter(heads.values()))["mutex"]
    missing = sorted(set(range(size)) - set(heads))
    if missing:
        raise TraceError(f"mutex {name!r}: no trace for rank(s) {missing} of {size}")
    # Rank 0's time base, then the token moves: channels are FIFO per pair, so the
    # k-th token src sent to dst is the k-th dst received from src.
    times = {}
    for rank, events in evs.items():
        to_ref = offset_of(heads[rank])
        times[rank] = [e["t"] + to_ref(e["t"]) for e in events]
    sent, received = {}, {}  # (src, dst) -> [event index]
    for rank, events in evs.items():
        for k, e in enumerate(events):
            if e["ev"] == "token_out":
                sent.setdefault((rank, e["peer"]), []).append(k)
            elif e["ev"] == "token_in":
                received.setdefault((e["peer"], rank), []).append(k)
    moves = []
    for (src, dst), ins in sorted(received.items()):
        outs = sent.get((src, dst), [])
        if len(ins) > len(outs):
            raise TraceError(f"mutex {name!r}: rank {dst} received {len(ins)} token(s) from rank {src}, "
                             f"which sent {len(outs)}")
        moves += [(src, i, dst, j) for i, j in zip(outs, ins)]
    try:
        times, shifts = restore_order(times, moves)
    except TraceError as e:
        raise TraceError(f"mutex {name!r}: {e}") from None
    origin = min((t for ts in times.values() for t in ts), default=0)

    out = [{"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"tally {name}"}}]
    us = lambda t: (t - origin) / 1000.0  # noqa: E731
    summary = {"mutex": name, "ranks": size, "entries": 0, "local": 0, "requests": 0, "tokens": len(moves),
               "dropped": sum(h["dropped"] for h in heads.values()), "corrected": len(shifts),
               "largest": max(shifts, default=0), "shifted": sum(shifts), "clock": describe_clock(heads)}
    for rank, events in evs.items():
        out.append({"ph": "M", "pid": pid, "tid": rank, "name": "thread_name", "args": {"name": f"rank {rank}"}})
        out.append({"ph": "M", "pid": pid, "tid": rank, "name": "thread_sort_index", "args": {"sort_index": rank}})
        entered = None
        for e, t in zip(events, times[rank]):
            ev = e["ev"]
            if ev == "enter":
                entered = (e, t)
            elif ev == "exit" and entered is not None:
                local = entered[0]["seq"] == 1
                summary["entries"] += 1
                summary["local"] += 1 if local else 0
                out.append({"ph": "X", "pid": pid, "tid": rank, "ts": us(entered[1]),
                            "dur": max((t - entered[1]) / 1000.0, 0.001),
                            "name": "local re-entry" if local else "critical section",
                            "args": {"messages": 0 if local else "token"}})
                entered = None
            elif ev == "request":
                summary["requests"] += 1
                out.append({"ph": "i", "s": "t", "pid": pid, "tid": rank, "ts": us(t),
                            "name": f"REQUEST {e['seq']}"})
        if entered is not None:  # held at the end of the trace (freed while held)
            summary["entries"] += 1
            summary["local"] += 1 if entered[0]["seq"] == 1 else 0
    for flow, (src, i, dst, j) in enumerate(moves, 1):
        t_out, t_in = us(times[src][i]), us(times[dst][j])
        out.append({"ph": "X", "pid": pid, "tid": src, "ts": t_out, "dur": 0.5,
                    "name": f"token out → rank {dst}"})
        out.append({"ph": "s", "pid": pid, "tid": src, "ts": t_out, "id": f"{pid}-{flow}",
                    "name": "token", "cat": "token"})
        out.append({"ph": "X", "pid": pid, "tid": dst, "ts": t_in, "dur": 0.5,
                    "name": f"token in ← rank {src}"})
        out.append({"ph": "f", "bp": "e", "pid": pid, "tid": dst, "ts": t_in, "id": f"{pid}-{flow}",
                    "name": "token", "cat": "token"})
    return out, summary


def picture(events, path, first=40):
    """A small timeline of the first mutex: its first `first` critical sections."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TraceError(f"--png needs matplotlib, which {sys.executable} lacks "
                         "(Debian: python3-matplotlib)") from None
    pid = min((e["pid"] for e in events if e["ph"] == "X"), default=None)
    if pid is None:
        raise TraceError("--png: no critical section in the traces")
    mine = [e for e in events if e.get("pid") == pid]
    cs = sorted((e for e in mine if e["ph"] == "X" and e["name"] in
                 ("critical section", "local re-entry")), key=lambda e: e["ts"])[:first]
    t0, t1 = cs[0]["ts"], max(e["ts"] + e.get("dur", 0) for e in cs)
    ranks = sorted({e["tid"] for e in mine if "tid" in e})
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(ranks) + 1.6))
    for e in cs:
        ax.broken_barh([(e["ts"] - t0, max(e.get("dur", 0), 0.05))], (e["tid"] - 0.3, 0.6),
                       facecolors="C0" if e["name"] == "critical section" else "C2",
                       hatch=None if e["name"] == "critical section" else "///")
    for e in mine:
        if e["ph"] == "i" and t0 <= e["ts"] <= t1:
            ax.plot([e["ts"] - t0] * 2, [e["tid"] - 0.4, e["tid"] + 0.4], color="C3", lw=0.8)
    starts = {e["id"]: e for e in mine if e["ph"] == "s"}
    for f in mine:
        s = starts.get(f.get("id")) if f["ph"] == "f" else None
        if s and t0 <= s["ts"] <= t1:
            ax.annotate("", xy=(f["ts"] - t0, f["tid"]), xytext=(s["ts"] - t0, s["tid"]),
                        arrowprops={"arrowstyle": "->", "color": "C1", "lw": 1})
    ax.set_yticks(ranks)
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.set_ylim(max(ranks) + 0.8, min(ranks) - 0.8)
    ax.set_xlabel("µs since the first entry shown")
    name = next((e["args"]["name"] for e in mine if e.get("name") == "process_name"), "tally")
    ax.set_title(f"{name}: the first {len(cs)} critical sections (bars; hatched: local "
                 "re-entry), token moves (arrows), REQUESTs (red ticks)", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def take_option(args, flag):
    """Removes `flag FILE` from args and returns FILE; None if flag is absent, False if
    it has no file name (the message is printed)."""
    if flag not in args:
        return None
    i = args.index(flag)
    if i + 1 >= len(args):
        print(f"tally-trace: {flag} needs a file name", file=sys.stderr)
        return False
    value = args[i + 1]
    del args[i:i + 2]
    return value


def main(argv):
    args = list(argv)
    png_path = take_option(args, "--png")
    if png_path is False:
        return 2
    out_path = take_option(args, "-o")
    if out_path is False:
        return 2
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(args) != 1 else sys.stdout)
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    folder = args[0]
    by_mutex = {}
    for path in sorted(glob.glob(os.path.join(folder, "tally-*-rank*.jsonl"))):
        m = FILE.match(os.path.basename(path))
        if m:
            by_mutex.setdefault(m["mutex"], {})[int(m["rank"])] = path
    if not by_mutex:
        print(f"tally-trace: no tally-*-rank*.jsonl files in {folder} (run with TALLY_TRACE={folder})",
              file=sys.stderr)
        return 2
    events, status = [], 0
    for pid, (mutex, files) in enumerate(sorted(by_mutex.items()), 1):
        try:
            ev, s = merge(files, pid)
        except (TraceError, ValueError, KeyError) as e:
            print(f"tally-trace: {e}", file=sys.stderr)
            status = 1
            continue
        events += ev
        print(f"{s['mutex']}: {s['ranks']} ranks, {s['entries']} entries ({s['local']} local), "
              f"{s['requests']} REQUEST broadcasts, {s['tokens']} token moves, {s['dropped']} events dropped; "
              f"{s['clock']}; {s['corrected']} of {s['tokens']} token moves read backward and were "
              f"corrected (largest {s['largest'] / 1000:.3f} us, in all {s['shifted'] / 1000:.3f} us)")
    out_path = out_path or os.path.join(folder, "trace.json")
    try:
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)
    except OSError as e:
        print(f"tally-trace: cannot write {out_path}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {out_path}")
    if png_path:
        try:
            picture(events, png_path)
        except TraceError as e:
            print(f"tally-trace: {e}", file=sys.stderr)
            return 1
        except OSError as e:
            print(f"tally-trace: cannot write {png_path}: {e.strerror}", file=sys.stderr)
            return 1
        print(f"wrote {png_path}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

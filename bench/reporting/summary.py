"""bench/reporting/summary.py — the one-screen summary: each lock over the floor of
its run, tally against each peer, and the targets of docs/benchmarks.md."""
import math

from .tables import fmt_time, ranks_cell

TALLIES = ["tally", "tally_thread", "tally_node"]
PEERS = ["win_lock", "rma_mcs", "lock_server", "ricart_agrawala"]
# The summary's metrics: (name, benchmark, its arguments, floor: one-way x factor).
METRICS = [("handoff", "Handoff", (), 1), ("remote acquire", "RemoteAcquire", (), 2),
           ("local re-entry", "LocalReacquire", (("rank", "1"),), None)]


def metric_value(row, metric):
    """The figure the summary and plots compare: handoffs only for Handoff (entries
    that moved the lock), the turns away from rank 0 for RemoteAcquire (the
    centralized baselines' home), the rate for LocalReacquire (no clock read inside)."""
    keys = {"handoff": ("handoff_ns", "sample_mean_ns", "mean"),
            "remote acquire": ("sample_mean_ns", "away_ns", "mean"),
            "local re-entry": ("mean",), "all entries": ("sample_mean_ns", "mean")}[metric]
    for k in keys:
        v = row.get(k, math.nan)
        if v is not None and not math.isnan(v):
            return v
    return math.nan


def _vs(peers, *kinds):
    """All the named peers are present and at least 1.3 x slower."""
    return all(k in peers for k in kinds) and all(peers[k] >= 1.3 for k in kinds)


# The targets of docs/benchmarks.md (and issue 15's for tally_node), checked here
# only: (lock, metric, one node only?, text, test(value ns, floor ns, peer ÷ lock)).
TARGETS = [
    ("tally", "handoff", False, "≤ 1.3 × floor", lambda v, f, p: v <= 1.3 * f),
    ("tally_thread", "handoff", False, "≤ 1.3 × floor", lambda v, f, p: v <= 1.3 * f),
    ("tally_node", "handoff", True, "≤ 0.5 × floor and ≥ 1.3 × faster than win_lock and rma_mcs",
     lambda v, f, p: v <= 0.5 * f and _vs(p, "win_lock", "rma_mcs")),
    ("tally_node", "handoff", False, "≤ 1.2 × floor (between nodes)",
     lambda v, f, p: v <= 1.2 * f),
    ("tally", "remote acquire", False, "≤ 1.3 × floor", lambda v, f, p: v <= 1.3 * f),
    ("tally_thread", "remote acquire", False, "≤ 1.3 × floor", lambda v, f, p: v <= 1.3 * f),
    ("tally", "local re-entry", False, "≤ 100 ns", lambda v, f, p: v <= 100),
    ("tally_thread", "local re-entry", False, "≤ 100 ns", lambda v, f, p: v <= 100),
]


def target_for(kind, metric, nodes):
    for t in TARGETS:
        if t[0] == kind and t[1] == metric:
            if kind == "tally_node" and metric == "handoff" and t[2] != (nodes == 1):
                continue
            return t
    return None


def summary(rows):
    """One screen: per transport and rank count, each lock against the floor and tally
    against each peer, the targets marked. Returns (markdown, number of targets missed)."""
    ok = [r for r in rows if not r["error"]]
    configs = sorted({(r["transport"], r["ranks"]) for r in ok})
    kinds = [k for k in TALLIES + PEERS if any(r["kind"] == k for r in ok)]
    tallies = [k for k in ("tally", "tally_node") if k in kinds]
    peers = [k for k in PEERS if k in kinds]
    a = ["| transport | ranks | metric | floor | " + " | ".join(kinds) + " |",
         "|---|---:|---|---:|" + "---:|" * len(kinds)]
    b = ["| transport | ranks | metric | " + " | ".join(
        f"{p} ÷ {t}" for p in peers for t in tallies) + " |",
         "|---|---:|---|" + "---:|" * (len(peers) * len(tallies))]
    missed, met, dagger = [], 0, False
    for transport, ranks in configs:
        here = [r for r in ok if r["transport"] == transport and r["ranks"] == ranks]
        fl = [r["p50_ns"] for r in here if r["bench"] == "Floor"]
        one_way = fl[0] if fl and not math.isnan(fl[0]) else None
        for metric, bench, args, factor in METRICS:
            vals = {}
            for r in here:
                if r["bench"] == bench and r["args"] == args:
                    vals[r["kind"]] = metric_value(r, metric)
            if not any(k in vals for k in kinds):
                continue
            row0 = next(r for r in here if r["bench"] == bench)
            floor = one_way * factor if (one_way and factor) else None
            cells = []
            for k in kinds:
                v = vals.get(k, math.nan)
                if math.isnan(v):
                    cells.append("–")
                    continue
                cell = f"{v / floor:.2f}×" if floor else fmt_time(v)
                all_entries = metric == "handoff" and any(
                    r["kind"] == k and r["bench"] == bench and math.isnan(r["handoff_ns"])
                    for r in here)
                if all_entries:
                    cell += "†"
                    dagger = True
                t = target_for(k, metric, row0["nodes"])
                if t and (floor or factor is None) and not all_entries:
                    vs = {p: vals[p] / v for p in peers if p in vals and v > 0}
                    good = t[4](v, floor, vs)
                    cell += " ✓" if good else " ✗"
                    if good:
                        met += 1
                    else:
                        got = f"{v / floor:.2f} × floor" if floor else fmt_time(v)
                        extra = ""
                        if "faster than" in t[3]:
                            extra = "; " + ", ".join(f"{p} ÷ {k} = {vs[p]:.2f}"
                                                     for p in ("win_lock", "rma_mcs") if p in vs)
                        missed.append(f"- ✗ {transport}, {ranks_cell(row0)} ranks: {k} {metric} "
                                      f"{got}{extra} (target {t[3]})")
                cells.append(cell)
            label = metric + (" (rank 1)" if metric == "local re-entry" else "")
            a.append(f"| {transport} | {ranks_cell(row0)} | {label} | "
                     f"{fmt_time(floor) if floor else '–'} | " + " | ".join(cells) + " |")
            bc = []
            for p in peers:
                for t in tallies:
                    pv, tv = vals.get(p, math.nan), vals.get(t, math.nan)
                    bc.append("–" if math.isnan(pv) or math.isnan(tv) or tv <= 0
                              else f"{pv / tv:.2f}")
            b.append(f"| {transport} | {ranks_cell(row0)} | {label} | " + " | ".join(bc) + " |")
    text = ["## Summary", "",
            "Each lock's figure over the floor measured in the same run (lower is better; "
            "✓/✗: target met or missed):", ""] + a + [
            "", "tally against each peer, peer's time ÷ tally's (> 1: tally is faster):", ""] + b + [
            "", SUMMARY_LEGEND] + (
            ["†: all entries, re-entries included (across nodes there is no one clock to "
             "tell handoffs apart), so no target is checked."] if dagger else []) + ["",
            f"Targets: {met} met, {len(missed)} missed" + (":" if missed else ".")] + missed
    return "\n".join(text), len(missed)


SUMMARY_LEGEND = """\
handoff: the mean gap between consecutive entries by different ranks (re-entries by
the same rank, which need no message, left out) over the one-way floor. remote
acquire: mean lock() of an idle lock last held by another rank, turns of ranks other
than rank 0 (the centralized baselines' home), over the round-trip floor. local
re-entry: rank 1 alone, time per lock+unlock. floor: the median of BM_Floor's
one-way message of the same run (x 2 for a round trip). *: oversubscribed, more ranks
than cores: the timings there mean little. Targets: docs/benchmarks.md; the full
tables follow."""

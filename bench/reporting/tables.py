"""bench/reporting/tables.py — the full tables: every result, the contended
benchmarks' handoffs, the ordered append; with their legends."""
import math
import os

from .rows import order_key, oversubscribed

def fmt_time(ns):
    """Three significant digits: 512 ns, 1.25 µs, 12.5 µs, 125 µs, 1.25 ms."""
    if ns is None or math.isnan(ns):
        return "–"
    if ns < 999.5:
        return f"{ns:.0f} ns"
    for scale, unit in ((1e3, "µs"), (1e6, "ms"), (1e9, "s")):
        v = ns / scale
        if v < 999.5 or unit == "s":
            return f"{v:.2f} {unit}" if v < 9.995 else f"{v:.1f} {unit}" if v < 99.95 \
                else f"{v:.0f} {unit}"
    return f"{ns:.0f} ns"


def fmt_num(v, digits=2):
    if v is None or math.isnan(v):
        return "–"
    return f"{v:.{digits}f}"


def fmt_share(v):
    """Percent, with a decimal below 1% so that a few handoffs do not read as none."""
    return f"{100 * v:.1f}%" if 0 < v < 0.01 else f"{100 * v:.0f}%"


def bench_label(row):
    args = ",".join(f"{k}={v}" for k, v in row["args"])
    return f"{row['bench']}({args})" if args else row["bench"]


def ranks_cell(row):
    return f"{row['ranks']}*" if oversubscribed(row) else str(row["ranks"])


def table(rows):
    out = ["| transport | ranks | benchmark | lock | time/entry | mean | p50 | p99 | msgs/entry "
           "| bytes/entry | × floor |",
           "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=order_key):
        if r["bench"] == "SharedAppend":
            continue  # append_table
        if r["error"]:
            out.append(f"| {r['transport']} | {ranks_cell(r)} | {bench_label(r)} | {r['kind']} "
                       f"| skipped: {r['error']} | | | | | | |")
            continue
        out.append("| " + " | ".join([
            r["transport"], ranks_cell(r), bench_label(r), r["kind"], fmt_time(r["mean"]),
            fmt_time(r["sample_mean_ns"]), fmt_time(r["p50_ns"]), fmt_time(r["p99_ns"]),
            fmt_num(r["msgs_per_entry"]), fmt_num(r["bytes_per_entry"], 1),
            fmt_num(r["ratio_floor"])]) + " |")
    return "\n".join(out)


def handoff_table(rows):
    """Contended benchmarks: the entries where the lock moved to another rank."""
    picked = [r for r in rows if not r["error"] and r["bench"] in ("Handoff", "CsSweep")
              and not math.isnan(r.get("handoff_share", math.nan))]
    if not picked:
        return ""
    out = ["| transport | ranks | benchmark | lock | handoffs | handoff mean | handoff p50 "
           "| handoff p99 | × floor |",
           "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in sorted(picked, key=order_key):
        out.append("| " + " | ".join([
            r["transport"], ranks_cell(r), bench_label(r), r["kind"],
            fmt_share(r["handoff_share"]), fmt_time(r["handoff_ns"]),
            fmt_time(r["handoff_p50_ns"]), fmt_time(r["handoff_p99_ns"]),
            fmt_num(r["ratio_handoff"])]) + " |")
    return "\n".join(out)


def append_table(rows):
    """BM_SharedAppend: appends per second of the whole job, per appender."""
    picked = [r for r in rows if r["bench"] == "SharedAppend"]
    if not picked:
        return ""
    out = ["| transport | ranks | max body | appender | appends/s | mean | p50 | p99 "
           "| msgs/append |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in sorted(picked, key=order_key):
        body = dict(r["args"]).get("max_body", "?")
        if r["error"]:
            out.append(f"| {r['transport']} | {ranks_cell(r)} | {body} B | {r['kind']} "
                       f"| failed: {r['error']} | | | | |")
            continue
        rate = r["items_per_second"]
        out.append("| " + " | ".join([
            r["transport"], ranks_cell(r), f"{body} B", r["kind"],
            "–" if math.isnan(rate) else f"{rate / 1e3:,.0f} k",
            fmt_time(r["mean"]), fmt_time(r["p50_ns"]), fmt_time(r["p99_ns"]),
            fmt_num(r["msgs_per_entry"])]) + " |")
    return "\n".join(out)


APPEND_LEGEND = """\
Ordered append to one shared file (BM_SharedAppend): records of 24 header bytes plus
1..max body bytes, every rank appending. appends/s: of the whole job. mean: time per
append of the job; p50/p99: one append's latency (offset agreed and record written).
msgs/append: counted sends and RMA operations (MPI-IO's own traffic is not counted).
See docs/benchmarks.md."""


def describe(path, ctx):
    keys = [("mpi_library", ""), ("mpi_btl", "btl "), ("mpi_pml", "pml "), ("mpi_osc", "osc "),
            ("ucx_tls", "UCX_TLS "), ("mpi_ranks", "ranks "), ("mpi_nodes", "nodes "),
            ("date", "")]
    parts = [f"{label}{ctx[k]}" for k, label in keys if ctx.get(k, "default") != "default"]
    return f"- `{os.path.basename(path)}`: " + ", ".join(str(p) for p in parts)


LEGEND = """\
time/entry: Google Benchmark's time per iteration (manual time, agreed over ranks).
mean, p50, p99: of one set of per-entry samples from the same pass (Handoff, CsSweep:
gaps between consecutive entries; RemoteAcquire: lock() of the turns away from rank
0; LocalReacquire: a sampling pass, one clock read each). msgs/entry, bytes/entry:
counted sends and RMA operations of all ranks per critical-section entry. × floor:
time/entry over the median of the floor of the same run, one-way for Handoff and
CsSweep, round trip for RemoteAcquire and IdleHolder. *: oversubscribed (more ranks
than cores). See docs/benchmarks.md."""

HANDOFF_LEGEND = """\
Contended benchmarks, gaps between consecutive critical-section entries (one node, one
clock): handoffs = share of gaps where the next entry is by another rank (the rest are
re-entries by the same rank); handoff mean/p50/p99 over those gaps only; × floor =
handoff mean over the one-way floor's median."""

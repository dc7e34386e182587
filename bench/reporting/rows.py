"""bench/reporting/rows.py — tally_bench JSON files as rows, one per result.

load(path) returns (context, rows) or raises InputError naming the file and the
problem; a row is a dict: file, transport, bench, kind, args, error, cores, nodes,
ranks, mean and the benchmark's counters (NaN where a result lacks one).
"""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
import transports  # noqa: E402  (scripts/lib/transports.tsv, the one table)

BENCH_ORDER = ["Floor", "Handoff", "RemoteAcquire", "LocalReacquire", "CsSweep", "IdleHolder",
               "SharedAppend"]
KIND_ORDER = ["floor", "tally", "tally_thread", "tally_node", "win_lock", "rma_mcs", "lock_server",
              "ricart_agrawala", "write_shared", "fetch_and_op"]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
GB_NAME_KEYS = {"iterations", "repeats", "min_time", "min_warmup_time", "threads"}


def separate_benchmarks():
    """The benchmarks with tables of their own, not lock entries (no messages per
    entry), which this report leaves out: scripts/lib/bench.sh's list."""
    path = os.path.join(transports.LIB, "bench.sh")
    with open(path, encoding="utf-8") as f:
        m = re.search(r"^tally_bench_separate=\(([^)]*)\)$", f.read(), re.M)
    if not m:
        raise ValueError(f"{path}: no tally_bench_separate=(...) line")
    return tuple(m.group(1).split())


SEPARATE = separate_benchmarks()
NAME_RE = re.compile(r"^BM_(?P<bench>\w+?)(?:<(?P<kind>\w+)>)?$")


class InputError(Exception):
    """Bad input: the message names the file and the problem."""


def transport_of(ctx):
    """The transport's name (scripts/lib/transports.tsv), from the run's own label or
    its Open MPI settings; "(MPICH)" is added for MPICH runs, so the two MPIs stay
    apart."""
    name = str(ctx.get("transport", "default"))
    if name == "default":
        name = transports.name_of(str(ctx.get("mpi_pml", "default")), str(ctx.get("mpi_btl", "default")))
    if "MPICH" in str(ctx.get("mpi_library", "")):
        name += " (MPICH)"
    return name


def parse_name(path, name):
    parts = name.split("/")
    m = NAME_RE.match(parts[0])
    if not m:
        raise InputError(f"{path}: benchmark name {name!r} is not a tally_bench name")
    args = []
    for p in parts[1:]:
        if p in ("manual_time", "real_time") or ":" not in p:
            continue
        key, _, value = p.partition(":")
        if key not in GB_NAME_KEYS:
            args.append((key, value))
    kind = m.group("kind") or ("floor" if m.group("bench") == "Floor" else "-")
    return m.group("bench"), kind, tuple(args)


def number(path, where, run, key, required=True):
    v = run.get(key)
    if v is None and not required:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"{path}: {where}: {key!r} is missing or not a number")
    return float(v)


def load(path):
    """Rows of one tally_bench JSON file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") \
            from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) \
            or not isinstance(doc.get("context"), dict):
        raise InputError(f"{path}: not Google Benchmark JSON output "
                         "(expected an object with 'context' and 'benchmarks')")
    ctx = doc["context"]
    transport = transport_of(ctx)
    try:
        cores = int(ctx.get("num_cpus", 0))
    except (TypeError, ValueError):
        cores = 0
    try:
        nodes = int(ctx.get("mpi_nodes", 1))
    except (TypeError, ValueError):
        nodes = 1
    if nodes > 1:  # keep multi-node runs apart from one-node runs at the same rank count
        transport += f", {nodes} nodes"
    rows = []
    for i, run in enumerate(doc["benchmarks"]):
        where = f"benchmarks[{i}]"
        if not isinstance(run, dict) or not isinstance(run.get("name"), str):
            raise InputError(f"{path}: {where}: not a benchmark result with a name")
        if run.get("run_type", "iteration") != "iteration":
            continue  # aggregates of --benchmark_repetitions
        bench, kind, args = parse_name(path, run["name"])
        if bench in SEPARATE:
            continue
        row = {"file": path, "transport": transport, "bench": bench, "kind": kind, "args": args,
               "error": None, "cores": cores, "nodes": max(nodes, 1)}
        if run.get("error_occurred"):
            row["error"] = str(run.get("error_message", "error"))
            try:
                row["ranks"] = int(ctx.get("mpi_ranks", 0))
            except (TypeError, ValueError):
                row["ranks"] = 0
            rows.append(row)
            continue
        unit = run.get("time_unit", "ns")
        if unit not in UNIT_NS:
            raise InputError(f"{path}: {where}: unknown time_unit {unit!r}")
        row["mean"] = number(path, where, run, "real_time") * UNIT_NS[unit]
        row["ranks"] = int(number(path, where, run, "ranks"))
        for key in ("p50_ns", "p99_ns", "msgs_per_entry", "bytes_per_entry", "ratio_floor",
                    "floor_ns", "handoff_share", "handoff_ns", "handoff_p50_ns", "handoff_p99_ns",
                    "ratio_handoff", "items_per_second", "sample_mean_ns", "away_ns"):
            row[key] = number(path, where, run, key, required=False)
        for key in ("msgs_per_entry", "bytes_per_entry"):
            if math.isnan(row[key]):
                raise InputError(f"{path}: {where}: {key!r} is missing or not a number")
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no benchmark results")
    return ctx, rows


def order_key(row):
    b = BENCH_ORDER.index(row["bench"]) if row["bench"] in BENCH_ORDER else len(BENCH_ORDER)
    k = KIND_ORDER.index(row["kind"]) if row["kind"] in KIND_ORDER else len(KIND_ORDER)
    args = tuple((key, int(v) if v.isdigit() else v) for key, v in row["args"])
    return (row["transport"], row["ranks"], b, args, k, row["kind"])


def oversubscribed(row):
    """More ranks on a node than the machine has cores (the context's num_cpus)."""
    return row["cores"] > 0 and row["ranks"] > row["cores"] * row["nodes"]

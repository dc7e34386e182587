#!/usr/bin/env python3
"""Checks one tally Slurm result folder (RESULTS/<jobid>/ with bench.json and env.json).

Exit 0 when every check holds, 1 with one line per failed check otherwise.
"""
import argparse
import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
import transports  # noqa: E402  (scripts/lib/transports.tsv, the one table)

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
TRANSPORTS = transports.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder")
    ap.add_argument("--job", required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--transport", required=True)
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--tcp-if", default="")
    ap.add_argument("--expect", action="append", default=[],
                    help="a benchmark name prefix that must be present (repeatable)")
    ap.add_argument("--ranks-key", action="append", default=[],
                    help="a context key or per-benchmark field that holds the rank count")
    ap.add_argument("--node-names", default="",
                    help="comma-separated: env.json's node_list must be exactly these")
    ap.add_argument("--nodes-key", default="",
                    help="a context key that holds the node count")
    ap.add_argument("--mca-context", action="store_true",
                    help="the context's mpi_pml/mpi_btl/mpi_osc must match the transport")
    ap.add_argument("--mpich", action="store_true",
                    help="tally_bench is MPICH's: no MCA parameters, MPICH's launchers")
    a = ap.parse_args()

    errors = []

    def check(cond, msg):
        if not cond:
            errors.append(msg)
        return cond

    jobid = os.path.basename(os.path.normpath(a.folder))
    try:
        with open(os.path.join(a.folder, "env.json")) as f:
            env = json.load(f)
        with open(os.path.join(a.folder, "bench.json")) as f:
            bench = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{a.folder}: {e}")
        return 1

    # --- env.json ------------------------------------------------------------------
    check(env.get("schema") == "tally-slurm-env/1", f"env.schema = {env.get('schema')!r}")
    check(env.get("job_id") == jobid, f"env.job_id {env.get('job_id')!r} != folder {jobid!r}")
    check(env.get("job") == a.job, f"env.job {env.get('job')!r} != {a.job!r}")
    check(env.get("status") == "ok" and env.get("exit_status") == 0,
          f"env.status {env.get('status')!r}, exit_status {env.get('exit_status')!r}")
    check(env.get("nodes") == a.nodes, f"env.nodes {env.get('nodes')!r} != {a.nodes}")
    check(isinstance(env.get("node_list"), list) and len(env["node_list"]) == a.nodes,
          f"env.node_list {env.get('node_list')!r} does not name {a.nodes} node(s)")
    if a.node_names:
        check(env.get("node_list") == a.node_names.split(","),
              f"env.node_list {env.get('node_list')!r} != {a.node_names.split(',')}")
    check(env.get("ranks") == a.ranks, f"env.ranks {env.get('ranks')!r} != {a.ranks}")
    check(env.get("transport") == a.transport,
          f"env.transport {env.get('transport')!r} != {a.transport!r}")
    check(env.get("launcher") == a.launcher,
          f"env.launcher {env.get('launcher')!r} != {a.launcher!r}")
    want_mca = {} if a.mpich else transports.mca(TRANSPORTS[a.transport])
    if a.tcp_if and not a.mpich:
        want_mca["btl_tcp_if_include"] = a.tcp_if
    mca = env.get("mca", {})
    for k, v in want_mca.items():
        check(mca.get(k) == v, f"env.mca[{k}] {mca.get(k)!r} != {v!r}")
    if a.mpich:  # MPICH takes environment variables, never MCA parameters
        check(mca == {}, f"env.mca {mca!r} is not empty for MPICH")
    if a.transport == "tcp" and not a.mpich:
        want_tls = TRANSPORTS["tcp"]["ucx_tls"]
        check(env.get("ucx_tls") == want_tls, f"env.ucx_tls {env.get('ucx_tls')!r} != {want_tls!r}")
    flavor = "mpich" if a.mpich else "openmpi"
    check(env.get("mpi_flavor") == flavor, f"env.mpi_flavor {env.get('mpi_flavor')!r} != {flavor!r}")
    check(bool(env.get("mpi_version")) and env.get("mpi_version") != "unknown",
          f"env.mpi_version {env.get('mpi_version')!r}")
    if a.mpich:
        check(str(env.get("mpi_version", "")).startswith("MPICH"), f"env.mpi_version {env.get('mpi_version')!r}")
    for k in ("start", "end"):
        check(isinstance(env.get(k), str) and ISO.match(env[k]) is not None,
              f"env.{k} {env.get(k)!r} is not an ISO 8601 UTC time")
    cmd = env.get("command", [])
    # MPICH's mpirun is its hydra mpiexec (Debian: mpiexec.mpich).
    program = {"mpirun": ["mpiexec.mpich", "mpiexec"]}.get(a.launcher, [a.launcher]) if a.mpich else [a.launcher]
    check(isinstance(cmd, list) and cmd[:1] and cmd[0] in program, f"env.command {cmd!r}")
    if a.mpich and a.launcher == "srun":
        check("--mpi=pmi2" in cmd, f"env.command {cmd!r} does not use srun --mpi=pmi2")

    # --- bench.json ----------------------------------------------------------------
    runs = [b for b in bench.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    check(len(runs) > 0, "bench.json has no benchmark runs")
    names = [b.get("name", "") for b in runs]
    for prefix in a.expect:
        check(any(n.startswith(prefix) for n in names),
              f"no benchmark named {prefix}* in {names}")
    for b in runs:
        n = b.get("name", "?")
        check(b.get("error_occurred") is not True, f"{n}: error {b.get('error_message')!r}")
        check(isinstance(b.get("iterations"), int) and b["iterations"] > 0,
              f"{n}: iterations {b.get('iterations')!r}")
        rt = b.get("real_time")
        check(isinstance(rt, (int, float)) and math.isfinite(rt) and rt > 0,
              f"{n}: real_time {rt!r} is not a positive number")
        for k, v in b.items():
            if isinstance(v, float):
                check(math.isfinite(v) and v >= 0, f"{n}: {k} = {v!r}")

    # Rank count as the benchmark itself saw it (MPI_Comm_size), if it reports it.
    ctx = bench.get("context", {})
    seen = False
    for key in a.ranks_key:
        if key in ctx:
            seen = True
            check(int(ctx[key]) == a.ranks, f"context.{key} = {ctx[key]!r} != {a.ranks}")
        for b in runs:
            if key in b:
                seen = True
                check(int(b[key]) == a.ranks, f"{b.get('name')}: {key} = {b[key]!r} != {a.ranks}")
    if a.ranks_key:
        check(seen, f"bench.json reports no rank count under {a.ranks_key}")

    if a.mpich:
        check("MPICH" in str(ctx.get("mpi_library", "")), f"context.mpi_library = {ctx.get('mpi_library')!r}")
    if a.nodes_key:
        check(a.nodes_key in ctx and str(ctx[a.nodes_key]) == str(a.nodes),
              f"context.{a.nodes_key} = {ctx.get(a.nodes_key)!r} != {a.nodes}")
    if a.mca_context:
        # What the ranks themselves saw in their environment.
        for k, v in want_mca.items():
            if k in ("pml", "btl", "osc"):
                check(ctx.get("mpi_" + k) == v, f"context.mpi_{k} = {ctx.get('mpi_' + k)!r} != {v!r}")

    for e in errors:
        print(f"{a.folder}: {e}")
    if not errors:
        print(f"{a.folder}: ok ({len(runs)} runs, {a.ranks} ranks, {a.transport}, {a.launcher})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

# shellcheck shell=bash
# Common body of tally's Slurm batch scripts (sourced by jobs/*.sbatch, never run).
#
# Contract: the caller has set TALLY_JOB (a short job kind, e.g. "handoff") and may
# set TALLY_DEFAULT_FILTER. Sourcing this file sets TALLY_ROOT, the checkout it lives
# in (Slurm runs a copy of the batch script from its spool, so the batch script
# finds this file by tally_root_of_job below). tally_job_main then runs
# tally_bench once across the allocation and leaves, in $TALLY_RESULTS/$SLURM_JOB_ID/:
#   bench.json  Google Benchmark JSON written by rank 0 (--benchmark_out)
#   env.json    the run's environment: MPI, nodes, ranks, transport, launcher, dates,
#               git commit, exit status (rewritten at the end, also on failure)
#
# Variables read (all optional; defaults in brackets):
#   TALLY_TRANSPORT   ucx | tcp | shm+tcp | shm | auto                [ucx]
#   TALLY_TCP_IF      interface(s) or CIDR(s) for TCP, comma-separated [Open MPI's choice]
#   TALLY_LAUNCHER    srun | mpirun (MPICH: its mpiexec, hydra)       [srun]
#   TALLY_SRUN_MPI    srun --mpi plugin        [pmix; pmi2 for an MPICH tally_bench]
#   TALLY_LAUNCH_ARGS extra launcher arguments, split on whitespace    []
#   TALLY_BENCH       path of tally_bench           [$TALLY_ROOT/build/bench/tally_bench]
#   TALLY_BENCH_FILTER  Google Benchmark --benchmark_filter regex      [TALLY_DEFAULT_FILTER]
#                     (TALLY_FILTER, its name until 2026-12-07, is still read)
#   TALLY_BENCH_ARGS  extra tally_bench arguments, split on whitespace []
#   TALLY_RESULTS     results root                                     [$TALLY_ROOT/results]
# The MPI is the one tally_bench is linked against (libmpi: Open MPI, libmpich:
# MPICH); TALLY_MPI_FLAVOR=openmpi|mpich overrides. It picks the transport's
# settings (scripts/lib/transport.sh), srun's default plugin and mpirun's program.

TALLY_ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/transport.sh
source "$TALLY_ROOT/scripts/lib/transport.sh"
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/bench.sh
source "$TALLY_ROOT/scripts/lib/bench.sh"

# Exits 2 with a message; once the results folder exists, env.json records the failure.
tally_die() {
  printf 'tally job: error: %s\n' "$*" >&2
  tally_record_exit 2
  exit 2
}

# Rewrites env.json with a final exit status, when there is a results folder.
tally_record_exit() {
  if [[ -n "${TALLY_ENV_READY:-}" ]]; then
    TALLY_END=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    tally_write_env "$1" || true
  fi
}

tally_log() {
  printf 'tally job: %s\n' "$*" >&2
}

# JSON string literal for $1.
tally_json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/\\r}
  s=${s//[[:cntrl:]]/}
  printf '"%s"' "$s"
}

# JSON array of string literals for the arguments.
tally_json_arr() {
  local sep='' x
  printf '['
  for x in "$@"; do
    printf '%s' "$sep"
    tally_json_str "$x"
    sep=', '
  done
  printf ']'
}

# Sets the global array TALLY_MCA (name=value pairs) from TALLY_TRANSPORT, through
# the one transport table (scripts/lib/transport.sh).
tally_select_transport() {
  if [[ "$TALLY_TRANSPORT" == shm ]] && ((SLURM_JOB_NUM_NODES > 1)); then
    tally_die "TALLY_TRANSPORT=shm needs a single node, this job has $SLURM_JOB_NUM_NODES"
  fi
  local why
  why=$(tally_transport "$TALLY_TRANSPORT" "${TALLY_TCP_IF:-}" 2>&1 >/dev/null) || tally_die "$why"
  tally_transport "$TALLY_TRANSPORT" "${TALLY_TCP_IF:-}"
  if [[ -n "${TALLY_TCP_IF:-}" && "$TALLY_TRANSPORT" != tcp && "$TALLY_TRANSPORT" != shm+tcp ]]; then
    tally_log "warning: TALLY_TCP_IF is ignored with TALLY_TRANSPORT=$TALLY_TRANSPORT"
  fi
}

# Sets the global array TALLY_LAUNCH (the launcher command line without the program).
tally_select_launcher() {
  local -a extra=()
  if [[ -n "${TALLY_LAUNCH_ARGS:-}" ]]; then
    read -r -a extra <<<"$TALLY_LAUNCH_ARGS"
  fi
  case "$TALLY_LAUNCHER" in
    srun)
      command -v srun >/dev/null || tally_die "srun not found in PATH"
      local plugins
      plugins=$(srun --mpi=list 2>&1) || true
      if ! grep -qwF -- "$TALLY_SRUN_MPI" <<<"$plugins"; then
        tally_die "this Slurm has no MPI plugin '$TALLY_SRUN_MPI' (see 'srun --mpi=list');" \
          "set TALLY_SRUN_MPI to one it lists, or TALLY_LAUNCHER=mpirun"
      fi
      # Open MPI reads MCA parameters from OMPI_MCA_* in each rank's environment.
      tally_mca_export
      TALLY_LAUNCH=(srun "--mpi=$TALLY_SRUN_MPI" --kill-on-bad-exit=1
        "--ntasks=$SLURM_NTASKS" "${extra[@]}")
      ;;
    mpirun)
      local mpirun
      mpirun=$(tally_mpirun_program)
      command -v "$mpirun" >/dev/null || tally_die "$mpirun not found in PATH (load your MPI module)"
      # mpirun (Open MPI's, or MPICH's hydra) takes nodes and slots from the Slurm
      # allocation.
      local -a mca_args
      mapfile -t mca_args < <(MPIEXEC=$mpirun tally_mca_args)
      TALLY_LAUNCH=("$mpirun" -n "$SLURM_NTASKS" "${mca_args[@]}" "${extra[@]}")
      ;;
    *)
      tally_die "TALLY_LAUNCHER='$TALLY_LAUNCHER' is not one of srun, mpirun"
      ;;
  esac
}

# The MPI of tally_bench: openmpi, mpich or other ($TALLY_MPI_FLAVOR wins).
tally_bench_flavor() {
  if [[ -n "${TALLY_MPI_FLAVOR:-}" ]]; then
    printf '%s\n' "$TALLY_MPI_FLAVOR"
    return
  fi
  case "$(basename -- "$(tally_mpi_library)")" in
    libmpich.so*) echo mpich ;;
    libmpi.so*) echo openmpi ;;
    *) echo other ;;
  esac
}

# The launcher program TALLY_LAUNCHER=mpirun runs: MPICH's own where tally_bench is
# MPICH's (Debian names it mpiexec.mpich; mpirun may be Open MPI's).
tally_mpirun_program() {
  if [[ "$TALLY_MPI_FLAVOR" == mpich ]]; then
    if command -v mpiexec.mpich >/dev/null; then echo mpiexec.mpich; else echo mpiexec; fi
  else
    echo mpirun
  fi
}

tally_mpi_version() {
  local v=''
  if [[ "$TALLY_MPI_FLAVOR" == mpich ]]; then
    v=$("$(tally_mpirun_program)" --version 2>/dev/null | sed -n 's/^ *Version: *//p' | sed -n 1p) || v=''
    printf '%s' "${v:+MPICH $v}"
    [[ -n "$v" ]] || printf unknown
    return
  fi
  if command -v ompi_info >/dev/null; then
    v=$(ompi_info --version 2>/dev/null | sed -n 1p) || v=''
  fi
  if [[ -z "$v" ]] && command -v mpirun >/dev/null; then
    v=$(mpirun --version 2>/dev/null | sed -n 1p) || v=''
  fi
  printf '%s' "${v:-unknown}"
}

# The MPI library tally_bench is linked against, as resolved on this node.
tally_mpi_library() {
  ldd "$TALLY_BENCH" 2>/dev/null | awk '!found && $1 ~ /^libmpi(ch)?\.so/ { print $3; found = 1 }' || true
}

# Writes env.json (atomically). $1: "running" or the benchmark's exit status.
tally_write_env() {
  local status=$1 tmp="$TALLY_OUT/.env.json.tmp" kv
  local -a nodes=() mca_json=()
  if command -v scontrol >/dev/null; then
    mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null || true)
  fi
  ((${#nodes[@]} > 0)) || nodes=("$SLURM_JOB_NODELIST")
  for kv in "${TALLY_MCA[@]}"; do
    mca_json+=("$(tally_json_str "${kv%%=*}"): $(tally_json_str "${kv#*=}")")
  done
  local mca_obj='{' sep=''
  for kv in "${mca_json[@]}"; do
    mca_obj+="$sep$kv"
    sep=', '
  done
  mca_obj+='}'
  {
    printf '{\n'
    printf '  "schema": "tally-slurm-env/1",\n'
    printf '  "job": %s,\n' "$(tally_json_str "$TALLY_JOB")"
    printf '  "job_id": %s,\n' "$(tally_json_str "$SLURM_JOB_ID")"
    printf '  "job_name": %s,\n' "$(tally_json_str "${SLURM_JOB_NAME:-}")"
    printf '  "cluster": %s,\n' "$(tally_json_str "${SLURM_CLUSTER_NAME:-}")"
    printf '  "partition": %s,\n' "$(tally_json_str "${SLURM_JOB_PARTITION:-}")"
    printf '  "account": %s,\n' "$(tally_json_str "${SLURM_JOB_ACCOUNT:-}")"
    printf '  "nodes": %d,\n' "$SLURM_JOB_NUM_NODES"
    printf '  "node_list": %s,\n' "$(tally_json_arr "${nodes[@]}")"
    printf '  "ranks": %d,\n' "$SLURM_NTASKS"
    printf '  "tasks_per_node": %s,\n' "$(tally_json_str "${SLURM_TASKS_PER_NODE:-}")"
    printf '  "transport": %s,\n' "$(tally_json_str "$TALLY_TRANSPORT")"
    printf '  "tcp_if": %s,\n' "$(tally_json_str "${TALLY_TCP_IF:-}")"
    printf '  "mca": %s,\n' "$mca_obj"
    printf '  "ucx_tls": %s,\n' "$(tally_json_str "${UCX_TLS:-}")"
    printf '  "ucx_net_devices": %s,\n' "$(tally_json_str "${UCX_NET_DEVICES:-}")"
    printf '  "launcher": %s,\n' "$(tally_json_str "$TALLY_LAUNCHER")"
    printf '  "command": %s,\n' "$(tally_json_arr "${TALLY_CMD[@]}")"
    printf '  "mpi_version": %s,\n' "$(tally_json_str "$TALLY_MPI_VERSION")"
    printf '  "mpi_flavor": %s,\n' "$(tally_json_str "$TALLY_MPI_FLAVOR")"
    printf '  "mpi_library": %s,\n' "$(tally_json_str "$TALLY_MPI_LIBRARY")"
    printf '  "slurm_version": %s,\n' "$(tally_json_str "$TALLY_SLURM_VERSION")"
    printf '  "batch_host": %s,\n' "$(tally_json_str "$(hostname)")"
    printf '  "git_commit": %s,\n' "$(tally_json_str "$TALLY_GIT_COMMIT")"
    printf '  "git_dirty": %s,\n' "$TALLY_GIT_DIRTY"
    printf '  "bench": %s,\n' "$(tally_json_str "$TALLY_BENCH")"
    printf '  "filter": %s,\n' "$(tally_json_str "$TALLY_BENCH_FILTER")"
    printf '  "start": %s,\n' "$(tally_json_str "$TALLY_START")"
    printf '  "end": %s,\n' "$(tally_json_str "${TALLY_END:-}")"
    if [[ "$status" == running ]]; then
      printf '  "status": "running",\n  "exit_status": null\n'
    else
      printf '  "status": "%s",\n  "exit_status": %d\n' \
        "$( ((status == 0)) && echo ok || echo failed)" "$status"
    fi
    printf '}\n'
  } >"$tmp"
  mv -f -- "$tmp" "$TALLY_OUT/env.json"
}

tally_job_main() {
  [[ -n "${SLURM_JOB_ID:-}" ]] || tally_die "not inside a Slurm job; submit with sbatch or jobs/submit"
  [[ -n "${SLURM_NTASKS:-}" ]] || tally_die "SLURM_NTASKS is unset; submit with --ntasks or --ntasks-per-node"
  : "${TALLY_TRANSPORT:=ucx}"
  : "${TALLY_LAUNCHER:=srun}"
  : "${TALLY_BENCH:=$TALLY_ROOT/build/bench/tally_bench}"
  : "${TALLY_BENCH_FILTER:=${TALLY_FILTER:-${TALLY_DEFAULT_FILTER:-.}}}"
  : "${TALLY_RESULTS:=$TALLY_ROOT/results}"
  : "${SLURM_JOB_NUM_NODES:=${SLURM_NNODES:-1}}"

  TALLY_OUT="$TALLY_RESULTS/$SLURM_JOB_ID"
  mkdir -p -- "$TALLY_OUT" || tally_die "cannot create results folder '$TALLY_OUT'"
  TALLY_MCA=()
  TALLY_CMD=()
  TALLY_MPI_FLAVOR=$(tally_bench_flavor)
  export TALLY_MPI_FLAVOR
  # Debian's MPICH starts one job of N ranks under srun with pmi2 only.
  if [[ "$TALLY_MPI_FLAVOR" == mpich ]]; then : "${TALLY_SRUN_MPI:=pmi2}"; else : "${TALLY_SRUN_MPI:=pmix}"; fi
  TALLY_MPI_VERSION=$(tally_mpi_version)
  TALLY_MPI_LIBRARY=$(tally_mpi_library)
  TALLY_SLURM_VERSION=$(sinfo --version 2>/dev/null || true)
  TALLY_GIT_COMMIT=$(git -C "$TALLY_ROOT" rev-parse HEAD 2>/dev/null || true)
  TALLY_GIT_DIRTY=null
  if [[ -n "$TALLY_GIT_COMMIT" ]]; then
    if [[ -n "$(git -C "$TALLY_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
      TALLY_GIT_DIRTY=true
    else
      TALLY_GIT_DIRTY=false
    fi
  fi
  TALLY_START=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  TALLY_END=''
  TALLY_ENV_READY=1
  # Time limit or scancel: Slurm sends SIGTERM; record it before going.
  trap 'tally_log "error: terminated by SIGTERM (time limit or scancel)"; tally_record_exit 143; exit 143' TERM

  [[ -x "$TALLY_BENCH" && -f "$TALLY_BENCH" ]] ||
    tally_die "tally_bench not found or not executable at '$TALLY_BENCH';" \
      "build it (cmake --workflow --preset build) or set TALLY_BENCH"
  tally_select_transport
  tally_select_launcher
  local -a bench_args=()
  [[ -z "${TALLY_BENCH_ARGS:-}" ]] || read -r -a bench_args <<<"$TALLY_BENCH_ARGS"
  tally_bench_argv "$TALLY_OUT/bench.json" "$TALLY_BENCH_FILTER" "" "${bench_args[@]}"
  TALLY_CMD=("${TALLY_LAUNCH[@]}" "$TALLY_BENCH" "${TALLY_BENCH_ARGV[@]}")
  tally_write_env running

  tally_log "job $SLURM_JOB_ID ($TALLY_JOB): $SLURM_JOB_NUM_NODES node(s) [$SLURM_JOB_NODELIST]," \
    "$SLURM_NTASKS rank(s), transport $TALLY_TRANSPORT, launcher $TALLY_LAUNCHER"
  tally_log "MPI: $TALLY_MPI_VERSION"
  tally_log "results: $TALLY_OUT"
  tally_log "running: ${TALLY_CMD[*]}"

  local status=0
  "${TALLY_CMD[@]}" || status=$?
  if ((status == 0)) && [[ ! -s "$TALLY_OUT/bench.json" ]]; then
    tally_log "error: tally_bench exited 0 but wrote no $TALLY_OUT/bench.json"
    status=3
  fi
  tally_record_exit "$status"
  if ((status != 0)); then
    tally_log "error: benchmark run failed with status $status; environment in $TALLY_OUT/env.json"
    exit "$status"
  fi
  tally_log "done: $TALLY_OUT/bench.json"
}

#!/usr/bin/env bash
# Two-node Slurm: the jobs of jobs/ on an emulated 2-node cluster (network
# namespaces, scripts/emu-cluster), one slurmd per node, slurmctld on the bridge.
# Usage: slurm_multinode_test.sh SOURCE_DIR TALLY_BENCH
# Submits jobs/handoff.sbatch (2 nodes x 1 rank, srun --mpi=pmix) and
# jobs/scaling.sbatch (2 nodes x 2 ranks, mpirun) with jobs/submit over shm+tcp,
# checks that each job's results name both nodes and that tally_bench itself saw
# two shared-memory nodes, collects them, and removes the daemons and the nodes on
# any exit.
set -euo pipefail

src=$(cd -- "${1:?usage: slurm_multinode_test.sh SOURCE_DIR TALLY_BENCH}" && pwd -P)
bench=${2:?usage: slurm_multinode_test.sh SOURCE_DIR TALLY_BENCH}
python=${TALLY_PYTHON:-python3}
here="$src/tests/slurm"
submit="$src/jobs/submit"
: "${TALLY_TEST_FILTER:=}"
: "${TALLY_TEST_BENCH_ARGS:=}"
: "${TALLY_TEST_DEADLINE:=240}"
emu=("$src/scripts/emu-cluster" --name slurmci --subnet 10.77.8.0/24)

log() { printf '== %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
if (($(id -u) != 0)); then
  echo "SKIP: network namespaces, slurmd and munged need root" >&2
  exit 77
fi
for p in slurm-wlm munge; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] ||
    fail "$p is not installed (the single-node Slurm test installs it; scripts/setup does too)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tally-slurm-multinode.XXXXXX")
chmod 0755 "$work"
# shellcheck source-path=SCRIPTDIR source=local-slurm.sh
source "$here/local-slurm.sh"
finish() {
  local rc=$?
  if ((rc != 0)); then
    local_slurm_dump_logs >&2 || true
    tail -n 30 "$work"/results/slurm-*.out >&2 2>/dev/null || true
  fi
  local_slurm_stop || rc=1
  "${emu[@]}" down || rc=1
  if grep -q '^tally-slurmci-' <<<"$(ip netns list)"; then
    echo "FAIL: namespaces left: $(ip netns list | tr '\n' ' ')" >&2
    rc=1
  fi
  [[ -n "${TALLY_TEST_KEEP:-}" ]] || rm -rf -- "$work"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

"${emu[@]}" up 2 >/dev/null
mkdir -p "$work/cluster" "$work/results"
local_slurm_start "$work/cluster" "${emu[@]}"
marker=$(local_slurm_env)
export TMPDIR="$work/cluster/tmp"
results="$work/results"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TALLY_TRANSPORT TALLY_TCP_IF TALLY_LAUNCHER TALLY_RESULTS TALLY_ROOT TALLY_BENCH
export TALLY_BENCH_ARGS="$TALLY_TEST_BENCH_ARGS" TALLY_BENCH_FILTER="$TALLY_TEST_FILTER"
subnet=10.77.8.0/24

log "submitting"
handoff=$(env "$marker" "$submit" handoff -N 2 --ranks-per-node 1 -T shm+tcp --tcp-if "$subnet" \
  -l srun -o "$results" -b "$bench" -t 10) || fail "submit handoff failed"
# mpirun inside the allocation starts its daemons through srun; binding off (two
# nodes' first ranks would share core 0 of this one machine).
scaling=$(env "$marker" TALLY_LAUNCH_ARGS="--bind-to none" "$submit" scaling -N 2 --ranks-per-node 2 \
  -T shm+tcp --tcp-if "$subnet" -l mpirun -o "$results" -b "$bench" -t 10 -- --overcommit) ||
  fail "submit scaling failed"
log "handoff: job $handoff, scaling: job $scaling"

job_field() { scontrol show job -o "$1" 2>/dev/null | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
deadline=$((SECONDS + TALLY_TEST_DEADLINE))
for id in "$handoff" "$scaling"; do
  while :; do
    state=$(job_field "$id" JobState)
    case "$state" in PENDING | CONFIGURING | RUNNING | COMPLETING | '') ;; *) break ;; esac
    ((SECONDS < deadline)) || fail "job $id still '$state' after ${TALLY_TEST_DEADLINE}s"
    sleep 0.5
  done
  [[ "$state" == COMPLETED ]] || fail "job $id ended $state ($(job_field "$id" ExitCode))"
  log "job $id COMPLETED on $(job_field "$id" NodeList)"
done

expect=(--expect BM_Floor --expect "BM_Handoff<tally>")
common=(--transport shm+tcp --tcp-if "$subnet" --node-names "node1,node2" --nodes 2
  --ranks-key mpi_ranks --ranks-key ranks --nodes-key mpi_nodes --mca-context "${expect[@]}")
"$python" "$here/check_results.py" "$results/$handoff" --job handoff --ranks 2 --launcher srun \
  "${common[@]}" || fail "handoff job results"
"$python" "$here/check_results.py" "$results/$scaling" --job scaling --ranks 4 --launcher mpirun \
  "${common[@]}" || fail "scaling job results"

"$python" "$src/jobs/collect" -o "$work/report" "$results" >"$work/report.out" 2>"$work/collect.err" ||
  fail "jobs/collect failed: $(cat "$work/collect.err")"
grep -q 'node1,node2' "$work/report/report.md" || fail "report.md does not name both nodes"
grep -qF '| shm+tcp, 2 nodes | 2 | Handoff | tally |' "$work/report/report.md" ||
  fail "report.md lacks the two-node handoff row: $(grep -F 'Handoff | tally' "$work/report/report.md")"
log "two-node Slurm jobs passed"

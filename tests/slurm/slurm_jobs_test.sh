#!/usr/bin/env bash
# End-to-end test of jobs/ against a real, private Slurm on this machine.
# Usage: slurm_jobs_test.sh SOURCE_DIR TALLY_BENCH
# Starts munged/slurmctld/slurmd on loopback (tests/slurm/local-slurm.sh), submits the
# jobs scaled to one node, checks their JSON, checks that bad submissions are refused
# and reach no queue, and stops every daemon by PID on any exit.
set -euo pipefail

src=$(cd -- "${1:?usage: slurm_jobs_test.sh SOURCE_DIR TALLY_BENCH}" && pwd -P)
bench=${2:?usage: slurm_jobs_test.sh SOURCE_DIR TALLY_BENCH}
python=${TALLY_PYTHON:-python3}  # with matplotlib (cmake/TallyPython.cmake)
here="$src/tests/slurm"
submit="$src/jobs/submit"
# Optional: a benchmark filter and tally_bench flags that keep the runs short.
: "${TALLY_TEST_FILTER:=}"
# TALLY_TEST_MPICH=1: TALLY_BENCH is built against MPICH. The good jobs are then
# MPICH's two ways in, at 2 ranks (MPICH busy-polls): srun (the job picks
# --mpi=pmi2) and TALLY_LAUNCHER=mpirun (the job runs MPICH's hydra, mpiexec.mpich).
: "${TALLY_TEST_MPICH:=}"
: "${TALLY_TEST_BENCH_ARGS:=}"
: "${TALLY_TEST_DEADLINE:=200}" # seconds for all jobs to finish

log() { printf '== %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

# --- prerequisites ------------------------------------------------------------------
[[ -x "$bench" ]] || fail "benchmark binary '$bench' is missing; build the project first"
command -v "$python" >/dev/null || fail "$python is missing (Debian's python3)"
if (($(id -u) != 0)); then
  echo "SKIP: starting slurmd and munged needs root" >&2
  exit 77
fi
missing=()
for p in slurm-wlm munge; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >&2
fi

# --- a private cluster, torn down on every exit -------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/tally-slurm-test.XXXXXX")
chmod 0755 "$work" # munged runs as user munge and must reach its socket below
# shellcheck source-path=SCRIPTDIR source=local-slurm.sh
source "$here/local-slurm.sh"
finish() {
  local rc=$?
  if ((rc != 0)); then
    local_slurm_dump_logs >&2 || true
    local f
    for f in "$work"/results/slurm-*.out; do
      [[ -f "$f" ]] || continue
      printf -- '----- %s\n' "$f" >&2
      tail -n 30 "$f" >&2
    done
  fi
  if ! local_slurm_stop; then
    echo "FAIL: could not stop every process of the test cluster" >&2
    rc=1
  fi
  if [[ -n "${TALLY_TEST_KEEP:-}" ]]; then
    echo "kept $work (TALLY_TEST_KEEP)" >&2
  else
    rm -rf -- "$work"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

mkdir -p "$work/cluster" "$work/results"
local_slurm_start "$work/cluster"
marker=$(local_slurm_env)
# Jobs inherit this: Open MPI's session files stay private to the test as well.
export TMPDIR="$work/cluster/tmp"
results="$work/results"

# Open MPI refuses root without these; only the test sets them, never the job scripts.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TALLY_TRANSPORT TALLY_TCP_IF TALLY_LAUNCHER TALLY_RESULTS TALLY_ROOT TALLY_BENCH
export TALLY_BENCH_ARGS="$TALLY_TEST_BENCH_ARGS" TALLY_BENCH_FILTER="$TALLY_TEST_FILTER"

# Jobs queued or run (Slurm keeps a FAILED record of some requests it refused).
queue_size() { squeue -h -t PD,CF,R,CG,CD,S -o %i | wc -l; }

# --- bad submissions: a usage error or Slurm's refusal, and nothing queued ----------
# refused EXPECTED_STDERR_REGEX ARGS...: a usage error (status 2, README); Slurm's
# own refusals are status 1 (REFUSED_STATUS=1).
refused() {
  local want=$1 out err rc=0 status=${REFUSED_STATUS:-2}
  shift
  out=$(env "$marker" "$submit" "$@" 2>"$work/err") || rc=$?
  err=$(<"$work/err")
  ((rc != 0)) || fail "submit $* was accepted (stdout: $out)"
  ((rc == status)) || fail "submit $* exited $rc, not $status: $err"
  [[ -z "$out" ]] || fail "submit $* printed a job id '$out' although it failed"
  grep -Eq -- "$want" <<<"$err" || fail "submit $*: stderr lacks /$want/: $err"
  printf '   refused as expected: submit %s\n     -> %s\n' "$*" "$(grep -E -- "$want" <<<"$err" | head -n 1)" >&2
}
log "bad submissions"
before=$(queue_size)
refused 'missing JOB'
refused 'unknown JOB' bogus -N 1 --ranks-per-node 2 -T shm -b "$bench"
refused 'missing --nodes' scaling --ranks-per-node 2 -T shm -b "$bench"
refused 'missing --transport' handoff -N 1 --ranks-per-node 2 -b "$bench"
refused 'positive integer' scaling -N 0 --ranks-per-node 2 -T shm -b "$bench"
refused 'positive integer' scaling -N 1 --ranks-per-node two -T shm -b "$bench"
refused 'unknown transport' handoff -T infiniband -b "$bench"
refused 'shm runs on one node' scaling -N 2 --ranks-per-node 1 -T shm -b "$bench"
refused 'bad --time' handoff -N 1 --ranks-per-node 2 -T tcp -t 5min -b "$bench"
refused 'needs a value' handoff -N 1 --ranks-per-node 2 -T
refused 'unknown option' handoff -N 1 --ranks-per-node 2 -T tcp --nodse 1 -b "$bench"
refused 'unknown launcher' handoff -N 1 --ranks-per-node 2 -T tcp -l aprun -b "$bench"
refused 'tally_bench not found' handoff -N 1 --ranks-per-node 2 -T tcp -b "$work/no-such-bench"
refused 'tally_bench not found' handoff -N 1 --ranks-per-node 2 -T tcp -b /nonexistent
refused 'bad --time' handoff -N 1 --ranks-per-node 2 -T tcp -t 99:99:99 -b "$bench"
refused 'bad --time' handoff -N 1 --ranks-per-node 2 -T tcp -t 1-24 -b "$bench"
refused 'not a valid regular expression' handoff -N 1 --ranks-per-node 2 -T tcp -f 'BM_(' -b "$bench"
# Slurm itself refuses these: more nodes than the cluster has, an unknown partition.
REFUSED_STATUS=1 refused 'Batch job submission failed' scaling -N 2 --ranks-per-node 2 -T tcp -b "$bench" -o "$results"
REFUSED_STATUS=1 refused 'invalid partition' handoff -N 1 --ranks-per-node 2 -T tcp -p nosuch -b "$bench" -o "$results"
after=$(queue_size)
((before == after)) || fail "bad submissions reached the queue: $(squeue -h -t all -o '%i %j %T')"
((after == 0)) || fail "queue not empty before any good submission: $(squeue -h -t all)"
[[ -z "$(ls -A "$results")" ]] || fail "bad submissions left files in $results: $(ls -A "$results")"

# --- the jobs, scaled to one node -----------------------------------------------------
declare -A job_args job_check
submit_job() { # NAME CHECK-ARGS -- SUBMIT-ARGS
  local name=$1 check=$2 id
  shift 3
  id=$(env "$marker" "$submit" "$@" -o "$results" -b "$bench" -t 10 -- --overcommit) ||
    fail "submit $* failed"
  [[ "$id" =~ ^[0-9]+$ ]] || fail "submit $* printed '$id', not a job id"
  job_args[$id]="$name"
  job_check[$id]="$check"
  log "submitted $name as job $id"
}
if [[ -n "$TALLY_TEST_MPICH" ]]; then
  submit_job "handoff shm srun (MPICH)" "--job handoff --nodes 1 --ranks 2 --transport shm --launcher srun --mpich" \
    -- handoff -N 1 --ranks-per-node 2 -T shm
  submit_job "handoff tcp mpirun (MPICH)" \
    "--job handoff --nodes 1 --ranks 2 --transport tcp --launcher mpirun --tcp-if lo --mpich" \
    -- handoff -N 1 --ranks-per-node 2 -T tcp --tcp-if lo -l mpirun
else
  submit_job "handoff shm srun" "--job handoff --nodes 1 --ranks 2 --transport shm --launcher srun" \
    -- handoff -N 1 --ranks-per-node 2 -T shm
  submit_job "scaling tcp srun" "--job scaling --nodes 1 --ranks 4 --transport tcp --launcher srun --tcp-if lo" \
    -- scaling -N 1 --ranks-per-node 4 -T tcp --tcp-if lo
  submit_job "scaling shm mpirun" "--job scaling --nodes 1 --ranks 3 --transport shm --launcher mpirun" \
    -- scaling -N 1 --ranks-per-node 3 -T shm -l mpirun

  # Plain sbatch from outside the checkout: the script must find it by itself.
  id=$(cd "$work" && env "$marker" TALLY_TRANSPORT=tcp TALLY_TCP_IF=lo TALLY_RESULTS="$results" \
    TALLY_BENCH="$bench" sbatch --parsable -N 1 -n 2 --overcommit -t 10 \
    --output="$results/slurm-%j.out" "$src/jobs/handoff.sbatch") || fail "plain sbatch failed"
  job_args[$id]="handoff tcp srun (plain sbatch)"
  job_check[$id]="--job handoff --nodes 1 --ranks 2 --transport tcp --launcher srun --tcp-if lo"
  log "submitted handoff via plain sbatch as job $id"
fi

# A run that fails (here: a flag tally_bench rejects, exit status 2) must end FAILED
# with its status in env.json, and the collector must leave it out.
failed_id=$(env "$marker" TALLY_BENCH_ARGS=--benchmark_no_such_flag "$submit" handoff -N 1 \
  --ranks-per-node 2 -T shm -o "$results" -b "$bench" -t 10 -- --overcommit) ||
  fail "submit of the failing job failed"
log "submitted a failing run as job $failed_id"
# A launcher this Slurm cannot provide is refused before anything runs.
noplugin_id=$(env "$marker" TALLY_SRUN_MPI=pmi9 "$submit" scaling -N 1 --ranks-per-node 2 \
  -T tcp -o "$results" -b "$bench" -t 10 -- --overcommit) || fail "submit of the pmi9 job failed"
log "submitted a run with srun --mpi=pmi9 as job $noplugin_id"

# --- wait (bounded), then check -------------------------------------------------------
job_field() { scontrol show job -o "$1" 2>/dev/null | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
# wait_job ID EXPECTED_STATE EXPECTED_EXIT_CODE
wait_job() {
  local id=$1 state
  while :; do
    state=$(job_field "$id" JobState)
    case "$state" in
      PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | '') ;;
      *) break ;;
    esac
    ((SECONDS < deadline)) || fail "job $id still '$state' after ${TALLY_TEST_DEADLINE}s"
    sleep 0.5
  done
  exit_code=$(job_field "$id" ExitCode)
  [[ "$state" == "$2" && "$exit_code" == "$3" ]] ||
    fail "job $id ended $state with exit code $exit_code, expected $2 with $3"
  log "job $id ended $state ($exit_code) as expected"
}
deadline=$((SECONDS + TALLY_TEST_DEADLINE))
for id in "${!job_args[@]}"; do
  wait_job "$id" COMPLETED 0:0
done
for id in "$failed_id" "$noplugin_id"; do
  wait_job "$id" FAILED 2:0
  if ! grep -q '"status": "failed"' "$results/$id/env.json" ||
    ! grep -q '"exit_status": 2' "$results/$id/env.json"; then
    fail "env.json of the failed job $id does not say failed/2: $(cat "$results/$id/env.json")"
  fi
  [[ ! -e "$results/$id/bench.json" ]] || fail "failed job $id left a bench.json"
done
grep -q "no MPI plugin 'pmi9'" "$results/slurm-$noplugin_id.out" ||
  fail "job $noplugin_id's log does not explain the missing MPI plugin: $(cat "$results/slurm-$noplugin_id.out")"

expect=(--expect BM_Floor --expect "BM_Handoff<tally>")
[[ "$TALLY_TEST_FILTER" != *win_lock* ]] || expect+=(--expect "BM_Handoff<win_lock>")
ok=1
for id in "${!job_args[@]}"; do
  # shellcheck disable=SC2086 # job_check holds option words
  "$python" "$here/check_results.py" "$results/$id" ${job_check[$id]} "${expect[@]}" \
    --ranks-key mpi_ranks --ranks-key ranks --nodes-key mpi_nodes --mca-context || ok=0
done
((ok)) || fail "result checks failed"

# --- the collector: one report over all folders; the failed job left out --------------
log "collecting"
"$python" "$src/jobs/collect" -o "$work/report" "$results" >"$work/report.out" 2>"$work/collect.err" ||
  fail "jobs/collect failed: $(cat "$work/collect.err")"
cat "$work/collect.err" >&2
for id in "$failed_id" "$noplugin_id"; do
  grep -q "skipped .*/$id: status 'failed'" "$work/collect.err" ||
    fail "jobs/collect did not report skipping the failed job $id"
done
cmp -s "$work/report.out" "$work/report/report.md" || fail "collect's output differs from report.md"
for id in "${!job_args[@]}"; do
  grep -Eq "^\| $id \|" "$work/report/report.md" || fail "report.md has no row for job $id"
  [[ -s "$work/report/runs/$id.json" ]] || fail "collect did not copy job $id"
done
if grep -Eq "^\| ($failed_id|$noplugin_id) \|" "$work/report/report.md"; then
  fail "report.md lists a failed job"
fi
# (A rank count above the cores is marked oversubscribed: "4*".)
if [[ -n "$TALLY_TEST_MPICH" ]]; then
  rows=('| shm (MPICH) | 2 | Handoff | tally |' '| tcp (MPICH) | 2 | Floor | floor |')
else
  rows=('| shm | 2 | Handoff | tally |' '| tcp | 4\*? | Handoff | tally |'
    '| shm | 3\*? | Floor | floor |' '| tcp | 2 | Floor | floor |')
fi
for row in "${rows[@]}"; do
  pattern=${row//|/\\|}
  pattern=${pattern//(/\\(}
  pattern=${pattern//)/\\)}
  grep -qE -- "$pattern" "$work/report/report.md" || fail "report.md lacks a row starting '$row'"
done
[[ -s "$work/report/plots/handoff_vs_ranks.png" ]] || fail "no handoff_vs_ranks.png"
rc=0
"$src/jobs/collect" -o "$work/report2" "$work/cluster" 2>"$work/collect.err" >/dev/null || rc=$?
if ((rc != 2)) || ! grep -q "no job folders" "$work/collect.err"; then
  fail "collect on a folder without results: status $rc, $(cat "$work/collect.err")"
fi
log "all Slurm job checks passed"

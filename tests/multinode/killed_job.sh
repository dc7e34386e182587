#!/usr/bin/env bash
# killed_job.sh MPIEXEC EMU-CLUSTER-COMMAND...
# A job across two nodes is killed with SIGKILL (as a test killed by its timeout
# is): its ranks and daemons stay behind in the nodes. Teardown must remove them
# all, and a new bring-up must work.
set -euo pipefail
mpiexec=$1
shift
emu=("$@")
rc=0
timeout -s KILL 5 "${emu[@]}" run --nodes 2 -- "$mpiexec" -n 2 sleep 60 || rc=$?
((rc == 137)) || { echo "FAIL: the job was not killed (status $rc)" >&2; exit 1; }
left=$("${emu[@]}" status | awk '{ for (i = 4; i <= NF; i++) n++ } END { print n + 0 }')
echo "processes left in the nodes after the kill: $left"
"${emu[@]}" down
if grep -q '^tally-tallyci-' <<<"$(ip netns list)"; then
  echo "FAIL: namespaces left after tearing down a killed job" >&2
  exit 1
fi
"${emu[@]}" up 3 >/dev/null
"${emu[@]}" run --nodes 3 -- "$mpiexec" -n 3 hostname | sort | tr '\n' ' '
echo
echo "ok: torn down after a killed job, and up again"

#!/usr/bin/env bash
# bench/run-local with one configuration that cannot run (an unknown transport): it
# must exit 1, name that configuration, write OUTDIR/PARTIAL, and still run and
# report the others.
# usage: run_local_partial.sh RUN_LOCAL TALLY_BENCH OUTDIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 RUN_LOCAL TALLY_BENCH OUTDIR" >&2; exit 2; }
run_local=$1 bench=$2 out=$3
fail() { echo "run_local_partial: $*" >&2; exit 1; }
rm -rf "$out" "$out.err"
rc=0
TALLY_BENCH=$bench TALLY_BENCH_CONFIGS="shm:2 nosuch:2" TALLY_BENCH_FILTER='^BM_(Floor|Handoff<tally>)' \
  TALLY_BENCH_MIN_TIME=0.002 "$run_local" "$out" >/dev/null 2>"$out.err" || rc=$?
cat "$out.err" >&2
((rc == 1)) || fail "exit status $rc, not 1"
grep -q "1 of 2 configuration(s) failed" "$out.err" || fail "no summary of the failure"
grep -q "nosuch, 2 ranks: unknown transport" "$out.err" || fail "the failed configuration is not named"
grep -q "nosuch, 2 ranks" "$out/PARTIAL" || fail "PARTIAL does not name it"
[ -s "$out/shm-2.json" ] || fail "the good configuration did not run"
grep -q "Handoff" "$out/table.md" || fail "the good configuration was not reported"
echo "run_local_partial: ok"

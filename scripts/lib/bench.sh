# shellcheck shell=bash
# scripts/lib/bench.sh — the one place a tally_bench command line is made. Sourced
# by bench/run-local, bench/run-progress, bench/run-multinode, jobs/lib/tally-job.sh
# and scripts/calibrate-sim; never run. TALLY_BENCH_FILTER is the one variable that
# names a run's --benchmark_filter everywhere.
#
# tally_bench_separate   the benchmarks with tables of their own (bench/run-progress;
#                        the many-mutex ones: docs/benchmarks.md), not lock entries:
#                        the default runs leave them out and bench/report, which
#                        reads the line below, skips them
# tally_bench_argv OUT FILTER [MIN_TIME] [ARG...]
#                        sets TALLY_BENCH_ARGV to tally_bench's arguments: the filter,
#                        Google Benchmark's JSON into OUT, no colour, MIN_TIME as
#                        --benchmark_min_time unless empty, then the ARGs
# tally_bench_locate ROOT, tally_results_dir ROOT NAME
#                        the binary and the default output folder, for a source
#                        checkout (ROOT) or the installed scripts (tally-tools)

# shellcheck disable=SC2034  # read where this file is sourced, and by bench/report
# tally_bench_locate ROOT: the benchmark to run: $TALLY_BENCH, else ROOT's build
# (ROOT a source checkout), else tally_bench on PATH (the tally-tools package).
tally_bench_locate() {
  if [[ -n "${TALLY_BENCH:-}" ]]; then
    echo "$TALLY_BENCH"
  elif [[ -f "$1/CMakeLists.txt" ]] || ! command -v tally_bench >/dev/null; then
    echo "$1/build/bench/tally_bench"
  else
    command -v tally_bench
  fi
}

# tally_results_dir ROOT NAME: where a run writes unless told: ROOT/results/NAME
# in a source checkout, else ./results/NAME (installed scripts).
tally_results_dir() {
  if [[ -f "$1/CMakeLists.txt" ]]; then echo "$1/results/$2"; else echo "results/$2"; fi
}

tally_bench_separate=(ComputeCost AsyncOverlap ManyReentry StdMutex)

tally_bench_argv() {
  local out=$1 filter=$2 min_time=${3:-}
  shift 2
  (($# == 0)) || shift
  TALLY_BENCH_ARGV=("--benchmark_filter=$filter" "--benchmark_out=$out" --benchmark_out_format=json
    --benchmark_color=false)
  [[ -z "$min_time" ]] || TALLY_BENCH_ARGV+=("--benchmark_min_time=$min_time")
  TALLY_BENCH_ARGV+=("$@")
}

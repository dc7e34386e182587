#!/bin/bash
# ab.sh BENCH_A BENCH_B ROUNDS — alternates 2-rank shared-memory handoff runs of
# tally_node and win_lock with two tally_bench binaries, each run between two
# line_pingpong readings (this VM's cache-line latency is bimodal, about 50 or
# 250 ns one-way, and changes within seconds: compare runs taken in the same state).
# Prints: binary, line one-way before/after, tally_node and win_lock handoff (ns).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
here=$(cd "$(dirname "$0")" && pwd)
for _ in $(seq "$3"); do
  for b in "$1" "$2"; do
    before=$("$here/line_pingpong" | head -1 | awk '{print $2}')
    out=$(timeout 120 mpiexec -n 2 --mca pml ob1 --mca btl self,vader --mca osc sm,pt2pt "$b" \
      --benchmark_filter='^BM_Handoff<(tally_node|win_lock)' --benchmark_min_time=0.1 2>&1 |
      grep -E "BM_" | sed 's/\x1b\[[0-9;]*m//g' | awk '{printf "%s ", $2}')
    after=$("$here/line_pingpong" | head -1 | awk '{print $2}')
    echo "$(basename "$b") line=$before/$after tally_node,win_lock= $out"
  done
done

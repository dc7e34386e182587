// The cost and the benefit of tally's progress, for the tally kinds only:
//
// BM_ComputeCost: what a mutex's progress costs an application that computes.
//   Every rank computes a fixed amount of arithmetic (no MPI, no tally call) while
//   the mutex is alive and rank 0 holds its token idle; nobody asks for it. The same
//   work is timed first with no mutex at all, in the same run. Counters: base_ns
//   (the work alone), then slowdown_holder (rank 0, whose progress thread watches
//   the idle token) and slowdown_other (the worst other rank, whose thread parks).
//   Run it with one core per rank (as many ranks as cores, bound) to see what a
//   progress thread takes from a rank that owns one core.
// BM_AsyncOverlap/compute_us: how much of a remote acquisition lock_async hides.
//   Ranks 0 and 1 take turns acquiring, so the token is always at the other one,
//   idle. Odd turns: lock(), timed (acquire_ns). Even turns: lock_async(), then
//   compute_us of arithmetic with no tally call, then wait(), timed (total_ns).
//   overlap = (acquire + compute - total) / acquire, clamped to [0, 1]: 1 when the
//   whole acquisition happened during the computation.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <exception>
#include <optional>

#include "harness.hpp"
#include "lock_kinds.hpp"

#if TALLY_BENCH_HAVE_TALLY

namespace {

using namespace bench;

constexpr int tag_turn = 11;

// A fixed amount of arithmetic; its duration is what is measured.
double work(std::int64_t units) {
  volatile double x = 1.0;
  for (std::int64_t u = 0; u < units; ++u)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

// Rank 0's and the worst other rank's value of v, on rank 0.
void split_by_role(double v, double& holder, double& other) {
  double mine[2] = {world().rank == 0 ? v : 0.0, world().rank == 0 ? 0.0 : v}, all[2] = {0, 0};
  MPI_Reduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, 0, world().comm);
  holder = all[0];
  other = all[1];
}

template <class L>
void BM_ComputeCost(benchmark::State& state) {
  constexpr std::int64_t units = 500;  // about 1-2 ms of arithmetic
  constexpr int repeats = 20;
  auto timed = [&] {
    MPI_Barrier(world().comm);
    const ns_t t0 = now_ns();
    for (int k = 0; k < repeats; ++k) work(units);
    return static_cast<double>(now_ns() - t0) / repeats;
  };
  const double base = timed();  // no mutex yet
  std::optional<L> lk;
  if (!construct(state, lk, world().comm, world().shared_windows)) return;
  auto poll = [&] { lk->poll(); };
  if (world().rank == 0) {  // rank 0 starts with the token: now it holds it idle
    lk->lock();
    lk->unlock();
  }
  double with = 0;
  for (auto _ : state) {
    const double t = timed();
    with += t;
    state.SetIterationTime(t * 1e-9);
  }
  with /= static_cast<double>(state.iterations());
  barrier_polling(poll);
  double holder = 0, other = 0;
  split_by_role(with / base, holder, other);
  double base_max = 0;
  MPI_Reduce(&base, &base_max, 1, MPI_DOUBLE, MPI_MAX, 0, world().comm);
  state.counters["base_ns"] = base_max;
  state.counters["slowdown_holder"] = holder;
  state.counters["slowdown_other"] = world().size > 1 ? other : 0.0;
  state.counters["ranks"] = world().size;
}

template <class L>
void BM_AsyncOverlap(benchmark::State& state) {
  if (world().size < 2) {
    state.SkipWithError(not_applicable("needs at least 2 ranks").c_str());
    return;
  }
  std::optional<L> lk;
  if (!construct(state, lk, world().comm, world().shared_windows)) return;
  tally::mutex& m = lk->get();
  auto poll = [&] { lk->poll(); };
  const ns_t compute = state.range(0) * 1000;
  const int me = world().rank;
  ns_t acquire_sum = 0, total_sum = 0;
  std::int64_t acquires = 0, totals = 0;
  // One turn: `who` acquires (timed), the other waits for the turn to pass.
  auto turn = [&](int who, bool async) {
    if (me == who) {
      const ns_t t0 = now_ns();
      if (async) {
        tally::lock_request r = m.lock_async();
        spin_for(compute);
        r.wait();
      } else {
        m.lock();
      }
      const ns_t t = now_ns() - t0;
      m.unlock();
      if (async) {
        total_sum += t;
        ++totals;
      } else {
        acquire_sum += t;
        ++acquires;
      }
      send_signal(1 - who, tag_turn);
    } else if (me == 1 - who) {
      recv_polling(who, tag_turn, poll);
    }
  };
  for (int w = 0; w < 4; ++w) turn(w % 2, w % 4 >= 2);  // warm-up, both kinds
  acquire_sum = total_sum = acquires = totals = 0;
  barrier_polling(poll);
  for (auto _ : state) {
    const ns_t t0 = now_ns();
    for (int k = 0; k < 4; ++k) turn(k % 2, k >= 2);  // each rank: one sync, one async
    const ns_t t = allreduce_polling(now_ns() - t0, MPI_MAX, poll);
    state.SetIterationTime(static_cast<double>(t) * 1e-9);
  }
  barrier_polling(poll);
  double a = acquires ? static_cast<double>(acquire_sum) / static_cast<double>(acquires) : 0;
  double t = totals ? static_cast<double>(total_sum) / static_cast<double>(totals) : 0;
  double a0 = 0, a1 = 0, t0 = 0, t1 = 0;
  split_by_role(a, a0, a1);
  split_by_role(t, t0, t1);
  const double acquire = (a0 + a1) / 2, total = (t0 + t1) / 2;  // ranks 0 and 1 alike
  const double c = static_cast<double>(compute);
  state.counters["compute_ns"] = c;
  state.counters["acquire_ns"] = acquire;
  state.counters["total_ns"] = total;
  state.counters["overlap"] = acquire > 0 ? std::clamp((acquire + c - total) / acquire, 0.0, 1.0) : 0.0;
  state.counters["ranks"] = world().size;
}

using tally = bench::tally_inline;
using benchmark::internal::Benchmark;

// Fixed iterations: each is tens of milliseconds of computation, not the time of
// a lock operation.
void cost_args(Benchmark* b) { b->Iterations(10)->UseManualTime(); }
void overlap_args(Benchmark* b) {
  b->ArgName("compute_us")->Arg(0)->Arg(2)->Arg(10)->Arg(50)->Iterations(200)->UseManualTime();
}

BENCHMARK_TEMPLATE(BM_ComputeCost, tally)->Apply(cost_args);
BENCHMARK_TEMPLATE(BM_ComputeCost, tally_thread)->Apply(cost_args);
BENCHMARK_TEMPLATE(BM_AsyncOverlap, tally)->Apply(overlap_args);
BENCHMARK_TEMPLATE(BM_AsyncOverlap, tally_thread)->Apply(overlap_args);

}  // namespace

#endif  // TALLY_BENCH_HAVE_TALLY

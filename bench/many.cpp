// Many mutexes alive in one process: what one of them costs as their number grows
// (docs/benchmarks.md, "Many mutexes").
//
// BM_ManyReentry<kind>/mutexes:K   K mutexes of the kind on world (created
//   collectively, timed: the first alone, then the other K - 1), each with its token
//   idle at rank 0. Rank 0 then re-enters mutex 0, lock + unlock with no message,
//   in batches; the other ranks wait in a polling barrier. Counters: create_first_us
//   (the first mutex), create_each_us (the mean of the others), threads (this
//   process's, with the K mutexes alive), rss_mib and rss_per_mutex_kib (resident
//   memory, and its growth over the K mutexes divided by K). Fixed iterations: the
//   K mutexes are created once per benchmark, so Google Benchmark must not call it
//   again to size its runs.
// BM_StdMutex: the same loop on an uncontended std::mutex, the reference a
//   re-entry is compared with, in the same run.
#include <benchmark/benchmark.h>

#include <deque>
#include <exception>
#include <mutex>

#include "harness.hpp"
#include "lock_kinds.hpp"
#include "helpers/process_stats.hpp"

#if TALLY_BENCH_HAVE_TALLY

namespace {

using namespace bench;
using tally::helpers::resident_bytes;
using tally::helpers::thread_count;

constexpr std::int64_t iterations = 1 << 18;
constexpr std::int64_t batch = 1 << 12;

// Times lock + unlock of `lk` on rank 0 in batches; the others wait polling.
template <class Lock, class Poll>
void time_reentry(benchmark::State& state, Lock& lk, Poll&& poll) {
  const bool acting = world().rank == 0;
  if (acting)
    for (int i = 0; i < 1000; ++i) {
      lk.lock();
      lk.unlock();
    }
  barrier_polling(poll);
  while (state.KeepRunningBatch(batch)) {
    ns_t mine = 0;
    if (acting) {
      const ns_t t0 = now_ns();
      for (std::int64_t i = 0; i < batch; ++i) {
        lk.lock();
        lk.unlock();
      }
      mine = now_ns() - t0;
    }
    state.SetIterationTime(static_cast<double>(allreduce_polling(mine, MPI_MAX, poll)) * 1e-9);
  }
  barrier_polling(poll);
}

template <lock_kind L>
void BM_ManyReentry(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  std::deque<L> locks;  // a deque: a lock never moves
  const double rss0 = resident_bytes();
  ns_t first = 0, rest = 0;
  try {
    ns_t t0 = now_ns();
    locks.emplace_back(world().comm);
    first = now_ns() - t0;
    t0 = now_ns();
    while (locks.size() < k) locks.emplace_back(world().comm);
    rest = now_ns() - t0;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  first = allreduce_polling(first, MPI_MAX, [] {});
  rest = allreduce_polling(rest, MPI_MAX, [] {});
  const double rss = resident_bytes();
  const int threads = thread_count();
  auto poll = [&] { locks.front().poll(); };
  time_reentry(state, locks.front(), poll);
  state.counters["create_first_us"] = static_cast<double>(first) * 1e-3;
  state.counters["create_each_us"] = k > 1 ? static_cast<double>(rest) * 1e-3 / static_cast<double>(k - 1) : 0;
  state.counters["threads"] = threads;
  state.counters["rss_mib"] = rss / (1 << 20);
  state.counters["rss_per_mutex_kib"] = (rss - rss0) / 1024 / static_cast<double>(k);
}

void BM_StdMutex(benchmark::State& state) {
  struct std_lock {
    std::mutex mu;
    void lock() { mu.lock(); }
    void unlock() { mu.unlock(); }
  } lk;
  time_reentry(state, lk, [] {});
}

using tally = bench::tally_inline;

void many_args(benchmark::internal::Benchmark* b) {
  b->ArgName("mutexes")->Arg(1)->Arg(100)->Arg(10000)->Iterations(iterations)->UseManualTime();
}

BENCHMARK(BM_StdMutex)->Iterations(iterations)->UseManualTime();
BENCHMARK_TEMPLATE(BM_ManyReentry, tally)->Apply(many_args);
BENCHMARK_TEMPLATE(BM_ManyReentry, tally_thread)->Apply(many_args);

}  // namespace

#endif  // TALLY_BENCH_HAVE_TALLY

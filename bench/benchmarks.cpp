// The benchmarks of tally_bench. Each is one template over the lock kinds of
// lock_kinds.hpp, registered for every kind; BM_Floor, the physical floor, runs
// first so that the others can report their ratio to it. What each measures, and
// why, is in docs/benchmarks.md.
//
// Shape shared by all: construct the lock (collective), warm up, polling barrier,
// start counting traffic, then batches of KeepRunningBatch(). Each batch's time
// is agreed over all ranks (MPI_Allreduce of integer nanoseconds) before it goes
// to SetIterationTime(), so Google Benchmark makes the same decisions on every
// rank. Harness messages (turn passing, barriers, reductions) travel on
// world().comm and are not counted.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <optional>
#include <vector>

#include "harness.hpp"
#include "lock_kinds.hpp"

namespace {

using namespace bench;

constexpr int warmup_entries = 16;  // per rank, contended and local benchmarks
constexpr int warmup_rounds = 4;    // turn-based benchmarks
constexpr std::int64_t max_batch_per_rank = 256;
constexpr int tag_turn = 1, tag_go = 2, tag_done = 3;

bool enough_ranks(benchmark::State& state) {
  if (world().size >= 2) return true;
  state.SkipWithError(not_applicable("needs at least 2 ranks").c_str());
  return false;
}

// Constructs the lock on every rank, or skips the benchmark (lock_kinds.hpp).
template <lock_kind L>
bool make_lock(benchmark::State& state, std::optional<L>& lk) {
  return enough_ranks(state) && construct(state, lk, world().comm, world().shared_windows);
}

// --- BM_Floor: ping-pong of a token-sized message between ranks 0 and 1 ---------------
// One iteration is one one-way message, so the reported time is RTT/2 and every
// sample is one round trip halved. Other ranks idle.
void BM_Floor(benchmark::State& state) {
  if (!enough_ranks(state)) return;
  const world_info& w = world();
  comm_dup comm(w.comm);  // its own communicator: counted like a lock's traffic
  const int bytes = token_bytes(w.size);
  std::vector<std::byte> buf(static_cast<std::size_t>(bytes));
  measurement m;
  auto round_trips = [&](std::int64_t k, bool record) {
    for (std::int64_t i = 0; i < k; ++i) {
      if (w.rank == 0) {
        const ns_t t = now_ns();
        check(MPI_Send(buf.data(), bytes, MPI_BYTE, 1, 0, comm.get()), "MPI_Send(floor)");
        check(MPI_Recv(buf.data(), bytes, MPI_BYTE, 1, 0, comm.get(), MPI_STATUS_IGNORE), "MPI_Recv(floor)");
        if (record) m.add_sample(static_cast<double>(now_ns() - t) / 2);
      } else if (w.rank == 1) {
        check(MPI_Recv(buf.data(), bytes, MPI_BYTE, 0, 0, comm.get(), MPI_STATUS_IGNORE), "MPI_Recv(floor)");
        check(MPI_Send(buf.data(), bytes, MPI_BYTE, 0, 0, comm.get()), "MPI_Send(floor)");
      }
    }
  };
  auto no_poll = [] {};

  round_trips(100, false);
  barrier_polling(no_poll);
  m.begin();
  const std::int64_t batch = batch_iterations(state, 2, 2048);
  while (state.KeepRunningBatch(batch)) {
    const ns_t t0 = now_ns();
    round_trips(batch / 2, true);
    const ns_t t = allreduce_polling(w.rank == 0 ? now_ns() - t0 : 0, MPI_MAX, no_poll);
    state.SetIterationTime(static_cast<double>(t) * 1e-9);
    m.add_time(t);
    if (w.rank == 0) m.add_entries(static_cast<std::uint64_t>(batch));
  }
  barrier_polling(no_poll);
  m.end();
  const double median = m.publish(state, compare_to::nothing);
  if (w.rank == 0) measured_floor() = {median, w.size};
  state.counters["msg_bytes"] = bytes;
  // Inside a node a lock can hand over through shared memory: its floor is a cache
  // line's trip (docs/benchmarks.md, "The shared-memory floor").
  const double line = line_floor_ns(100000);
  if (std::isfinite(line)) state.counters["line_one_way_ns"] = line;
  // And the floor of a handoff inside a node (docs/benchmarks.md, "The ticket floor").
  const double ticket = ticket_floor_ns(100000);
  if (std::isfinite(ticket)) state.counters["ticket_handoff_ns"] = ticket;
}

// --- BM_Handoff and BM_CsSweep: every rank loops lock, CS, unlock, think ---------------
// One iteration is one critical-section entry anywhere; the time is the batch's
// span (max over ranks) divided by the entries of all ranks. The CS spins without
// calling the lock; think time polls (a well-behaved in_calls application). Each
// entry is stamped (one clock read) as soon as lock() returns; samples are the gaps
// between consecutive entries. (A stamp after unlock() would keep the clock out of
// the CS, but the RMA locks' unlock() returns only after remote completion, when
// the next holder may already be in, so exit gaps would misattribute handoffs.)
template <lock_kind L>
void run_contended(benchmark::State& state, ns_t cs_ns, ns_t think_ns) {
  std::optional<L> lk;
  if (!make_lock(state, lk)) return;
  auto poll = [&] { lk->poll(); };
  measurement m;
  auto entry = [&](bool record) {
    lk->lock();
    if (record) m.add_stamp(now_ns());
    spin_for(cs_ns);
    lk->unlock();
    if (think_ns > 0) think_polling(think_ns, poll);
  };

  for (int i = 0; i < warmup_entries; ++i) entry(false);
  barrier_polling(poll);
  m.begin();
  const std::int64_t per_rank = run_all_ranks(
      state, m, max_batch_per_rank,
      [&](std::int64_t k) {
        for (std::int64_t i = 0; i < k; ++i) entry(true);
      },
      poll);
  barrier_polling(poll);
  m.end();
  m.publish(state, compare_to::one_way, per_rank);
}

template <lock_kind L>
void BM_Handoff(benchmark::State& state) {
  run_contended<L>(state, 0, 0);
}

template <lock_kind L>
void BM_CsSweep(benchmark::State& state) {
  run_contended<L>(state, state.range(0), state.range(1));
}

// --- BM_RemoteAcquire: uncontended, the lock idle at the previous rank --------------
// Ranks take turns 0, 1, ..., n-1, 0, ...: a turn starts when the previous rank's
// zero-byte turn message arrives, after its unlock() returned, so the lock (the
// token) is idle at that rank, which polls. Only lock() is timed (unlock() is
// reported as release_ns); one iteration is one turn, and the time is the sum of
// the turns' lock() durations, so turn passing is never measured. Rank 0's turns
// are local for the centralized baselines (their home); away_ns is the mean over
// the other ranks' turns.
template <lock_kind L>
void BM_RemoteAcquire(benchmark::State& state) {
  std::optional<L> lk;
  if (!make_lock(state, lk)) return;
  auto poll = [&] { lk->poll(); };
  const int n = world().size, me = world().rank;
  const int prev = (me + n - 1) % n, next = (me + 1) % n;
  measurement m;
  auto rounds = [&](std::int64_t k, bool record) -> ns_t {
    ns_t mine = 0;
    for (std::int64_t r = 0; r < k; ++r) {
      if (me != 0 || r != 0) recv_polling(prev, tag_turn, poll);
      const ns_t a = now_ns();
      lk->lock();
      const ns_t b = now_ns();
      lk->unlock();
      const ns_t c = now_ns();
      if (record) {
        // Samples (p50, p99, their mean) are the turns away from rank 0, the
        // centralized baselines' home, so that every lock's figure is a remote one.
        if (me != 0) m.add_sample(static_cast<double>(b - a));
        m.add_extra(measurement::release, c - b);
        if (me != 0) m.add_extra(measurement::away, b - a);
        m.add_entries(1);
        mine += b - a;
      }
      if (me != n - 1 || r != k - 1) send_signal(next, tag_turn);
    }
    return mine;
  };

  rounds(warmup_rounds, false);
  barrier_polling(poll);
  m.begin();
  const std::int64_t per_rank = batch_iterations(state, n, n * max_batch_per_rank) / n;
  while (state.KeepRunningBatch(per_rank * n)) {
    const ns_t t = allreduce_polling(rounds(per_rank, true), MPI_SUM, poll);
    state.SetIterationTime(static_cast<double>(t) * 1e-9);
    m.add_time(t);
  }
  barrier_polling(poll);
  m.end();
  m.publish(state, compare_to::round_trip);
}

// --- BM_LocalReacquire: one rank relocks; the others idle (polling) ----------------
// Arg `rank`: who relocks. For tally the token stays there (0 messages); rank 0
// is also where the centralized baselines live. One iteration is one entry. The
// timed loop reads no clock inside (a clock read costs about as much as what is
// measured); after it, untimed, a sampling pass of the same loop takes one
// timestamp per entry for p50/p99, so those samples include one clock read
// (context: clock_read_ns).
template <lock_kind L>
void BM_LocalReacquire(benchmark::State& state) {
  std::optional<L> lk;
  if (!make_lock(state, lk)) return;
  auto poll = [&] { lk->poll(); };
  const int actor = static_cast<int>(state.range(0));
  const bool acting = world().rank == actor;
  measurement m;
  auto timed = [&](std::int64_t k) -> ns_t {
    const ns_t t0 = now_ns();
    for (std::int64_t i = 0; i < k; ++i) {
      lk->lock();
      lk->unlock();
    }
    return now_ns() - t0;
  };
  auto sampled = [&](std::int64_t k) {
    ns_t prev = now_ns();
    for (std::int64_t i = 0; i < k; ++i) {
      lk->lock();
      lk->unlock();
      const ns_t t = now_ns();
      m.add_sample(static_cast<double>(t - prev));
      prev = t;
    }
  };

  if (acting) timed(warmup_entries);
  barrier_polling(poll);
  m.begin();
  const std::int64_t batch = batch_iterations(state, 1, 4096);
  const std::int64_t samples = std::min<std::int64_t>(batch, 256);
  while (state.KeepRunningBatch(batch)) {
    ns_t mine = 0;
    if (acting) {
      mine = timed(batch);
      sampled(samples);
      m.add_entries(static_cast<std::uint64_t>(batch + samples));
    }
    const ns_t t = allreduce_polling(mine, MPI_MAX, poll);
    state.SetIterationTime(static_cast<double>(t) * 1e-9);
    m.add_time(t);
  }
  barrier_polling(poll);
  m.end();
  m.publish(state, compare_to::nothing);
}

// --- BM_IdleHolder: the holder computes without calling the lock -------------------
// Round: rank 0 takes and releases the lock (so it holds tally's token idle), tells
// rank 1 "go", then computes for `compute_us` without any MPI or lock call. Rank 1
// times its lock() from "go" on. With in_calls progress the request waits for the
// computation; with a progress thread (or passive-target RMA) it need not. One
// iteration is one timed acquisition; entries (for messages/entry) are both ranks'.
template <lock_kind L>
void BM_IdleHolder(benchmark::State& state) {
  std::optional<L> lk;
  if (!make_lock(state, lk)) return;
  auto poll = [&] { lk->poll(); };
  const ns_t compute = state.range(0) * 1000;
  const int me = world().rank;
  measurement m;
  auto rounds = [&](std::int64_t k, bool record) -> ns_t {
    ns_t mine = 0;
    for (std::int64_t r = 0; r < k; ++r) {
      if (me == 0) {
        lk->lock();
        lk->unlock();
        send_signal(1, tag_go);
        spin_for(compute);
        recv_polling(1, tag_done, poll);
      } else if (me == 1) {
        recv_polling(0, tag_go, poll);
        const ns_t a = now_ns();
        lk->lock();
        const ns_t b = now_ns();
        lk->unlock();
        send_signal(0, tag_done);
        if (record) {
          m.add_sample(static_cast<double>(b - a));
          mine += b - a;
        }
      }
      if (record && me <= 1) m.add_entries(1);
    }
    return mine;
  };

  rounds(warmup_rounds, false);
  barrier_polling(poll);
  m.begin();
  const std::int64_t batch = batch_iterations(state, 1, 1024);
  while (state.KeepRunningBatch(batch)) {
    const ns_t t = allreduce_polling(rounds(batch, true), MPI_MAX, poll);
    state.SetIterationTime(static_cast<double>(t) * 1e-9);
    m.add_time(t);
  }
  barrier_polling(poll);
  m.end();
  m.publish(state, compare_to::round_trip);
}

// --- registration ----------------------------------------------------------------------
using benchmark::internal::Benchmark;

void plain(Benchmark* b) { b->UseManualTime(); }
void local_args(Benchmark* b) { b->ArgName("rank")->Arg(0)->Arg(1)->UseManualTime(); }
void sweep_args(Benchmark* b) {
  b->ArgNames({"cs_ns", "think_ns"});
  for (std::int64_t cs : {0, 1000, 10000})
    for (std::int64_t think : {0, 10000}) b->Args({cs, think});
  b->UseManualTime();
}
// Fixed iterations: the wall time of a round is dominated by the holder's
// computation, which is not timed, so time-driven iteration counts would run far
// longer than the minimum time.
void idle_args(Benchmark* b) { b->ArgName("compute_us")->Arg(0)->Arg(10)->Arg(100)->Iterations(300)->UseManualTime(); }

// Short names: they appear in benchmark names and reports.
#if TALLY_BENCH_HAVE_TALLY
using tally = bench::tally_inline;
#define TALLY_BENCH_TALLY_KINDS(BM, ARGS)            \
  BENCHMARK_TEMPLATE(BM, tally)->Apply(ARGS);        \
  BENCHMARK_TEMPLATE(BM, tally_thread)->Apply(ARGS); \
  BENCHMARK_TEMPLATE(BM, tally_node)->Apply(ARGS);
#else
#define TALLY_BENCH_TALLY_KINDS(BM, ARGS)
#endif

#define TALLY_BENCH_ALL_KINDS(BM, ARGS)             \
  TALLY_BENCH_TALLY_KINDS(BM, ARGS)                 \
  BENCHMARK_TEMPLATE(BM, win_lock)->Apply(ARGS);    \
  BENCHMARK_TEMPLATE(BM, rma_mcs)->Apply(ARGS);     \
  BENCHMARK_TEMPLATE(BM, lock_server)->Apply(ARGS); \
  BENCHMARK_TEMPLATE(BM, ricart_agrawala)->Apply(ARGS);

BENCHMARK(BM_Floor)->Apply(plain);
TALLY_BENCH_ALL_KINDS(BM_Handoff, plain)
TALLY_BENCH_ALL_KINDS(BM_RemoteAcquire, plain)
TALLY_BENCH_ALL_KINDS(BM_LocalReacquire, local_args)
TALLY_BENCH_ALL_KINDS(BM_CsSweep, sweep_args)
TALLY_BENCH_ALL_KINDS(BM_IdleHolder, idle_args)

}  // namespace

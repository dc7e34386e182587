// bench/harness.hpp — what every benchmark needs to run the same way on every rank.
//
// Google Benchmark decides how many iterations to run from the time it is told.
// Here that time is always the same on every rank: benchmarks use manual time,
// and the value passed to SetIterationTime() comes from an MPI_Allreduce over
// integer nanoseconds (exact, hence bit-identical everywhere). So every rank runs
// the same iteration counts, the same batches and the same collectives. The
// harness's own communication happens on world().comm, which the traffic counter
// ignores. See docs/benchmarks.md.
#pragma once

#include <mpi.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "traffic.hpp"

namespace bench {

using ns_t = std::int64_t;

struct world_info {
  MPI_Comm comm = MPI_COMM_NULL;  // the harness's duplicate of MPI_COMM_WORLD
  int rank = 0;
  int size = 1;
  // Distinct hosts (MPI_Get_processor_name): each has its own steady clock. Not the
  // shared-memory split, which can be finer (MPICH with MPIR_CVAR_NOLOCAL=1 puts
  // every rank alone) while one clock still times all ranks.
  int nodes = 1;
  // MPI_Win_allocate_shared works on every rank's node communicator (the transport's
  // osc component can make shared windows; tally_node needs them).
  bool shared_windows = false;
};

// Valid between init_world() and finalize_world().
const world_info& world() noexcept;
// Collective; call once after MPI_Init. Excludes world().comm from traffic counts.
void init_world();
void finalize_world() noexcept;

inline ns_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Mean cost of one now_ns() on this process, measured over 100000 reads.
double clock_read_ns() noexcept;

// Computes (spins) for ns without any MPI call.
void spin_for(ns_t ns) noexcept;

// Waits for req to complete while calling poll().
template <class Poll>
void wait_polling(MPI_Request& req, Poll&& poll) {
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    poll();
  }
}

// A barrier on world().comm that keeps calling poll() while it waits.
template <class Poll>
void barrier_polling(Poll&& poll) {
  MPI_Request req;
  MPI_Ibarrier(world().comm, &req);
  wait_polling(req, poll);
}

// MPI_Allreduce of one integer on world().comm, calling poll() while it waits.
template <class Poll>
ns_t allreduce_polling(ns_t v, MPI_Op op, Poll&& poll) {
  ns_t out = 0;
  MPI_Request req;
  MPI_Iallreduce(&v, &out, 1, MPI_INT64_T, op, world().comm, &req);
  wait_polling(req, poll);
  return out;
}

// Receives / sends a zero-byte harness message (turn passing) on world().comm.
template <class Poll>
void recv_polling(int from, int tag, Poll&& poll) {
  MPI_Request req;
  MPI_Irecv(nullptr, 0, MPI_BYTE, from, tag, world().comm, &req);
  wait_polling(req, poll);
}
// Zero bytes: completes locally (eager) without the receiver's progress.
void send_signal(int to, int tag);

// Computes for ns, calling poll() in between (a well-behaved in_calls application).
template <class Poll>
void think_polling(ns_t ns, Poll&& poll) {
  const ns_t until = now_ns() + ns;
  while (now_ns() < until) poll();
}

// Iterations for one KeepRunningBatch(): Google Benchmark's current request,
// rounded up to a multiple of `unit` and clamped to [unit, cap]. The same on
// every rank because the request is.
std::int64_t batch_iterations(const benchmark::State& state, std::int64_t unit, std::int64_t cap);

// The floor measured by BM_Floor earlier in this run (on rank 0); NaN until then.
// Its median, not its mean: robust against the scheduler stalls that inflate a
// mean, and conservative, since a lock's mean (stalls included) is compared with it.
struct floor_value {
  double one_way_ns = NAN;
  int ranks = 0;  // BM_Floor's message size depends on the rank count
};
floor_value& measured_floor() noexcept;

// The shared-memory floor: one cache line's one-way trip between ranks 0 and 1
// (a store seen by a spinning load, averaged over a ping-pong of `round_trips`),
// through an MPI_Win_allocate_shared window; what any lock handing over inside a
// node pays at least once. Collective over world().comm; NaN on every rank unless
// ranks 0 and 1 share a node, the transport makes shared windows and the node's
// ranks are no more than its cores (oversubscribed, it would time the scheduler).
double line_floor_ns(int round_trips);
// The shared-memory lock floor: the time per entry of a ticket lock that ranks 0
// and 1 take in turns, each looping lock(); unlock(); `entries` times, through such a
// window (its count and its turn on two lines). Its unlock() reads nothing that a
// waiter wrote, which makes it the cheapest handoff a lock can make through shared
// memory; a lock whose unlock() must learn who waits pays at least a line more.
// Collective; NaN where line_floor_ns is.
double ticket_floor_ns(int entries);

// What the mean of a benchmark is compared with.
enum class compare_to {
  nothing,
  one_way,
  round_trip
};

// What one invocation of a benchmark measured on this rank, and its publication
// as user counters (rank 0's are reported).
class measurement {
 public:
  // Start and stop counting traffic. Call each after a polling barrier, so that
  // every message of the measured entries, and nothing else, falls in between;
  // begin() ends with a barrier of its own (see there).
  void begin() noexcept;
  void end() noexcept;

  void add_time(ns_t ns) noexcept { time_ns_ += ns; }  // what went to SetIterationTime
  void add_entries(std::uint64_t k) noexcept { entries_ += k; }
  // Extra means, published as <name>_ns when anything was added.
  enum extra {
    release,
    away,
    extras
  };  // release_ns, away_ns
  void add_extra(extra e, ns_t ns) noexcept {
    extra_ns_[e] += ns;
    ++extra_n_[e];
  }
  void add_sample(double ns) { samples_.push_back(ns); }
  void add_stamp(ns_t t) { stamps_.push_back(t); }

  // Collective over world().comm. Sets the counters on `state` and returns the
  // median sample (on rank 0; NaN elsewhere). Samples are this rank's add_sample()
  // values or, if per_rank_batch > 0, gaps between consecutive critical-section
  // entries derived from add_stamp() times taken in batches of per_rank_batch
  // entries per rank; then gaps where the rank changes are handoffs (handoff_*
  // counters). See docs/benchmarks.md.
  double publish(benchmark::State& state, compare_to ref, std::int64_t per_rank_batch = 0);

  // Mean time per iteration (valid on every rank after the loop).
  double mean_ns(const benchmark::State& state) const noexcept;

 private:
  struct gathered {
    std::vector<double> samples;   // all gaps (or samples), unsorted
    std::vector<double> handoffs;  // gaps between entries of different ranks
  };
  gathered gather(std::int64_t per_rank_batch) const;

  traffic::counts before_{}, after_{};
  ns_t time_ns_ = 0;
  std::uint64_t entries_ = 0;
  ns_t extra_ns_[extras] = {};
  std::uint64_t extra_n_[extras] = {};
  std::vector<double> samples_;
  std::vector<ns_t> stamps_;
};

// The batch loop of benchmarks in which every rank works at once: each batch, every
// rank calls body(k) with the same k (k entries of its own), the batch counts k × n
// iterations, and its time is the span over all ranks. Returns k.
template <class Body, class Poll>
std::int64_t run_all_ranks(benchmark::State& state, measurement& m, std::int64_t max_per_rank, Body&& body,
                           Poll&& poll) {
  const int n = world().size;
  const std::int64_t per_rank = batch_iterations(state, n, n * max_per_rank) / n;
  while (state.KeepRunningBatch(per_rank * n)) {
    const ns_t t0 = now_ns();
    body(per_rank);
    const ns_t t = allreduce_polling(now_ns() - t0, MPI_MAX, poll);
    state.SetIterationTime(static_cast<double>(t) * 1e-9);
    m.add_time(t);
    m.add_entries(static_cast<std::uint64_t>(per_rank));
  }
  return per_rank;
}

}  // namespace bench

// bench/baselines/rma_mcs.hpp — an MCS queue lock over MPI-3 RMA atomics.
//
// The design of the MCS lock in Gropp, Hoefler, Thakur and Lusk, "Using Advanced
// MPI" (MIT Press, 2014), in its one-sided chapters: every rank exposes
// {next, blocked}; rank 0 also holds the queue's tail. All ranks keep one
// MPI_Win_lock_all epoch open for the lock's lifetime.
//   acquire: blocked = 1; tail <- me by MPI_Fetch_and_op(MPI_REPLACE); if there
//            was a predecessor, write me into its `next` (MPI_Accumulate REPLACE)
//            and spin on the local `blocked`.
//   release: if `next` is unset, MPI_Compare_and_swap(tail: me -> nil); if that
//            succeeds nobody waits. Otherwise wait for `next`, then clear its
//            `blocked` (MPI_Accumulate REPLACE).
// Each operation is followed by MPI_Win_flush to its target: inside a lock_all
// epoch an operation may otherwise wait for the next synchronization call, and
// its target would spin forever. The spin on `blocked` reads window memory
// directly after MPI_Win_sync, which needs the unified memory model (checked at
// construction); `next`, which a successor writes concurrently, is read with
// MPI_Fetch_and_op(MPI_NO_OP) on this rank, as the book's release does (with plain
// loads of `next` the lock hung under Open MPI's osc/sm about once in 25 runs;
// docs/benchmarks.md).
// FIFO. Uncontended: 2 remote atomics (from ranks other than 0).
#pragma once

#include <mpi.h>

#include "baselines/mpi_util.hpp"

namespace bench {

class rma_mcs {
 public:
  static constexpr const char* name = "rma_mcs";

  // Collective over comm. Throws mpi_failure if the window is not MPI_WIN_UNIFIED.
  explicit rma_mcs(MPI_Comm comm);
  // Collective. The calling rank must not hold the lock.
  ~rma_mcs();
  rma_mcs(const rma_mcs&) = delete;
  rma_mcs& operator=(const rma_mcs&) = delete;

  void lock();
  void unlock();
  // Drives MPI progress (remote updates of this rank's words need it with
  // osc components that emulate RDMA in software).
  void poll() { kick_progress(comm_.get()); }

 private:
  enum slot : int {
    next = 0,
    blocked = 1,
    tail = 2
  };
  static constexpr int home = 0;  // holds the tail
  static constexpr int nil = -1;

  int load(slot s) const noexcept;
  // This rank's word s, read by MPI_Fetch_and_op(MPI_NO_OP): atomic against a
  // concurrent remote MPI_Accumulate, which a plain load is not.
  int fetch(slot s);
  void store(slot s, int v) noexcept;
  // Spins (MPI_Win_sync + progress) until s != v (`next` read by fetch, `blocked`
  // by load); returns the new value.
  int wait_while(slot s, int v);

  comm_dup comm_;
  rma_window w_{};
  MPI_Win win_ = MPI_WIN_NULL;
  int* base_ = nullptr;
};

}  // namespace bench

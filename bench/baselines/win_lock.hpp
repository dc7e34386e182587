// bench/baselines/win_lock.hpp — MPI_Win_lock(MPI_LOCK_EXCLUSIVE) used as a mutex.
//
// The lock is an exclusive passive-target epoch on a one-word window at rank 0.
// MPI_Win_lock need not block until the lock is granted (MPI-3.1 §11.5.3); only
// the completion of an operation inside the epoch proves it is held. So lock()
// also reads the word with MPI_Get and waits for it with MPI_Win_flush: once the
// flush returns, the Get has executed inside the exclusive epoch, hence the lock
// is held until MPI_Win_unlock. Not FIFO: MPI promises no order among waiters.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "baselines/mpi_util.hpp"

namespace bench {

class win_lock {
 public:
  static constexpr const char* name = "win_lock";

  // Collective over comm.
  explicit win_lock(MPI_Comm comm);
  // Collective. The calling rank must not hold the lock.
  ~win_lock();
  win_lock(const win_lock&) = delete;
  win_lock& operator=(const win_lock&) = delete;

  void lock();
  void unlock();
  // While locked: the word at rank 0 as lock() read it, and a write of it that
  // completes by unlock() (so the word can hold state the lock protects).
  std::int64_t word() const noexcept { return probe_; }
  void put_word(std::int64_t v);
  // Drives MPI progress for passive-target implementations that need the target
  // (rank 0) inside MPI.
  void poll() { kick_progress(comm_.get()); }

 private:
  static constexpr int home = 0;
  comm_dup comm_;
  rma_window w_{};
  MPI_Win win_ = MPI_WIN_NULL;
  std::int64_t* base_ = nullptr;
  std::int64_t probe_ = 0;
  std::int64_t put_ = 0;  // put_word()'s origin buffer, valid until unlock()
};

}  // namespace bench

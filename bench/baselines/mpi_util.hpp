// bench/baselines/mpi_util.hpp — MPI helpers shared by the baseline locks and the
// benchmark harness.
#pragma once

#include <mpi.h>

#include <stdexcept>

#include "helpers/rma_window.h"  // windows whose RMA reaches its target

namespace bench {

// What the baselines throw when an MPI call fails: names the call and carries
// MPI's error string.
class mpi_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws mpi_failure unless rc == MPI_SUCCESS. Only meaningful on handles whose
// error handler is MPI_ERRORS_RETURN (comm_dup and the baselines' windows).
void check(int rc, const char* call);

// For destructors, which must not throw: prints what failed and aborts the job.
[[noreturn]] void die(const char* what) noexcept;
void check_or_abort(int rc, const char* call) noexcept;

// A private duplicate of a communicator, with MPI_ERRORS_RETURN. Construction is
// collective over the parent; destruction is collective and skipped after
// MPI_Finalize. Each lock kind owns one, so its tags never meet another's.
class comm_dup {
 public:
  explicit comm_dup(MPI_Comm parent);
  ~comm_dup();
  comm_dup(const comm_dup&) = delete;
  comm_dup& operator=(const comm_dup&) = delete;

  MPI_Comm get() const noexcept { return comm_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

// Drives MPI progress once without touching any message: some one-sided and
// point-to-point paths (osc/rdma over TCP, rendezvous sends) advance only while
// the target process is inside MPI.
void kick_progress(MPI_Comm comm);

}  // namespace bench

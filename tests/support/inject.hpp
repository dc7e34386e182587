// Failure injection through the PMPI profiling interface. Include in exactly one
// source file of a test executable: it defines MPI_Comm_idup and MPI_Isend, which
// then win over the MPI library's for every caller in the process, libtally
// included.
#pragma once

#include <mpi.h>

#include <atomic>

namespace tally::test {
// While true (set on every rank alike), MPI_Comm_idup fails with MPI_ERR_OTHER.
inline bool fail_comm_idup = false;
// When k > 0: the k-th MPI_Isend of this process from now fails with MPI_ERR_OTHER,
// once (any thread's; the count is atomic).
inline std::atomic<int> fail_isend_after{0};
}  // namespace tally::test

extern "C" int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* out, MPI_Request* req) {
  if (tally::test::fail_comm_idup) return MPI_ERR_OTHER;
  return PMPI_Comm_idup(comm, out, req);
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* req) {
  int k = tally::test::fail_isend_after.load();
  while (k > 0 && !tally::test::fail_isend_after.compare_exchange_weak(k, k - 1)) {
  }
  if (k == 1) return MPI_ERR_OTHER;
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

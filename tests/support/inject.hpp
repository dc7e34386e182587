// Failure injection through the PMPI profiling interface. Include in exactly one
// source file of a test executable: it defines MPI_Comm_idup, which then wins over
// the MPI library's for every caller in the process, libtally included.
#pragma once

#include <mpi.h>

namespace tally::test {
// While true (set on every rank alike), MPI_Comm_idup fails with MPI_ERR_OTHER.
inline bool fail_comm_idup = false;
}  // namespace tally::test

extern "C" int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* out, MPI_Request* req) {
  if (tally::test::fail_comm_idup) return MPI_ERR_OTHER;
  return PMPI_Comm_idup(comm, out, req);
}

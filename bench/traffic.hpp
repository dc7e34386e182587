// bench/traffic.hpp — counts what this process sends, by PMPI interposition.
//
// traffic.cpp defines MPI_Send, MPI_Isend, ..., MPI_Put, MPI_Fetch_and_op, ... and
// forwards each to its PMPI_ twin after counting it. It must be linked into the
// executable itself (not a library), and the executable must export its symbols
// (ENABLE_EXPORTS), so that libtally's MPI calls bind to these definitions.
//
// What counts as one message:
//   - a point-to-point send (blocking, nonblocking, persistent at MPI_Start,
//     the send half of MPI_Sendrecv) to another rank;
//   - an RMA data or atomic operation on another rank (MPI_Put, MPI_Get,
//     MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap
//     and their request-based forms). Operations that return data need a round
//     trip on the wire; `rma_fetch` counts those separately;
//   - an MPI_Win_lock or MPI_Win_unlock of another rank: every passive-target
//     implementation has to reach the target for it, at least once (retries of a
//     contended lock inside the implementation are invisible here).
// Bytes are the data an operation carries: count x MPI_Type_size for sends,
// operands out plus results back for RMA. Collectives, receives and traffic on
// an excluded communicator are not counted; sends and operations addressed to the
// calling rank itself count as `local`, not as messages.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace bench::traffic {

struct counts {
  std::uint64_t p2p = 0;  // point-to-point sends to another rank
  std::uint64_t p2p_bytes = 0;
  std::uint64_t rma = 0;        // RMA operations on another rank
  std::uint64_t rma_fetch = 0;  //   of which return data (a round trip)
  std::uint64_t rma_bytes = 0;
  std::uint64_t rma_sync = 0;  // MPI_Win_lock/MPI_Win_unlock of another rank
  std::uint64_t local = 0;     // sends and RMA operations addressed to oneself

  std::uint64_t messages() const noexcept { return p2p + rma + rma_sync; }
  std::uint64_t bytes() const noexcept { return p2p_bytes + rma_bytes; }
  counts operator-(const counts& o) const noexcept;
};

// This process's totals so far. Thread-safe.
counts snapshot() noexcept;

// Never count traffic on comm (the benchmark harness's own communicator). Call
// before any other thread uses MPI; at most one communicator is excluded.
void exclude(MPI_Comm comm) noexcept;

// Largest point-to-point message (bytes) sent since the last reset_max().
std::uint64_t max_p2p_bytes() noexcept;
void reset_max() noexcept;

}  // namespace bench::traffic

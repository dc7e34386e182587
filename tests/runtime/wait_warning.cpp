// The wait warning where no progress thread is possible: MPI is initialized with
// MPI_THREAD_FUNNELED, so the default progress resolves to inside calls. Rank 0
// keeps the token idle and computes for 0.9 s without calling tally; every other
// rank waits in lock() and must print one diagnostic after the 0.3 s limit (the
// option for the first mutex, TALLY_WAIT_WARNING for the second), then get the
// lock once rank 0 polls. The output is checked by ctest (EXPECT regexes).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tally/mutex.hpp"

namespace {

void compute_for(std::chrono::milliseconds d) {
  volatile double x = 1.0;
  for (const auto until = std::chrono::steady_clock::now() + d; std::chrono::steady_clock::now() < until;)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
}

// Rank 0 holds the token idle while the others wait past the limit; returns 0 if
// every lock completed and the mode is the expected one.
int scenario(tally::mutex& m) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (m.progress() != tally::progress_mode::in_calls) {
    std::printf("wait_warning: FAILED: progress resolved to a thread under MPI_THREAD_FUNNELED\n");
    return 1;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    compute_for(std::chrono::milliseconds(900));  // no tally call: the others wait
    m.poll();
  }
  m.lock();
  m.unlock();
  // Everyone locks once; a barrier that keeps the mutex answering ends the round.
  MPI_Request bar;
  MPI_Ibarrier(MPI_COMM_WORLD, &bar);
  for (int done = 0; !done;) {
    m.poll();
    MPI_Test(&bar, &done, MPI_STATUS_IGNORE);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int bad = 0;
  {
    tally::options o;
    o.name = "wait-by-option";
    o.wait_warning = std::chrono::milliseconds(300);
    tally::mutex m(MPI_COMM_WORLD, o);
    bad |= scenario(m);
  }
  {
    setenv("TALLY_WAIT_WARNING", "0.3", 1);  // read at creation
    tally::options o;
    o.name = "wait-by-environment";
    tally::mutex m(MPI_COMM_WORLD, o);
    bad |= scenario(m);
  }
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && all == 0) std::printf("wait_warning: ok\n");
  MPI_Finalize();
  return all;
}

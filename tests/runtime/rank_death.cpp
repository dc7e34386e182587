// A rank killed by SIGKILL while the others hold, wait for or use a tally mutex.
// Usage: rank_death holder|waiter|idle-owner thread|in_calls
// The last rank dies: as the holder (inside the critical section), as a waiter
// (its REQUESTs out, the token on its way to it), or as the idle owner of the
// token. The survivors then all call lock(), which can never complete. The job
// must still end, non-zero, with the death named: tests/runtime/CMakeLists.txt
// runs this under a time bound and checks the launcher's report.
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "tally/mutex.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 3 || n < 2) {
    if (rank == 0) std::fprintf(stderr, "usage: rank_death holder|waiter|idle-owner thread|in_calls (2+ ranks)\n");
    MPI_Finalize();
    return 2;
  }
  const char* role = argv[1];
  const int victim = n - 1;
  tally::options o;
  o.progress = std::strcmp(argv[2], "thread") == 0 ? tally::progress_mode::thread : tally::progress_mode::in_calls;
  o.initial_owner = std::strcmp(role, "idle-owner") == 0 ? victim : 0;
  tally::mutex m(MPI_COMM_WORLD, o);

  if (std::strcmp(role, "holder") == 0 && rank == victim) m.lock();
  tally::lock_request pending;
  if (std::strcmp(role, "waiter") == 0) {
    if (rank == 0) m.lock();
    MPI_Barrier(MPI_COMM_WORLD);  // rank 0 holds before the victim asks
    if (rank == victim) pending = m.lock_async();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == victim) {
    std::printf("rank_death: rank %d dies as %s\n", rank, role);
    std::fflush(stdout);
    raise(SIGKILL);
  }
  if (std::strcmp(role, "waiter") == 0 && rank == 0) m.unlock();  // the token goes to the dead
  m.lock();                                                       // never completes: the token is lost or unreachable
  std::printf("rank_death: rank %d entered, which it cannot have\n", rank);
  m.unlock();
  MPI_Finalize();
  return 0;
}

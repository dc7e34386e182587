// A rank that needs the lock and a message from its neighbour, whichever comes
// first: the lock request is an MPI request like the receive, so one MPI_Waitany
// serves both, and the rank computes while the token travels.
//
//   mpirun -np 4 ./example_async_lock
//
// mpi_request() needs the mutex's progress thread, which the default options give
// when MPI provides MPI_THREAD_MULTIPLE.
#include <mpi.h>

#include <cstdio>
#include <tally/mutex.hpp>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long shared_updates = 0;  // stands for state that the critical section protects
  int ok = 1;
  try {
    tally::mutex m(MPI_COMM_WORLD);
    if (provided < MPI_THREAD_MULTIPLE) {
      // No progress thread: test() in a compute loop is the portable way.
      tally::lock_request r = m.lock_async();
      while (!r.test()) { /* compute */
      }
      ++shared_updates;
      m.unlock();
    } else {
      tally::lock_request r = m.lock_async();
      int from_left = -1;
      MPI_Request reqs[2] = {r.mpi_request(), MPI_REQUEST_NULL};
      MPI_Irecv(&from_left, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &reqs[1]);
      MPI_Send(&rank, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
      for (int left = 2; left > 0; --left) {
        int which = MPI_UNDEFINED;
        MPI_Waitany(2, reqs, &which, MPI_STATUS_IGNORE);
        if (which == 0) {  // the lock: this thread holds the critical section
          ++shared_updates;
          m.unlock();
        } else {
          ok &= from_left == (rank + size - 1) % size;
        }
      }
    }
    ok &= m.stats().acquisitions == 1;
  } catch (const tally::error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    ok = 0;
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) std::printf("async_lock: %s\n", all ? "ok" : "FAILED");
  MPI_Finalize();
  return all ? 0 : 1;
}

// Uses the installed tally: lock_guard over tally::mutex, then checks the count.
#include <mpi.h>

#include <cstdio>
#include <mutex>
#include <tally/mutex.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int ok = 0;
  {
    tally::mutex m(MPI_COMM_WORLD);
    for (int i = 0; i < 50; ++i) std::lock_guard<tally::mutex> g(m);
    ok = m.stats().acquisitions == 50;
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("consumer: %s\n", all ? "ok" : "FAILED");
  MPI_Finalize();
  return all ? 0 : 1;
}

// A std::vector<double> that travels with the lock: tally::guarded<T> for a type
// Boost.Serialization can serialize (tally/boost.hpp; link tally::boost). Every
// rank appends one value; then each reads the vector until all values are in.
// Prints "guarded_vector: ok" on rank 0 when the vector holds every rank's value.
#include <mpi.h>

#include <boost/serialization/vector.hpp>
#include <cstdio>
#include <numeric>
#include <tally/boost.hpp>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double sum = 0;
  {
    tally::guarded<std::vector<double>> samples(MPI_COMM_WORLD, {}, 4096);  // capacity in bytes
    {
      auto v = samples.lock();   // the vector arrives with the token...
      v->push_back(rank * 0.5);  // ...and leaves with it, packed, at the end of the scope
    }
    for (bool all = false; !all;) {  // every rank keeps entering until all have appended
      auto v = samples.lock();
      all = v->size() == static_cast<std::size_t>(size);
      if (all) sum = std::accumulate(v->begin(), v->end(), 0.0);
    }
  }  // collective free
  const bool ok = sum == 0.25 * size * (size - 1);
  if (rank == 0) std::printf("guarded_vector: %s\n", ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}

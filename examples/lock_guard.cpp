// Every rank appends a multi-line record to one shared file. tally::mutex keeps
// the records whole: without it, lines of different ranks interleave.
//
//   mpirun -np 4 ./example_lock_guard ledger.txt
#include <mpi.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <tally/mutex.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string path = argc > 1 ? argv[1] : "ledger.txt";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    tally::mutex m(MPI_COMM_WORLD);  // collective; rank 0 holds the token first
    for (int round = 0; round < 3; ++round) {
      std::lock_guard<tally::mutex> guard(m);  // blocks until this rank holds it
      std::FILE* f = std::fopen(path.c_str(), "a");
      if (!f) throw std::runtime_error("cannot open " + path);
      std::fprintf(f, "rank %d round %d begin\n", rank, round);
      std::fprintf(f, "rank %d round %d end\n", rank, round);
      std::fclose(f);
    }
    const tally::stats s = m.stats();
    std::printf("rank %d: %llu entries, %llu without messages\n", rank, static_cast<unsigned long long>(s.acquisitions),
                static_cast<unsigned long long>(s.local_acquisitions));
  } catch (const std::exception& e) {  // tally::error carries a clear message
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();  // after the mutex's destructor freed it collectively
  return 0;
}

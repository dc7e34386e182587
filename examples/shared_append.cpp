// Every rank appends variable-size records to one shared file; the next free
// offset travels in the token. Rank 0 then checks the file record by record.
//
//   mpirun -np 4 ./example_shared_append out.dat 1000
#include <cstdio>
#include <cstdlib>

#include "helpers/shared_append.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const char* path = argc > 1 ? argv[1] : "shared_append.dat";
  const auto per_rank = static_cast<std::uint32_t>(argc > 2 ? std::atoi(argv[2]) : 1000);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_File fh;
  MPI_File_delete(path, MPI_INFO_NULL);  // ignore failure: it may not exist
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
    std::fprintf(stderr, "cannot open %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  {
    tally::guarded<std::uint64_t> next(MPI_COMM_WORLD);  // offset 0 at rank 0
    const double t0 = MPI_Wtime();
    for (std::uint32_t i = 0; i < per_rank; ++i) tally::example::append(next, fh, tally::example::make_record(rank, i));
    const double dt = MPI_Wtime() - t0;
    if (rank == 0) std::printf("rank 0: %u appends in %.3f s\n", per_rank, dt);
  }  // collective free; every offset reservation is done
  MPI_File_close(&fh);

  if (rank == 0) {
    std::FILE* f = std::fopen(path, "rb");
    std::vector<std::byte> bytes;
    std::byte buf[1 << 16];
    for (std::size_t n; f && (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.insert(bytes.end(), buf, buf + n);
    if (f) std::fclose(f);
    const std::string problem = tally::example::verify(bytes, size, per_rank);
    std::printf("%s: %zu bytes, %s\n", path, bytes.size(), problem.empty() ? "every record intact" : problem.c_str());
  }
  MPI_Finalize();
  return 0;
}

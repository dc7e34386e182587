/* Every rank appends a multi-line record to one shared file, one rank at a time.
 *
 *   mpirun -np 4 ./example_c ledger.txt
 */
#include <mpi.h>
#include <stdio.h>
#include <tally/tally.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    int rc_ = (call);                                                                   \
    if (rc_ != TALLY_SUCCESS) {                                                         \
      fprintf(stderr, "%s: %s (%s)\n", #call, tally_strerror(rc_), tally_last_error()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                     \
    }                                                                                   \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *path = argc > 1 ? argv[1] : "ledger.txt";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  tally_options opts;
  tally_options_init(&opts);
  tally_mutex m = NULL;
  CHECK(tally_mutex_create(MPI_COMM_WORLD, &opts, &m));
  for (int round = 0; round < 3; ++round) {
    CHECK(tally_mutex_lock(m));
    FILE *f = fopen(path, "a");
    if (f) {
      fprintf(f, "rank %d round %d begin\n", rank, round);
      fprintf(f, "rank %d round %d end\n", rank, round);
      fclose(f);
    }
    CHECK(tally_mutex_unlock(m));
  }
  tally_stats s;
  CHECK(tally_mutex_get_stats(m, &s));
  printf("rank %d: %llu entries, %llu without messages\n", rank, (unsigned long long)s.acquisitions,
         (unsigned long long)s.local_acquisitions);
  CHECK(tally_mutex_free(&m));
  MPI_Finalize();
  return 0;
}

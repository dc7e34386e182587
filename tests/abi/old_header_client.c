/* A program built against the public C header of an earlier 1.x release (a copy
 * in headers/<version>/) and run against the library of this build: create with
 * options, lock, stats, free, as the ABI promise in README.md, "Versions", says
 * it keeps working. */
#include <stdio.h>
#include <string.h>

#include "tally/tally.h"

#if TALLY_VERSION_MAJOR != 1 || TALLY_VERSION_MINOR != 0
#error "built against the current header instead of the copy of 1.0's"
#endif

static int check(int rc, const char *call) {
  if (rc != TALLY_SUCCESS) {
    fprintf(stderr, "old_header_client: %s: %s (%s)\n", call, tally_strerror(rc), tally_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, major = -1, minor = -1, patch = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check(tally_get_version(&major, &minor, &patch), "tally_get_version");
  if (major != TALLY_VERSION_MAJOR) {
    fprintf(stderr, "old_header_client: the library is %d.x, the header %d.x\n", major, TALLY_VERSION_MAJOR);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  tally_options opts;
  check(tally_options_init(&opts), "tally_options_init");
  opts.initial_owner = size - 1;
  opts.name = "old header";
  tally_mutex m;
  check(tally_mutex_create(MPI_COMM_WORLD, &opts, &m), "tally_mutex_create");
  const int rounds = 50;
  for (int i = 0; i < rounds; ++i) {
    check(tally_mutex_lock(m), "tally_mutex_lock");
    check(tally_mutex_unlock(m), "tally_mutex_unlock");
  }
  tally_stats st;
  memset(&st, 0xab, sizeof st);
  check(tally_mutex_get_stats(m, &st), "tally_mutex_get_stats");
  int bad = st.acquisitions != (uint64_t)rounds || st.local_acquisitions > st.acquisitions ||
            st.tokens_received > st.acquisitions;
  if (bad)
    fprintf(stderr, "old_header_client: rank %d: %llu acquisitions (%llu local), %llu tokens received\n", rank,
            (unsigned long long)st.acquisitions, (unsigned long long)st.local_acquisitions,
            (unsigned long long)st.tokens_received);
  check(tally_mutex_free(&m), "tally_mutex_free");
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad)
    printf("old_header_client: ok: header %d.%d.%d, library %d.%d.%d, %d ranks\n", TALLY_VERSION_MAJOR,
           TALLY_VERSION_MINOR, TALLY_VERSION_PATCH, major, minor, patch, size);
  MPI_Finalize();
  return any_bad;
}

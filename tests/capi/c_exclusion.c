/* Mutual exclusion through the documented C API only: inside the critical section
 * each rank does a non-atomic read-modify-write of a counter in an MPI window (a
 * read, then a separate write) and swaps its rank into an occupancy word.
 * Exits 0 and prints "c_exclusion: ok" on rank 0 iff the count is exact and no
 * rank ever found the critical section occupied. The window comes from
 * helpers/rma_window.h: MPI_Win_allocate where its RMA reaches the target;
 * every operation is rma_window_apply() (complete at the target when it returns). */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <tally/tally.h>

#include "helpers/rma_window.h"

#define ITERATIONS 200

static int check(int rc, const char *what) {
  if (rc != TALLY_SUCCESS) {
    fprintf(stderr, "%s: %s: %s\n", what, tally_strerror(rc), tally_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  rma_window w;
  if (rma_window_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_COMM_WORLD, &w) != MPI_SUCCESS)
    MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Win win = w.win;
  int64_t *base = (int64_t *)w.base;
  base[0] = 0;
  base[1] = -1;
  MPI_Win_lock_all(0, win);
  MPI_Barrier(MPI_COMM_WORLD);

  tally_options opts;
  tally_options_init(&opts);
  opts.initial_owner = size - 1;
  tally_mutex m = NULL;
  check(tally_mutex_create(MPI_COMM_WORLD, &opts, &m), "tally_mutex_create");

  long overlaps = 0;
  for (int i = 0; i < ITERATIONS; ++i) {
    check(tally_mutex_lock(m), "tally_mutex_lock");
    if (rma_window_apply(win, 0, 1, rank, MPI_REPLACE) != -1) ++overlaps;
    const int64_t v = rma_window_apply(win, 0, 0, 0, MPI_NO_OP);
    sched_yield();
    rma_window_apply(win, 0, 0, v + 1, MPI_REPLACE);
    if (rma_window_apply(win, 0, 1, -1, MPI_REPLACE) != rank) ++overlaps;
    check(tally_mutex_unlock(m), "tally_mutex_unlock");
  }

  /* Keep answering REQUESTs until every rank is done. */
  MPI_Request req;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (unsigned spin = 0; !done; ++spin) {
    check(tally_mutex_poll(m), "tally_mutex_poll");
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (spin > 1024) sched_yield(); /* more ranks than cores */
  }
  tally_stats st;
  check(tally_mutex_get_stats(m, &st), "tally_mutex_get_stats");
  check(tally_mutex_free(&m), "tally_mutex_free");

  long all_overlaps = 0;
  MPI_Reduce(&overlaps, &all_overlaps, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Win_unlock_all(win);
  int ok = 1;
  if (rank == 0) {
    const int64_t expected = (int64_t)ITERATIONS * size;
    ok = base[0] == expected && all_overlaps == 0;
    printf("c_exclusion: %s: count %lld of %lld, %ld overlaps, %d ranks\n", ok ? "ok" : "FAILED", (long long)base[0],
           (long long)expected, all_overlaps, size);
  }
  if (st.acquisitions != ITERATIONS) ok = 0;
  rma_window_free(&w);
  MPI_Finalize();
  return ok ? 0 : 1;
}

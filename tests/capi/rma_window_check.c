/* The tests' RMA instrument (helpers/rma_window.h) on this MPI: the window it
 * chooses carries every rank's put, accumulate and fetch-and-op to every other rank.
 * Prints which kind of window it chose and "rma_window: ok" on rank 0; exits 1 on
 * any miss. Under Debian 12's MPICH 4.0.2 it chooses MPI_Win_create, because an
 * MPI_Win_allocate window fails the same check there. */
#include <mpi.h>
#include <stdio.h>

#include "helpers/rma_window.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, works = 0, allocate_works = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rma_window w;
  if (rma_window_allocate((MPI_Aint)(3 * size * (int)sizeof(int)), (int)sizeof(int), MPI_COMM_WORLD, &w) !=
          MPI_SUCCESS ||
      rma_window_reaches_targets(&w, MPI_COMM_WORLD, &works) != MPI_SUCCESS ||
      rma_window_probe(MPI_COMM_WORLD, &allocate_works) != MPI_SUCCESS)
    MPI_Abort(MPI_COMM_WORLD, 2);
  if (rank == 0)
    printf("rma_window: %s at %d ranks (MPI_Win_allocate's RMA %s)\n",
           w.created ? "MPI_Win_create over MPI_Alloc_mem" : "MPI_Win_allocate", size,
           allocate_works ? "reaches its targets" : "misses its targets");
  rma_window_free(&w);
  if (rank == 0 && works) printf("rma_window: ok\n");
  MPI_Finalize();
  return works ? 0 : 1;
}

/* helpers/rma_window.h — an RMA window whose one-sided operations reach their
 * target, for the tests' instruments and the benchmark's RMA baselines (C and C++).
 *
 * Contract: rma_window_allocate() is collective over comm and gives each rank
 * `bytes` of window memory (w->base) with displacement unit disp_unit, in the
 * unified memory model where the MPI offers it. It uses MPI_Win_allocate unless
 * rma_window_probe() finds that such a window's MPI_Put, MPI_Accumulate or
 * MPI_Fetch_and_op misses its target on some rank; then it uses MPI_Win_create over
 * MPI_Alloc_mem memory (w->created = 1). Debian 12's MPICH 4.0.2 (ch4:ucx) is such
 * a case: between ranks of one node those operations change another rank's memory,
 * often the origin's own (upstream: pmodels/mpich#6110; docs/benchmarks.md "Two
 * MPIs"). Both return MPI_SUCCESS or the code of the first call that failed.
 * rma_window_free() is collective and frees what rma_window_allocate() made.
 * rma_window_apply() is the instruments' one-sided read, write and swap.
 */
#ifndef TALLY_HELPERS_RMA_WINDOW_H
#define TALLY_HELPERS_RMA_WINDOW_H

#include <mpi.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rma_window {
  MPI_Win win;
  void* base;
  int created; /* 1: MPI_Win_create over MPI_Alloc_mem memory; 0: MPI_Win_allocate */
} rma_window;

/* Collective; w->base holds at least 3 * size(comm) ints (displacement unit
 * sizeof(int)), which it overwrites. *works = 1 iff every rank's put, accumulate and
 * fetch-and-op into every other rank arrived there. */
static inline int rma_window_reaches_targets(const rma_window* w, MPI_Comm comm, int* works) {
  int me = 0, n = 1, ok = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  int* slot = (int*)w->base; /* three slots per origin rank: put, accumulate, fetch-and-op */
  for (int i = 0; i < 3 * n; ++i) slot[i] = -1;
  MPI_Win_lock_all(0, w->win);
  MPI_Win_sync(w->win);
  MPI_Barrier(comm);
  for (int t = 0; t < n; ++t) {
    if (t == me) continue;
    int fetched = 0;
    MPI_Put(&me, 1, MPI_INT, t, (MPI_Aint)me, 1, MPI_INT, w->win);
    MPI_Accumulate(&me, 1, MPI_INT, t, (MPI_Aint)(n + me), 1, MPI_INT, MPI_REPLACE, w->win);
    MPI_Fetch_and_op(&me, &fetched, MPI_INT, t, (MPI_Aint)(2 * n + me), MPI_REPLACE, w->win);
    MPI_Win_flush(t, w->win);
  }
  MPI_Barrier(comm);
  MPI_Win_sync(w->win);
  for (int k = 0; k < 3; ++k)
    for (int s = 0; s < n; ++s)
      if (s != me && slot[k * n + s] != s) ok = 0;
  MPI_Win_unlock_all(w->win);
  *works = 0;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  *works = ok;
  return rc;
}

/* Collective. *works = 1 iff an MPI_Win_allocate window passes
 * rma_window_reaches_targets(). */
static inline int rma_window_probe(MPI_Comm comm, int* works) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  rma_window w = {MPI_WIN_NULL, NULL, 0};
  *works = 0;
  int rc =
      MPI_Win_allocate((MPI_Aint)(3 * n * (int)sizeof(int)), (int)sizeof(int), MPI_INFO_NULL, comm, &w.base, &w.win);
  if (rc != MPI_SUCCESS) return rc;
  rc = rma_window_reaches_targets(&w, comm, works);
  MPI_Win_free(&w.win);
  return rc;
}

static inline int rma_window_allocate(MPI_Aint bytes, int disp_unit, MPI_Comm comm, rma_window* w) {
  int works = 0;
  w->win = MPI_WIN_NULL;
  w->base = NULL;
  w->created = 0;
  int rc = rma_window_probe(comm, &works);
  if (rc != MPI_SUCCESS) return rc;
  if (works) return MPI_Win_allocate(bytes, disp_unit, MPI_INFO_NULL, comm, &w->base, &w->win);
  w->created = 1;
  rc = MPI_Alloc_mem(bytes > 0 ? bytes : 1, MPI_INFO_NULL, &w->base);
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Win_create(w->base, bytes, disp_unit, MPI_INFO_NULL, comm, &w->win);
}

static inline int rma_window_free(rma_window* w) {
  int rc = MPI_Win_free(&w->win);
  if (w->created && w->base != NULL) MPI_Free_mem(w->base);
  w->base = NULL;
  return rc;
}

/* Applies op (MPI_REPLACE, MPI_SUM, ...; MPI_NO_OP reads) with `operand` to the int64
 * at displacement disp of target's window (inside an MPI_Win_lock_all epoch) and
 * returns the word's old value, once the operation has been applied there: it is a
 * request-based MPI_Rget_accumulate (a read: MPI_Rget, cheaper than an accumulate
 * in some MPIs' RMA over TCP), whose result can only come back from the target.
 * Reads are not atomic against a concurrent update; the instruments only need them
 * to be exact when the lock works. The wait polls with MPI_Test and yields the core: MPICH serves an
 * MPI_Win_create window by active messages, and a blocking MPI_Win_flush busy-polls,
 * so with more ranks than cores a flushing rank would keep the target off the core
 * for a whole time slice per operation. */
static inline int64_t rma_window_apply(MPI_Win win, int target, MPI_Aint disp, int64_t operand, MPI_Op op) {
  int64_t old = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  if (op == MPI_NO_OP) /* a plain get costs less than an accumulate in some MPIs' RMA over TCP */
    MPI_Rget(&old, 1, MPI_INT64_T, target, disp, 1, MPI_INT64_T, win, &req);
  else
    MPI_Rget_accumulate(&operand, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, target, disp, 1, MPI_INT64_T, op, win, &req);
  int done = 0;
  for (unsigned spin = 0; !done; ++spin) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done && spin > 64) sched_yield();
  }
  return old;
}

#endif

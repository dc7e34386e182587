#include "baselines/rma_mcs.hpp"

namespace bench {

rma_mcs::rma_mcs(MPI_Comm comm) : comm_(comm) {
  check(rma_window_allocate(3 * sizeof(int), sizeof(int), comm_.get(), &w_), "MPI_Win_allocate(rma_mcs)");
  win_ = w_.win;
  base_ = static_cast<int*>(w_.base);
  check(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  int* model = nullptr;
  int flag = 0;
  check(MPI_Win_get_attr(win_, MPI_WIN_MODEL, &model, &flag), "MPI_Win_get_attr(MPI_WIN_MODEL)");
  const bool unified = flag && *model == MPI_WIN_UNIFIED;
  base_[next] = nil;
  base_[blocked] = 0;
  base_[tail] = nil;
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all(rma_mcs)");
  check(MPI_Win_sync(win_), "MPI_Win_sync");
  check(MPI_Barrier(comm_.get()), "MPI_Barrier(rma_mcs)");
  if (!unified) {
    MPI_Win_unlock_all(win_);
    rma_window_free(&w_);
    throw mpi_failure("rma_mcs needs an MPI_WIN_UNIFIED window (local spinning on window memory)");
  }
}

rma_mcs::~rma_mcs() {
  check_or_abort(MPI_Win_unlock_all(win_), "MPI_Win_unlock_all(rma_mcs)");
  check_or_abort(rma_window_free(&w_), "MPI_Win_free(rma_mcs)");
}

int rma_mcs::load(slot s) const noexcept { return __atomic_load_n(&base_[s], __ATOMIC_ACQUIRE); }

int rma_mcs::fetch(slot s) {
  int v = nil;
  check(MPI_Fetch_and_op(nullptr, &v, MPI_INT, comm_.rank(), s, MPI_NO_OP, win_), "MPI_Fetch_and_op(own)");
  check(MPI_Win_flush(comm_.rank(), win_), "MPI_Win_flush(own)");
  return v;
}

void rma_mcs::store(slot s, int v) noexcept { __atomic_store_n(&base_[s], v, __ATOMIC_RELEASE); }

int rma_mcs::wait_while(slot s, int v) {
  for (;;) {
    check(MPI_Win_sync(win_), "MPI_Win_sync");
    const int now = s == next ? fetch(s) : load(s);
    if (now != v) return now;
    kick_progress(comm_.get());
  }
}

void rma_mcs::lock() {
  const int me = comm_.rank();
  store(next, nil);
  store(blocked, 1);
  check(MPI_Win_sync(win_), "MPI_Win_sync");
  int pred = nil;
  check(MPI_Fetch_and_op(&me, &pred, MPI_INT, home, tail, MPI_REPLACE, win_), "MPI_Fetch_and_op(tail)");
  check(MPI_Win_flush(home, win_), "MPI_Win_flush(tail)");
  if (pred == nil) return;
  check(MPI_Accumulate(&me, 1, MPI_INT, pred, next, 1, MPI_INT, MPI_REPLACE, win_), "MPI_Accumulate(pred.next)");
  check(MPI_Win_flush(pred, win_), "MPI_Win_flush(pred)");
  wait_while(blocked, 1);
}

void rma_mcs::unlock() {
  const int me = comm_.rank();
  int succ = fetch(next);
  if (succ == nil) {
    const int none = nil;
    int cur = nil;
    check(MPI_Compare_and_swap(&none, &me, &cur, MPI_INT, home, tail, win_), "MPI_Compare_and_swap(tail)");
    check(MPI_Win_flush(home, win_), "MPI_Win_flush(tail)");
    if (cur == me) return;         // nobody queued behind us
    succ = wait_while(next, nil);  // a successor swapped the tail; wait for its link
  }
  const int zero = 0;
  check(MPI_Accumulate(&zero, 1, MPI_INT, succ, blocked, 1, MPI_INT, MPI_REPLACE, win_),
        "MPI_Accumulate(succ.blocked)");
  check(MPI_Win_flush(succ, win_), "MPI_Win_flush(succ)");
}

}  // namespace bench

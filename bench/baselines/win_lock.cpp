#include "baselines/win_lock.hpp"

namespace bench {

win_lock::win_lock(MPI_Comm comm) : comm_(comm) {
  const MPI_Aint bytes = comm_.rank() == home ? sizeof(std::int64_t) : 0;
  check(rma_window_allocate(bytes, sizeof(std::int64_t), comm_.get(), &w_), "MPI_Win_allocate(win_lock)");
  win_ = w_.win;
  base_ = static_cast<std::int64_t*>(w_.base);
  check(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  if (comm_.rank() == home) *base_ = 0;
  check(MPI_Barrier(comm_.get()), "MPI_Barrier(win_lock)");
}

win_lock::~win_lock() { check_or_abort(rma_window_free(&w_), "MPI_Win_free(win_lock)"); }

void win_lock::lock() {
  check(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, home, 0, win_), "MPI_Win_lock");
  check(MPI_Get(&probe_, 1, MPI_INT64_T, home, 0, 1, MPI_INT64_T, win_), "MPI_Get(win_lock)");
  check(MPI_Win_flush(home, win_), "MPI_Win_flush(win_lock)");
}

void win_lock::put_word(std::int64_t v) {
  put_ = v;
  check(MPI_Put(&put_, 1, MPI_INT64_T, home, 0, 1, MPI_INT64_T, win_), "MPI_Put(win_lock)");
}

void win_lock::unlock() { check(MPI_Win_unlock(home, win_), "MPI_Win_unlock"); }

}  // namespace bench

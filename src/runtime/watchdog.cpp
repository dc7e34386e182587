// runtime/watchdog.cpp — the wait warning: one diagnostic when an acquisition has
// waited longer than options::wait_warning, naming the mutex, the rank, the wait
// and the likely cause and fix (docs/design.md, "Progress"). It never aborts.
#include <cstdio>

#include "runtime/engine.hpp"

namespace tally::detail {

void engine::warn_wait(const char* call, clock::duration waited) const noexcept {
  const double secs = std::chrono::duration<double>(waited).count();
  const double limit = std::chrono::duration<double>(wait_warning_).count();
  const char* cause = opts_.progress == progress_mode::in_calls
                          ? "Progress runs inside tally calls here (MPI was not initialized with "
                            "MPI_THREAD_MULTIPLE, or progress_mode::in_calls was chosen), so the rank that "
                            "holds the token idle answers only when it calls tally. It is probably blocked "
                            "in another MPI call (a barrier or other collective, MPI_Recv, MPI_Wait, file "
                            "I/O) or computing without calling tally. Fix: initialize MPI with "
                            "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) so that a progress thread "
                            "answers (the default then), or call poll() (tally_mutex_poll) on every rank "
                            "while it computes, and finish every use of the mutex before entering a "
                            "blocking MPI call."
                          : "A progress thread answers for every rank, so the token is in use: a rank "
                            "holds the critical section this long, or waits itself for something only "
                            "this rank can give (an order of locks that deadlocks), or the process that "
                            "holds the token stopped running.";
  warn(
      "rank %d has waited %.1f s in %s on %s (a communicator of %d ranks) "
      "and still does not hold it. %s (This warning appears once per wait longer "
      "than %.1f s; TALLY_WAIT_WARNING=seconds changes the limit, 0 turns it off.)\n",
      rank_, secs, call, opts_.name.c_str(), size_, cause, limit);
}

}  // namespace tally::detail

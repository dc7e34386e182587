// runtime/progress_thread.hpp — progress_mode::thread: one background thread per
// process, whatever the number of mutexes (docs/design.md, "Progress").
//
// Contract. Each engine in thread mode, and each channel such an engine uses,
// holds a progress_thread: a membership of the process's one progress thread, which
// runs while any membership is started and is joined when the last one stops.
// start() registers `step`, which reports what it found: busy (it handled
// messages), watching (nothing arrived, but only this thread can answer for the
// rank now: for an engine a withdrawn or asynchronous request, a send in flight;
// for a channel an idle token of one of its mutexes) or idle (nothing to do). A member is
// watched, or not, by its poll_policy:
//   spin      always watched; no wait before its next step
//   sleep     always watched; `interval` before its next step
//   backoff   always watched; 1 us doubling up to `interval`, reset by a busy step
//   adaptive  as backoff while busy or watching; once idle, unwatched until nudge()
// Each round, the thread steps every watched member and the next `drain_slice`
// unwatched ones in turn (so that REQUESTs to idle mutexes do not pile up in
// MPI's queue), then waits for the least wait its watched members ask for, and
// after a round of more than drain_slice steps at least long_round_factor times
// the round's duration (so that with thousands of tokens idle here the thread
// takes at most a quarter of a core, and answers within about 4 rounds). With
// none watched it parks for the least `idle_drain` of the adaptive members, or
// until a nudge. A round costs the watched members plus drain_slice steps: a
// mutex that nobody uses costs the thread nothing but its turn in the drain.
// nudge() is one atomic load when the member is already watched. stop() returns
// once the thread is not stepping this member and never will again; it is
// idempotent and runs from the destructor too. `step` must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>

#include "tally/options.hpp"

namespace tally::detail {

class progress_thread {
 public:
  enum class found {
    busy,
    watching,
    idle
  };
  // Unwatched members stepped per round.
  static constexpr std::size_t drain_slice = 16;
  static constexpr int long_round_factor = 3;

  progress_thread() = default;
  progress_thread(const progress_thread&) = delete;
  progress_thread& operator=(const progress_thread&) = delete;
  ~progress_thread() { stop(); }

  void start(poll_policy policy, std::function<found()> step);
  void stop() noexcept;
  // The member needs the thread now (an idle token, a send in flight): watched
  // from the next round on, and a parked thread wakes.
  void nudge() noexcept;

 private:
  friend class progress_service;
  // Guarded by the service's mutex, but for watched_ (read without it).
  poll_policy policy_{};
  std::function<found()> step_;
  std::size_t index_ = 0;  // its place among the members
  std::atomic<bool> watched_{false};
  std::chrono::microseconds backoff_{1};
  std::chrono::microseconds next_wait_{0};
};

}  // namespace tally::detail

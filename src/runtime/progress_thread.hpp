// runtime/progress_thread.hpp — the background thread of progress_mode::thread.
//
// Contract: start() runs `step` in a loop on a new thread. `step` reports what it
// found: busy (it handled messages), watching (nothing arrived, but only this
// thread can answer for the rank now: the token idle here, a withdrawn or
// asynchronous request, a send in flight) or idle (nothing to do). Between steps
// the thread waits as the poll_policy says:
//   spin      not at all
//   sleep     `interval`
//   backoff   1 us doubling up to `interval`, reset by a busy step
//   adaptive  as backoff while busy or watching; when idle it parks for
//             `idle_drain` (REQUESTs then wait in MPI's queue) unless nudge() wakes it
// nudge() is cheap when the thread is not parked (one atomic load). stop() wakes
// the thread at once, even from a long wait, and joins it; it is idempotent and
// runs from the destructor too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "tally/options.hpp"

namespace tally::detail {

class progress_thread {
 public:
  enum class found { busy, watching, idle };

  progress_thread() = default;
  progress_thread(const progress_thread&) = delete;
  progress_thread& operator=(const progress_thread&) = delete;
  ~progress_thread() { stop(); }

  void start(poll_policy policy, std::function<found()> step);
  void stop() noexcept;
  // Ends a park early: call when the rank starts to need the thread.
  void nudge() noexcept;
  bool running() const noexcept { return thread_.joinable(); }

 private:
  void main(poll_policy policy, const std::function<found()>& step);
  // Waits up to d, or until stop() (or nudge(), when `parking`); returns false once
  // stop() was called.
  bool wait(std::chrono::microseconds d, bool parking);

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stop_{false};    // written under mu_, so that wait() cannot miss it
  // nudge() stores nudged_ then reads parked_; a parking thread stores parked_ then
  // reads nudged_ (both sequentially consistent): one of them sees the other.
  std::atomic<bool> parked_{false};
  std::atomic<bool> nudged_{false};
  std::thread thread_;
};

}  // namespace tally::detail
